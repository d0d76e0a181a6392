"""Every ```python block of the docs site (docs/**/*.md) runs as written, against the real local llama-server.

Each page is its own Python session (see tests/docs/snippets.py): its blocks run in order in one
namespace, a block may use what an earlier block of the same page defined, and nothing from
another page. The environment is the reader's, with the hosted APIs on a local llama-server with
SmolLM2 with the embedded server's defaults (bounded, greedy answers; `OPENAI_BASE_URL`,
`ANTHROPIC_BASE_URL` and dummy keys), the current directory a fresh
temporary one holding `people.jsonl` and `docs.jsonl`. One test per block, in page order; selected
alone, a block's test runs the blocks of its page before it first. A `# prints: TEXT` comment is
checked: TEXT was printed.

What a reader sets up outside Python before a block, the tests set up too:
- a block that talks to `so-middleware gateway` (docs/how-to/gateway.md) finds one at
  http://127.0.0.1:8000/v1 with the key `SECRET`, as the shell block before it starts (in front
  of the local llama-server);
- the "Long-running runs" block (docs/how-to/background-runs.md), whose `AsyncOpenAI()` needs a
  Responses server with background runs (llama-server has none), finds a gateway over the local
  model at `OPENAI_BASE_URL`, for that block only.

Every block runs unless NOT_RUNNABLE lists it (by a line of its code) with the reason; every fence
is tagged `python`, `sh`, `text`, `toml` or `json`, so no Python block escapes the extraction; every
page is in the site's nav.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from snippets import (
    ROOT,
    TEST_TIMEOUT,
    Block,
    Session,
    markdown_blocks,
    printed_as_shown,
    python_blocks,
    reader_environment,
    reason_not_runnable,
    start_gateway,
)

from so_middleware.local import LocalModelServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")  # Ray's own deprecations, third-party noise

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
LANGUAGES = ("python", "sh", "text", "toml", "json")

# A line of a block's code -> why that block cannot run here.
NOT_RUNNABLE: dict[str, str] = {}

BLOCKS = [block for page in PAGES for block in python_blocks(page)]


class DocsSessions:
    """One session per page, made when the page's first block runs."""

    def __init__(self, server: LocalModelServer) -> None:
        self.server = server
        self.sessions: dict[Path, Session] = {}

    def of(self, page: Path) -> Session:
        if page not in self.sessions:
            session = Session(page, self.server, not_runnable=NOT_RUNNABLE)
            # what a block needs that a reader sets up outside Python: a line of its code -> the set-up
            session.prepare['client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="SECRET")'] = lambda: (
                start_gateway(session)
            )
            session.prepare['client = with_structured_output(OpenAIResponsesClient(AsyncOpenAI(), "gpt-4o"))'] = (
                lambda: background_backend(session)
            )
            session.prepare[
                'sdk = boto3.client("bedrock-runtime", config=Config(retries={"total_max_attempts": 1}))'
            ] = lambda: bedrock_stand_in(session)
            self.sessions[page] = session
        return self.sessions[page]

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()


def background_backend(session: Session) -> None:
    """A Responses server with background runs for the block about to run: a gateway over the
    local model at `OPENAI_BASE_URL` while the block runs (its SDK client keeps the address), stopped
    when the session closes."""
    from so_middleware.gateway import GatewayConfig, create_app
    from so_middleware.gateway._server import AppServer

    server = AppServer(create_app(GatewayConfig(backend_url=session.local_server.base_url))).start()
    session.cleanups.append(server.stop)
    previous = os.environ["OPENAI_BASE_URL"]
    os.environ["OPENAI_BASE_URL"] = server.base_url
    session.after_block.append(lambda: os.environ.__setitem__("OPENAI_BASE_URL", previous))


