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

Every block runs unless NOT_RUNNABLE lists it (by a line of its code) with the reason, so a new
block fails here until it runs or is listed; every fence is tagged `python` or `sh`, so no
Python block escapes the extraction.
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import contextlib
import gc
import inspect
import json
import logging
import os
import re
import socket
import weakref
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from so_middleware import run_sync
from so_middleware.local import LocalModelServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")  # Ray's own deprecations, third-party noise

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK_TIMEOUT = 600  # seconds for one block's own code: a few model calls on a loaded 2-core machine
TEST_TIMEOUT = 1800  # a block's test may first run the blocks before it
GATEWAY_PORT = 8000  # the port the README's gateway block names

# A line of a block's code -> why that block cannot run here. Empty: every block runs.
NOT_RUNNABLE: dict[str, str] = {}

PEOPLE = [
    {"id": "ada", "text": "Ada Lovelace was 36."},
    {"id": "alan", "text": "Alan Turing was 41."},
]


@dataclass(frozen=True)
class Block:
    """One fenced code block: the line of its opening fence, its language and its code."""

    line: int
    language: str
    code: str

    def __str__(self) -> str:
        return f"README.md:{self.line}"


def readme_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, in order."""
    blocks: list[Block] = []
    opened: tuple[int, str] | None = None
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("```"):
            if opened is not None:
                body.append(line)
            continue
        if opened is None:
            opened, body = (number, line[3:].strip()), []
        else:
            blocks.append(Block(opened[0], opened[1], "\n".join(body) + "\n"))
            opened = None
    assert opened is None, f"README.md:{opened[0]}: a code fence is never closed"
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))
PYTHON = [block for block in BLOCKS if block.language == "python"]


def reason_not_runnable(block: Block) -> str | None:
    reasons = [why for line, why in NOT_RUNNABLE.items() if line in block.code.splitlines()]
    return reasons[0] if reasons else None


async def bounded(coroutine: Coroutine[Any, Any, Any], block: Block) -> None:
    """Await a block's code for BLOCK_TIMEOUT seconds at most; on timeout, say where every task waits."""
    task = asyncio.ensure_future(coroutine)
    await asyncio.wait({task}, timeout=BLOCK_TIMEOUT)
    if task.done():
        return task.result()
    stacks = "\n".join(awaiting(waiting) for waiting in asyncio.all_tasks())
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    raise TimeoutError(f"{block} still ran after {BLOCK_TIMEOUT} s; the tasks waited at:\n{stacks}")


