"""Running the ```python blocks of a Markdown page as one Python session (README.md, docs/ pages).

A page reads as one Python session: its blocks run in order in one namespace, each after the ones
before it, like the cells of a notebook: a block may use what an earlier block of the same page
defined and nothing else. A block with a top-level `await` runs on the event loop of
so_middleware's blocking calls (so the async SDK clients one block makes serve the next, the
`*_sync` calls included); a block without one runs in the test thread, outside any event loop, as
in a script. A `# prints: TEXT` comment in a block is checked by the tests: TEXT was printed.

The environment is the one a reader has set up, with the hosted APIs replaced by the local model
(`reader_environment`): `OPENAI_BASE_URL` and `ANTHROPIC_BASE_URL` point at a llama-server with
SmolLM2, with dummy keys, so the SDK clients the blocks build (`AsyncOpenAI()`, `AsyncAnthropic()`,
`OpenAI()`) reach it (`genai.Client()` and `ollama.AsyncClient()` reach it through
`native_backends.py`); llama-server answers under any model name with its one model. The current
directory is a fresh temporary one holding the input files the blocks name (`people.jsonl`,
`docs.jsonl`).
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
import re
import socket
import sys
import weakref
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from native_backends import native_backends

from so_middleware import run_sync
from so_middleware.local import LocalModelServer

ROOT = Path(__file__).resolve().parent.parent.parent
BLOCK_TIMEOUT = 600  # seconds for one block's own code: a few model calls on a loaded 2-core machine
TEST_TIMEOUT = 1800  # a block's test may first run the blocks before it

PEOPLE = [
    {"id": "ada", "text": "Ada Lovelace was 36."},
    {"id": "alan", "text": "Alan Turing was 41."},
]


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, the line of its opening fence, its language and its code."""

    page: Path
    line: int
    language: str
    code: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def markdown_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, in order (an indented fence, as inside an
    admonition or a list, counts too)."""
    blocks: list[Block] = []
    opened: tuple[int, str, int] | None = None  # line, language, indent
    body: list[str] = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.lstrip(" ")
        if not stripped.startswith("```"):
            if opened is not None:
                indent = opened[2]
                body.append(line[indent:] if line[:indent] == " " * indent else line.lstrip(" "))
            continue
        if opened is None:
            opened, body = (number, stripped[3:].strip(), len(line) - len(stripped)), []
        else:
            blocks.append(Block(page, opened[0], opened[1], "\n".join(body) + "\n"))
            opened = None
    assert opened is None, f"{page}:{opened[0]}: a code fence is never closed"
    return blocks


def python_blocks(page: Path) -> list[Block]:
    return [block for block in markdown_blocks(page) if block.language == "python"]


def reason_not_runnable(block: Block, not_runnable: Mapping[str, str]) -> str | None:
    """Why a block cannot run here: the reason of the first `not_runnable` line it has, or None."""
    reasons = [why for line, why in not_runnable.items() if line in block.code.splitlines()]
    return reasons[0] if reasons else None


def printed_as_shown(block: Block, printed: str) -> None:
    """What each `# prints: TEXT` comment of the block shows was printed."""
    for shown in re.findall(r"# prints: (.+)$", block.code, flags=re.MULTILINE):
        assert shown.strip() in printed, f"{block}: {shown.strip()!r} was not printed; printed:\n{printed}"


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


class Session:
    """The namespace one page's blocks share, the blocks run so far and what some blocks need first.

    `prepare` maps a line of a block's code to the set-up a reader does outside Python before it;
    `not_runnable` maps a line of a block's code to why that block cannot run here; `module_name`
    is the blocks' `__name__`.
    """

    def __init__(
        self,
        page: Path,
        local_server: LocalModelServer,
        *,
        not_runnable: Mapping[str, str] | None = None,
        prepare: Mapping[str, Callable[[], None]] | None = None,
        module_name: str | None = None,
    ) -> None:
        self.page = page
        self.blocks = python_blocks(page)
        self.local_server = local_server
        self.not_runnable = dict(not_runnable or {})
        self.prepare = dict(prepare or {})
        # `__name__` of the blocks' module: never a real module's (a page `types.md` is not `types`)
        name = module_name or "docs_" + page.stem.replace("-", "_")
        self.namespace: dict[str, Any] = {"__name__": name, "__builtins__": builtins}
        self.outcomes: dict[int, BaseException | None] = {}
        self.cleanups: list[Callable[[], None]] = []
        self.after_block: list[Callable[[], None]] = []  # undone once the block has run

    def reason_not_runnable(self, block: Block) -> str | None:
        return reason_not_runnable(block, self.not_runnable)

    def run_through(self, block: Block) -> None:
        """Run every block before `block` not run yet (failing if one of them failed), then `block`."""
        for earlier in self.blocks[: self.blocks.index(block)]:
            if earlier.line not in self.outcomes and self.reason_not_runnable(earlier) is None:
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
        # Padded so that tracebacks name the page and its line numbers; dont_inherit: the blocks run
        # without this module's `from __future__ import annotations`, as a reader's code does.
        code = compile(
            "\n" * block.line + block.code,
            str(block.page),
            "exec",
            flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            dont_inherit=True,
        )
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

    def close(self) -> None:
        for cleanup in reversed(self.cleanups):
            cleanup()


GATEWAY_PORT = 8000  # the port the pages' gateway blocks name, as `so-middleware gateway` does


def start_gateway(session: Session, *, api_keys: tuple[str, ...] = ("SECRET",)) -> None:
    """What a block that talks to `so-middleware gateway` needs: one at http://127.0.0.1:8000/v1
    with the key `SECRET`, as the shell block before it starts (in front of the local model);
    stopped when the session closes."""
    from so_middleware.gateway import GatewayConfig, create_app
    from so_middleware.gateway._server import AppServer

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", GATEWAY_PORT)) == 0:
            pytest.skip(f"port {GATEWAY_PORT}, which the gateway block names, is in use by another process")
    config = GatewayConfig(backend_url=session.local_server.base_url, api_keys=api_keys)
    server = AppServer(create_app(config), port=GATEWAY_PORT).start()
    session.cleanups.append(server.stop)


def close_new_sdk_clients(before: weakref.WeakSet[Any]) -> None:
    """Close the SDK clients made since `before` was taken (the blocks' own: a reader's process
    would end instead), and Ray if a block started it."""
    for client in sdk_clients():
        if client not in before:
            if isinstance(client, (openai.AsyncOpenAI, anthropic.AsyncAnthropic)):
                run_sync(client.close)
            else:
                client.close()
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


@contextlib.contextmanager
def reader_environment(directory: Path, server: LocalModelServer) -> Iterator[None]:
    """A reader's set-up, with the hosted APIs on the local `server`: their SDK clients find it
    by the environment, the current directory is `directory` holding the input files the blocks
    name. On exit the SDK clients made meanwhile are closed and the root logger is restored."""
    (directory / "people.jsonl").write_text("".join(json.dumps(item) + "\n" for item in PEOPLE))
    (directory / "docs.jsonl").write_text("".join(json.dumps(item) + "\n" for item in PEOPLE))
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    before = weakref.WeakSet(sdk_clients())
    with pytest.MonkeyPatch.context() as patch, native_backends(server) as native:
        patch.setenv("OPENAI_BASE_URL", server.base_url)
        patch.setenv("OPENAI_API_KEY", "sk-readme-local")
        patch.setenv("ANTHROPIC_BASE_URL", server.root_url)
        patch.setenv("ANTHROPIC_API_KEY", "sk-ant-readme-local")
        patch.setenv("GOOGLE_GEMINI_BASE_URL", native)  # the Gemini API and Ollama's, in front of `server`
        patch.setenv("GEMINI_API_KEY", "readme-local")
        patch.delenv("GOOGLE_API_KEY", raising=False)  # the SDK would take it over GEMINI_API_KEY
        patch.setenv("OLLAMA_HOST", native)
        patch.setenv("MISTRAL_SERVER_URL", server.root_url)  # llama-server speaks Mistral's chat route too
        patch.setenv("MISTRAL_API_KEY", "readme-local")
        patch.chdir(directory)
        try:
            yield
        finally:
            close_new_sdk_clients(before)
            root.handlers[:], root.level = handlers, level  # `logging.basicConfig` in a block
