"""Every ```python block of README.md runs as written, against the real local llama-server.

README.md is the landing page: its one example (the first block, which tests/test_install.py
also runs outside the clone) and links to the docs site, whose blocks tests/docs/test_docs_snippets.py
runs. Should more blocks come, README.md reads as one Python session: its blocks run in order in
one namespace, each after the ones before it, like the cells of a notebook: a block may use what
an earlier block defined and nothing else. A block with a top-level `await` runs on the event loop
of so_middleware's blocking calls; a block without one runs in the test thread, outside any event
loop, as in a script. One test per block, in README order; selected alone, a block's test runs the
blocks before it first. A `# prints: TEXT` comment in a block is checked: TEXT was printed.

The environment is the one a reader has set up, with the hosted APIs replaced by the local model:
- a llama-server with SmolLM2 of its own, with the embedded server's defaults for requests that
  set none (greedy decoding, a fixed seed) and at most 512 tokens an answer, so a block's answers
  are the same on every run and none runs on for minutes;
- `OPENAI_BASE_URL` and `ANTHROPIC_BASE_URL` point at that llama-server, with dummy keys,
  so the SDK clients the blocks build (`AsyncOpenAI()`, `AsyncAnthropic()`, `OpenAI()`) reach it
  and the adapters find its profile by discovery. llama-server answers under any model name with
  its one model, so `"gpt-4o-mini"` and `"claude-haiku-4-5"` need no mapping (checked below);
- the current directory is a fresh temporary one holding the input files the blocks name
  (`people.jsonl`, `docs.jsonl`).

The machinery (blocks, sessions, the reader's environment) is tests/docs/snippets.py, which the docs
site's test (tests/docs/test_docs_snippets.py) shares.

Every block runs unless NOT_RUNNABLE lists it (by a line of its code) with the reason, so a new
block fails here until it runs or is listed; every fence is tagged `python` or `sh`, so no
Python block escapes the extraction. Every relative link of the README names a file of the
repository, so the links to the docs pages work on GitHub.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import anthropic
import httpx2
import openai
import pytest
from snippets import (
    BLOCK_TIMEOUT,
    ROOT,
    TEST_TIMEOUT,
    Block,
    Session,
    markdown_blocks,
    printed_as_shown,
    reader_environment,
    reason_not_runnable,
)

from so_middleware.local import LocalModelServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")  # Ray's own deprecations, third-party noise

README = ROOT / "README.md"

# A line of a block's code -> why that block cannot run here. Empty: every block runs.
NOT_RUNNABLE: dict[str, str] = {}

BLOCKS = markdown_blocks(README)
PYTHON = [block for block in BLOCKS if block.language == "python"]


@pytest.fixture(scope="module")
def readme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    directory = tmp_path_factory.mktemp("readme")
    with LocalModelServer(parallel=2, max_tokens=512) as server, reader_environment(directory, server):
        session = Session(README, server, not_runnable=NOT_RUNNABLE, module_name="readme")
        try:
            yield session
        finally:
            session.close()


@pytest.mark.local_server
@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("block", PYTHON, ids=str)
def test_block_runs_as_written(readme: Session, block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    """The block runs through; what a `# prints: ...` comment in it shows is printed."""
    reason = reason_not_runnable(block, NOT_RUNNABLE)
    if reason is not None:
        pytest.skip(f"{block} is not runnable: {reason}")
    readme.run_through(block)
    printed_as_shown(block, capsys.readouterr().out)


def test_every_code_fence_is_tagged_python_or_sh() -> None:
    untagged = [f"{block}: {block.language!r}" for block in BLOCKS if block.language not in ("python", "sh")]
    assert not untagged, "tag each README code block `python` (it is run here) or `sh`: " + ", ".join(untagged)
    assert PYTHON, "the README's example is a `python` block"


def test_every_relative_link_names_a_file_of_the_repository() -> None:
    """The landing page's links to the docs pages (docs/*.md, read on GitHub as they are) stay whole."""
    targets = re.findall(r"\]\(([^)\s]+)\)", README.read_text(encoding="utf-8"))
    relative = [target.split("#", 1)[0] for target in targets if "://" not in target and not target.startswith("#")]
    missing = [target for target in relative if not (ROOT / target).is_file()]
    assert relative and not missing, f"README links to files the repository does not have: {missing}"


def test_not_runnable_entries_name_a_block() -> None:
    stale = [line for line in NOT_RUNNABLE if not any(line in block.code.splitlines() for block in PYTHON)]
    assert not stale, f"NOT_RUNNABLE names lines no README block has: {stale}"


@pytest.mark.local_server
@pytest.mark.timeout(TEST_TIMEOUT)
def test_llama_server_answers_under_the_hosted_model_names(readme: Session) -> None:
    """The blocks name hosted models; the local server answers each with its one model."""
    local_server = readme.local_server
    with openai.OpenAI(base_url=local_server.base_url, api_key="local", timeout=BLOCK_TIMEOUT) as sdk:
        for name in ("gpt-4o-mini", "gpt-4o", "smollm2"):
            reply = sdk.chat.completions.create(
                model=name, messages=[{"role": "user", "content": "Say hi."}], max_tokens=8
            )
            assert reply.choices[0].message.content is not None
    with anthropic.Anthropic(base_url=local_server.root_url, api_key="local", timeout=BLOCK_TIMEOUT) as sdk:
        message = sdk.messages.create(
            model="claude-haiku-4-5", messages=[{"role": "user", "content": "Say hi."}], max_tokens=8
        )
        assert message.content


@pytest.mark.local_server
@pytest.mark.timeout(TEST_TIMEOUT)
def test_the_blocks_server_decodes_greedily_with_an_output_limit(readme: Session) -> None:
    server = readme.local_server
    props = httpx2.get(server.root_url + "/props", timeout=BLOCK_TIMEOUT).json()
    assert props["default_generation_settings"]["params"]["temperature"] == 0
    numbers = {"type": "array", "items": {"type": "integer"}, "minItems": 1000}  # longer than the limit
    with openai.OpenAI(base_url=server.base_url, api_key="local", timeout=BLOCK_TIMEOUT) as sdk:
        reply = sdk.chat.completions.create(
            model="any",
            messages=[{"role": "user", "content": "Numbers, please."}],
            response_format={"type": "json_schema", "json_schema": {"name": "numbers", "schema": numbers}},
        )
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage is not None and reply.usage.completion_tokens == 512


def test_the_readme_links_every_guide_of_the_docs() -> None:
    """The README is the way in: each page of getting started, how-to and concepts is one link away."""
    text = README.read_text(encoding="utf-8")
    guides = [ROOT / "docs" / "getting-started.md", *sorted((ROOT / "docs").glob("[hc]*/*.md"))]
    unlinked = [
        page.relative_to(ROOT).as_posix() for page in guides if f"({page.relative_to(ROOT).as_posix()}" not in text
    ]
    assert not unlinked, f"link these docs pages from the README's Documentation section: {unlinked}"
