"""Every call ends: stalled servers, cancelled sync streams, idle timeouts and the retry deadline.

A loopback `FaultServer` stalls on purpose (before its headers, or after a first event) and holds
the connection until the client hangs up; `open_connections` shows when the client's socket is
gone, `blocked_readers()` whether a worker thread is still blocked reading one. The real
llama-server cannot stall; it shows that a sync stream cancelled mid-answer leaves nothing behind.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import anyio
import httpx2
import openai
import pytest
from adapter_stalls import (
    ADAPTERS,
    BOUND,
    FIRST,
    HOLD,
    SYNC_OR_ASYNC,
    adapter_for,
    blocked_readers,
    one_fault_servers,
    settled,
)

from so_middleware import StreamInterruptedError, UserError
from so_middleware.anthropic import AnthropicChatClient
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER_CHAT, OpenAIChatClient, OpenAIResponsesClient
from so_middleware.testing._faults import Fault, FaultServer, stall

pytestmark = pytest.mark.anyio


@pytest.fixture
def serve() -> Iterator[Callable[[Fault], FaultServer]]:
    yield from one_fault_servers()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ------------------------------------------------------------ cancelling a stalled sync stream


@ADAPTERS
async def test_cancelling_a_stalled_sync_stream_closes_the_connection_and_frees_the_thread(
    adapter: str, serve: Callable[[Fault], FaultServer]
) -> None:
    """Before: the cancel waited for the worker thread, blocked until the server hung up."""
    server = serve(stall(FIRST[adapter], hold=HOLD))
    client = adapter_for(adapter, server, idle_timeout=None)  # only the cancellation can end it
    stream = client.get_response("hi", stream=True)
    updates = aiter(stream)
    texts: list[str] = []
    while "".join(texts) != "Hel":
        texts.append((await anext(updates)).text)
    started = time.monotonic()
    with anyio.move_on_after(0.5):  # the server is silent now: cancel the wait for the next event
        await anext(updates)
    assert time.monotonic() - started < 2.0
    await stream.aclose()
    assert await settled(server)


# ------------------------------------------------------------ the idle timeout


@ADAPTERS
@SYNC_OR_ASYNC
@pytest.mark.parametrize("where", ["per-call", "adapter"])
async def test_a_stream_stalled_mid_way_ends_in_stream_interrupted_after_the_idle_timeout(
    adapter: str, is_async: bool, where: str, serve: Callable[[Fault], FaultServer]
) -> None:
    server = serve(stall(FIRST[adapter], hold=HOLD))
    # 2 s, not less: the first events must come within it even on a loaded machine
    per_call = {"idle_timeout": 2.0} if where == "per-call" else {}
    client = adapter_for(adapter, server, is_async=is_async, **({} if per_call else {"idle_timeout": 2.0}))
    started = time.monotonic()
    with pytest.raises(StreamInterruptedError, match=r"no event from the server for 2 s") as caught:
        await client.get_response("hi", options=per_call, stream=True).get_final_response()
    assert time.monotonic() - started < BOUND
    assert caught.value.partial_text == "Hel"
    assert await settled(server)


@ADAPTERS
@SYNC_OR_ASYNC
async def test_no_first_byte_within_the_idle_timeout_ends_in_stream_interrupted(
    adapter: str, is_async: bool, serve: Callable[[Fault], FaultServer]
) -> None:
    server = serve(stall(before_headers=True, hold=HOLD))
    client = adapter_for(adapter, server, is_async=is_async)
    started = time.monotonic()
    with pytest.raises(StreamInterruptedError, match=r"no answer from the server within 0\.5 s") as caught:
        await client.get_response("hi", options={"idle_timeout": 0.5}, stream=True).get_final_response()
    assert time.monotonic() - started < BOUND
    assert caught.value.updates == 0 and caught.value.partial_text == ""
    assert await settled(server)  # the abandoned thread's own read timeout ends it


@ADAPTERS
@SYNC_OR_ASYNC
@pytest.mark.parametrize("where", ["constructor", "with_options"])
async def test_the_sdk_clients_own_shorter_timeout_bounds_a_silent_stream(
    adapter: str, is_async: bool, where: str, serve: Callable[[Fault], FaultServer]
) -> None:
    """Before: each read's timeout became the idle timeout + 1 (121 s by default), whatever the
    SDK client's own (2 s here): the smaller bound must win."""
    server = serve(stall(FIRST[adapter], hold=HOLD))
    client = adapter_for(
        adapter, server, is_async=is_async, sdk_options={"timeout": 2.0} if where == "constructor" else {}
    )
    if where == "with_options":  # the SDK's way to set a timeout for some calls only
        client = type(client)(client.sdk_client.with_options(timeout=2.0), "m", discover=False)
    assert client.idle_timeout == 120.0
    with anyio.fail_after(BOUND), pytest.raises(StreamInterruptedError, match="Timeout") as caught:
        await client.get_response("hi", stream=True).get_final_response()
    assert caught.value.partial_text == "Hel"
    assert await settled(server)