def awaiting(task: asyncio.Task[Any]) -> str:
    """Where a task waits: each coroutine it awaits, outermost first."""
    lines, coroutine = [f"{task.get_name()}:"], task.get_coro()
    while coroutine is not None:
        frame = getattr(coroutine, "cr_frame", None) or getattr(coroutine, "gi_frame", None)
        if frame is not None:
            lines.append(f"  {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        coroutine = getattr(coroutine, "cr_await", None) or getattr(coroutine, "gi_yieldfrom", None)
    return "\n".join(lines)


def sdk_clients() -> list[Any]:
    kinds = (openai.OpenAI, openai.AsyncOpenAI, anthropic.Anthropic, anthropic.AsyncAnthropic)
    return [item for item in gc.get_objects() if isinstance(item, kinds)]


class ReadmeSession:
    """The namespace the blocks share, the blocks run so far and what some blocks need first."""

    def __init__(self, local_server: LocalModelServer) -> None:
        self.local_server = local_server
        self.namespace: dict[str, Any] = {"__name__": "readme", "__builtins__": builtins}
        self.outcomes: dict[int, BaseException | None] = {}
        self.cleanups: list[Callable[[], None]] = []
        self.sdk_clients_before = weakref.WeakSet(sdk_clients())
        # What a block needs that a reader sets up outside Python: a line of its code -> the set-up.
        self.prepare: dict[str, Callable[[], None]] = {
            'client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key="SECRET")': self.start_gateway,
            'client = with_structured_output(OpenAIResponsesClient(AsyncOpenAI(), "gpt-4o"))': self.background_backend,
        }
        self.after_block: list[Callable[[], None]] = []  # undone once the block has run

    def run_through(self, block: Block) -> None:
        """Run every block before `block` not run yet (failing if one of them failed), then `block`."""
        for earlier in PYTHON[: PYTHON.index(block)]:
            if earlier.line not in self.outcomes and reason_not_runnable(earlier) is None:
                self.run(earlier)
            if self.outcomes.get(earlier.line) is not None:
                pytest.fail(f"{earlier} failed, and {block} runs after it: {self.outcomes[earlier.line]!r}")
        self.run(block)
        error = self.outcomes[block.line]
        if error is not None:
            raise error

    def run(self, block: Block) -> None:
        """Run one block in the shared namespace, recording its error (None when it ran through)."""
        for line, set_up in self.prepare.items():
            if line in block.code.splitlines():
                set_up()
        # Padded so that tracebacks name README.md and its line numbers.
        code = compile("\n" * block.line + block.code, str(README), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        try:
            if code.co_flags & inspect.CO_COROUTINE:
                run_sync(lambda: bounded(eval(code, self.namespace), block))
            else:
                exec(code, self.namespace)
        except Exception as error:
            self.outcomes[block.line] = error
        else:
            self.outcomes[block.line] = None
        finally:
            while self.after_block:
                self.after_block.pop()()

    def start_gateway(self) -> None:
        from so_middleware.gateway import GatewayConfig, create_app
        from so_middleware.gateway._server import AppServer

        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", GATEWAY_PORT)) == 0:
                pytest.skip(
                    f"port {GATEWAY_PORT}, which the README's gateway block names, is in use by another process"
                )
        config = GatewayConfig(backend_url=self.local_server.base_url, api_keys=("SECRET",))
        server = AppServer(create_app(config), port=GATEWAY_PORT).start()
        self.cleanups.append(server.stop)

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

    def close(self) -> None:
        for cleanup in reversed(self.cleanups):
            cleanup()
        for client in sdk_clients():  # the blocks' own: a reader's process would end instead
            if client not in self.sdk_clients_before:
                if isinstance(client, (openai.AsyncOpenAI, anthropic.AsyncAnthropic)):
                    run_sync(client.close)
                else:
                    client.close()
        import ray

        if ray.is_initialized():
            ray.shutdown()


@pytest.fixture(scope="module")
def readme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReadmeSession]:
    directory = tmp_path_factory.mktemp("readme")
    (directory / "people.jsonl").write_text("".join(json.dumps(item) + "\n" for item in PEOPLE))
    (directory / "docs.jsonl").write_text("".join(json.dumps(item) + "\n" for item in PEOPLE))
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    with pytest.MonkeyPatch.context() as patch, LocalModelServer(parallel=2, max_tokens=512) as server:
        session = ReadmeSession(server)
        patch.setenv("OPENAI_BASE_URL", server.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-readme-local")
        patch.setenv("ANTHROPIC_BASE_URL", server.root_url)
        patch.setenv("ANTHROPIC_API_KEY", "sk-ant-readme-local")
        patch.chdir(directory)
        try:
            yield session
        finally:
            session.close()
            root.handlers[:], root.level = handlers, level  # `logging.basicConfig` in a block


@pytest.mark.local_server
@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("block", PYTHON, ids=str)
def test_block_runs_as_written(readme: ReadmeSession, block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    """The block runs through; what a `# prints: ...` comment in it shows is printed."""
    reason = reason_not_runnable(block)
    if reason is not None:
        pytest.skip(f"{block} is not runnable: {reason}")
    readme.run_through(block)
    printed = capsys.readouterr().out
    for shown in re.findall(r"# prints: (.+)$", block.code, flags=re.MULTILINE):
        assert shown.strip() in printed


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
