"""Helpers shared by test_adapter_hangs.py and the cases of it that run through the layers
(test_adapter_hangs_through_the_layers.py)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import anyio
import openai
import pytest

from so_middleware.anthropic import AnthropicChatClient
from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient
from so_middleware.testing._faults import Fault, FaultServer

BOUND = 8.0  # seconds: every ending below must come well within it (the stalls hold for 15)


HOLD = 15.0


CHAT_FIRST = [
    {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": None}]},
]  # fmt: skip


RESPONSES_FIRST = [
    ("response.created", {"type": "response.created", "sequence_number": 0,
                          "response": {"id": "r", "object": "response", "created_at": 0, "model": "m",
                                       "status": "in_progress", "output": []}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "i", "output_index": 0,
                                    "content_index": 0, "delta": "Hel", "logprobs": [], "sequence_number": 1}),
]  # fmt: skip


MESSAGES_FIRST = [
    ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                       "model": "m", "content": [], "stop_reason": None, "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
]  # fmt: skip


FIRST = {"chat": CHAT_FIRST, "responses": RESPONSES_FIRST, "messages": MESSAGES_FIRST}


ADAPTERS = pytest.mark.parametrize("adapter", ["chat", "responses", "messages"])


SYNC_OR_ASYNC = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])


def one_fault_servers() -> Iterator[Callable[[Fault], FaultServer]]:
    """The body of a `serve` fixture: `serve(fault)` starts a server with that one fault; each is
    stopped after the test."""
    servers: list[FaultServer] = []

    def start(fault: Fault) -> FaultServer:
        servers.append(FaultServer([fault]).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def adapter_for(
    kind: str, server: FaultServer, *, is_async: bool = False, sdk_options: dict[str, Any] | None = None, **options: Any
) -> Any:
    """An adapter over a real SDK client on the fault server (SDK retries off: one request each;
    no discovery probes: the fault server answers the chat routes only); `sdk_options` go to the
    SDK client's constructor."""
    options.setdefault("discover", False)
    made = {"api_key": "test", "max_retries": 0, **(sdk_options or {})}
    if kind == "messages":
        sdk: Any = (anthropic.AsyncAnthropic if is_async else anthropic.Anthropic)(
            base_url=server.base_url.removesuffix("/v1"), **made
        )
        return AnthropicChatClient(sdk, "m", **options)
    sdk = (openai.AsyncOpenAI if is_async else openai.OpenAI)(base_url=server.base_url, **made)
    return (OpenAIChatClient if kind == "chat" else OpenAIResponsesClient)(sdk, "m", **options)


def blocked_readers() -> int:
    """Threads blocked in a socket read of the HTTP client (httpcore2's sync backend)."""
    count = 0
    for frame in sys._current_frames().values():
        current: Any = frame
        while current is not None:
            code = current.f_code
            if "httpcore2" in code.co_filename and code.co_name == "read":
                count += 1
                break
            current = current.f_back
    return count


async def settled(server: FaultServer, *, within: float = BOUND) -> bool:
    """True once the server has no open connection and no thread is blocked reading one."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        if server.open_connections == 0 and blocked_readers() == 0:
            return True
        await anyio.sleep(0.05)
    return False