@pytest.mark.parametrize("value", [0, -1, "5", float("nan"), True])
def test_a_bad_idle_timeout_is_a_user_error(value: Any) -> None:
    sdk = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="test")
    with pytest.raises(UserError, match="idle_timeout"):
        OpenAIChatClient(sdk, "m", idle_timeout=value)
    with pytest.raises(UserError, match="idle_timeout"):
        OpenAIChatClient(sdk, "m").get_response("hi", options={"idle_timeout": value})


# ------------------------------------------------------------ the retry deadline


# ------------------------------------------------------------ the real server


@pytest.mark.parametrize("route", ["chat", "messages"])
async def test_a_sync_stream_cancelled_mid_answer_on_the_real_server_leaves_nothing_behind(
    route: str, local_server: LocalModelServer, local_sdk: Any
) -> None:
    if route == "chat":
        client: Any = OpenAIChatClient(local_sdk("openai"), local_server.model, capabilities=LLAMA_SERVER_CHAT)
    else:
        client = AnthropicChatClient(local_sdk("anthropic"), local_server.model)
    stream = client.get_response("Count from 1 to 200.", options={"max_tokens": 400}, stream=True)
    texts: list[str] = []
    async with stream:
        async for update in stream:
            texts.append(update.text)
            if len("".join(texts)) > 5:
                break
    end = time.monotonic() + BOUND
    while blocked_readers() and time.monotonic() < end:
        await anyio.sleep(0.05)
    assert blocked_readers() == 0
    again = await client.get_response("Say hi.", options={"max_tokens": 5})  # the server is still usable
    assert again.usage is not None and again.usage.output_tokens


@pytest.mark.parametrize("adapter", ["chat", "responses", "messages"])
@pytest.mark.parametrize(("idle", "read"), [(120.0, 121.0), (30.0, 31.0), (None, 600.0)], ids=["default", "30", "none"])
async def test_the_idle_timeout_bounds_every_socket_read_of_a_stream(adapter: str, idle: Any, read: float) -> None:
    """Default 120 s; each read's timeout is just past it (so the idle timeout fires first and no
    thread outlives it); `idle_timeout=None` leaves the SDK client's own timeout (600 s)."""
    seen: list[Any] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.extensions["timeout"])
        return httpx2.Response(200, content=b"", headers={"content-type": "text/event-stream"})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    options: dict[str, Any] = {"discover": False} if idle == 120.0 else {"idle_timeout": idle, "discover": False}
    if adapter == "messages":
        sdk: Any = anthropic.AsyncAnthropic(api_key="x", base_url="http://mock", http_client=http, timeout=600)
        client: Any = AnthropicChatClient(sdk, "m", **options)
    else:
        sdk = openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http, timeout=600)
        client = (OpenAIChatClient if adapter == "chat" else OpenAIResponsesClient)(sdk, "m", **options)
    assert client.idle_timeout == idle
    with pytest.raises(StreamInterruptedError, match="ended without"):
        await client.get_response("hi", stream=True).get_final_response()
    assert seen[0]["read"] == read