def bedrock_stand_in(session: Session) -> None:
    """Amazon Bedrock for the block about to run (docs/integrations/bedrock.md): the Converse stand-in of
    tests/providers/bedrock, which boto3 finds by `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`, with a region
    and dummy credentials in the environment, as a reader's AWS set-up gives them."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "providers" / "bedrock"))
    from bedrock_server import Answer, BedrockServer, text_answer

    from so_middleware.gateway._server import AppServer

    stand_in = BedrockServer()
    stand_in.script(Answer(text_answer('{"name": "Oslo", "population": 709000}')))
    server = AppServer(stand_in.app()).start()
    session.cleanups.append(server.stop)
    aws = {
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": server.root_url,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "docs-dummy",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    previous = {name: os.environ.get(name) for name in aws}
    os.environ.update(aws)
    session.after_block.append(
        lambda: [
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
            for name, value in previous.items()
        ]
    )


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocsSessions]:
    directory = tmp_path_factory.mktemp("docs")
    with LocalModelServer() as server, reader_environment(directory, server):  # the defaults a reader gets
        sessions = DocsSessions(server)
        try:
            yield sessions
        finally:
            sessions.close()


@pytest.mark.local_server
@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_block_runs_as_written(docs: DocsSessions, block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    """The block runs through, after the blocks of its page before it; what a `# prints: ...`
    comment in it shows is printed."""
    reason = reason_not_runnable(block, NOT_RUNNABLE)
    if reason is not None:
        pytest.skip(f"{block} is not runnable: {reason}")
    docs.of(block.page).run_through(block)
    printed_as_shown(block, capsys.readouterr().out)


def test_every_code_fence_is_tagged() -> None:
    untagged = [
        f"{block}: {block.language!r}"
        for page in PAGES
        for block in markdown_blocks(page)
        if block.language not in LANGUAGES
    ]
    assert not untagged, f"tag each docs code block one of {LANGUAGES} (python blocks run here): " + ", ".join(untagged)
    assert len(BLOCKS) >= 20


def test_not_runnable_entries_name_a_block() -> None:
    stale = [line for line in NOT_RUNNABLE if not any(line in block.code.splitlines() for block in BLOCKS)]
    assert not stale, f"NOT_RUNNABLE names lines no docs block has: {stale}"


def nav_pages(entries: list[object]) -> Iterator[str]:
    for entry in entries:
        if isinstance(entry, str):
            yield entry
        elif isinstance(entry, dict):
            for value in entry.values():
                yield from nav_pages(value) if isinstance(value, list) else [value]


def generated_pages() -> set[str]:
    """The pages docs/_ext/benchmarks.py (a hook in mkdocs.yml) adds from outside docs/."""
    spec = importlib.util.spec_from_file_location("docs_benchmarks", DOCS / "_ext" / "benchmarks.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return {uri for uri in hook.GENERATED if uri.endswith(".md")}


def test_every_page_is_in_the_nav() -> None:
    """`mkdocs build --strict` fails on a page left out too (`validation.nav.omitted_files: warn`)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = set(nav_pages(config["nav"]))
    pages = {page.relative_to(DOCS).as_posix() for page in PAGES} | generated_pages()
    assert pages - listed == set(), "add these pages to mkdocs.yml's nav"
    assert listed - pages == set(), "the nav lists pages docs/ does not have"
    assert config["validation"]["nav"]["omitted_files"] == "warn"


def test_the_reference_fences_each_docstring_example_as_python() -> None:
    """docs/_ext/examples.py (a griffe extension in mkdocs.yml): the indented block under a
    docstring's `Example:` is code, so `x["key"]` in it is not read as a Markdown link."""
    spec = importlib.util.spec_from_file_location("docs_examples", DOCS / "_ext" / "examples.py")
    assert spec is not None and spec.loader is not None
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    docstring = 'Says hello.\n\nExample:\n    reply["text"]\n\n    more()\n\nAfter.'
    assert examples.fence_examples(docstring) == (
        'Says hello.\n\nExample:\n    ```python\n    reply["text"]\n\n    more()\n    ```\n\nAfter.'
    )
    fenced = "Example:\n    ```python\n    x\n    ```"
    assert examples.fence_examples(fenced) == fenced
    assert examples.fence_examples("Example: `inline()`.") == "Example: `inline()`."
