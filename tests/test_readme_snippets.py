"""Every ```python block of README.md runs as written, against the real local llama-server.

The rule for blocks that continue another: README.md reads as one Python session. Its blocks
run in order in one namespace, each after the ones before it, like the cells of a notebook: a
block may use what an earlier block defined (`Person` from the first block, `adapter` from
"Asking for a type") and nothing else. A block with a top-level `await` runs on the event loop
of so_middleware's blocking calls (so the async SDK clients one block makes serve the next, the
`*_sync` calls included); a block without one runs in the test thread, outside any event loop,
as in a script. One test per block, in README order; selected alone, a block's test runs the
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
  (`people.jsonl`, `docs.jsonl`);
- the "Long-running runs" block, whose `AsyncOpenAI()` needs a Responses server with background
  runs, finds a gateway over the local model at `OPENAI_BASE_URL` (for that block only);
- a block that talks to `so-middleware gateway` finds one at http://127.0.0.1:8000/v1 with the
  key `SECRET`, as the shell block before it starts (in front of the local llama-server).

The machinery (blocks, sessions, the reader's environment) is tests/snippets.py, which the docs
site's test (tests/test_docs_snippets.py) shares.

Every block runs unless NOT_RUNNABLE lists it (by a line of its code) with the reason, so a new
block fails here until it runs or is listed; every fence is tagged `python` or `sh`, so no
Python block escapes the extraction.
"""

from __future__ import annotations

import os
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
    start_gateway,
)

from so_middleware.local import LocalModelServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")  # Ray's own deprecations, third-party noise

README = ROOT / "README.md"

# A line of a block's code -> why that block cannot run here. Empty: every block runs.
NOT_RUNNABLE: dict[str, str] = {}

BLOCKS = markdown_blocks(README)
PYTHON = [block for block in BLOCKS if block.language == "python"]


class ReadmeSession(Session):
    """The README's session, with what two of its blocks need a reader to start first."""

    def __init__(self, local_server: LocalModelServer) -> None:
        super().__init__(
            README,
            local_server,
            not_runnable=NOT_RUNNABLE,
            module_name="readme",
            prepare={
                'client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="SECRET")': lambda: start_gateway(self),
                'client = with_structured_output(OpenAIResponsesClient(AsyncOpenAI(), "gpt-4o"))': (
                    self.background_backend
                ),
            },
        )

    def background_backend(self) -> None:
        """The long-running block needs a Responses server with background runs (llama-server has
        none): the block's `AsyncOpenAI()` finds a gateway over the local model instead, for that
        block only."""
        from so_middleware.gateway import GatewayConfig, create_app
        from so_middleware.gateway._server import AppServer

        server = AppServer(create_app(GatewayConfig(backend_url=self.local_server.base_url))).start()
        self.cleanups.append(server.stop)
        previous = os.environ["OPENAI_BASE_URL"]
        os.environ["OPENAI_BASE_URL"] = server.base_url
        self.after_block.append(lambda: os.environ.__setitem__("OPENAI_BASE_URL", previous))


@pytest.fixture(scope="module")
def readme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadmeSession]:
    directory = tmp_path_factory.mktemp("readme")
    with LocalModelServer(parallel=2, max_tokens=512) as server, reader_environment(directory, server):
        session = ReadmeSession(server)
        try:
            yield session
        finally:
            session.close()


@pytest.mark.local_server
@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("block", PYTHON, ids=str)
def test_block_runs_as_written(readme: ReadmeSession, block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    """The block runs through; what a `# prints: ...` comment in it shows is printed."""
    reason = reason_not_runnable(block, NOT_RUNNABLE)
    if reason is not None:
        pytest.skip(f"{block} is not runnable: {reason}")
    readme.run_through(block)
    printed_as_shown(block, capsys.readouterr().out)


def test_every_code_fence_is_tagged_python_or_sh() -> None:
    untagged = [f"{block}: {block.language!r}" for block in BLOCKS if block.language not in ("python", "sh")]
    assert not untagged, "tag each README code block `python` (it is run here) or `sh`: " + ", ".join(untagged)
    assert len(PYTHON) >= 10


def test_not_runnable_entries_name_a_block() -> None:
    stale = [line for line in NOT_RUNNABLE if not any(line in block.code.splitlines() for block in PYTHON)]
    assert not stale, f"NOT_RUNNABLE names lines no README block has: {stale}"


@pytest.mark.local_server
@pytest.mark.timeout(TEST_TIMEOUT)
def test_llama_server_answers_under_the_hosted_model_names(readme: ReadmeSession) -> None:
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
def test_the_blocks_server_decodes_greedily_with_an_output_limit(readme: ReadmeSession) -> None:
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
