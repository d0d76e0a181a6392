"""A stalled server under the retry layer's deadline: the adapters' hang bounds, through with_retries
(the fault servers of tests/providers/test_adapter_hangs.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import anthropic
import anyio
import openai
import pytest
from adapter_stalls import (
    ADAPTERS,
    BOUND,
    FIRST,
    HOLD,
    SYNC_OR_ASYNC,
    adapter_for,
    one_fault_servers,
    settled,
)

from so_middleware import DeadlineExceededError, with_retries
from so_middleware.testing._faults import Fault, FaultServer, stall

pytestmark = pytest.mark.anyio


@pytest.fixture
def serve() -> Iterator[Callable[[Fault], FaultServer]]:
    yield from one_fault_servers()


@ADAPTERS
async def test_the_sdk_clients_own_shorter_timeout_bounds_a_plain_call_under_a_deadline(
    adapter: str, serve: Callable[[Fault], FaultServer]
) -> None:
    """Before: a retry deadline (60 s) replaced the SDK client's 2 s read timeout by 61 s."""
    server = serve(stall(before_headers=True, hold=HOLD))
    inner = adapter_for(adapter, server, is_async=True, sdk_options={"timeout": 2.0})
    client = with_retries(inner, deadline=60.0, max_attempts=1)
    with anyio.fail_after(BOUND), pytest.raises((openai.APITimeoutError, anthropic.APITimeoutError)):
        await client.get_response("hi")
    assert await settled(server)


@ADAPTERS
@SYNC_OR_ASYNC
async def test_the_retry_deadline_bounds_a_stalled_stream(
    adapter: str, is_async: bool, serve: Callable[[Fault], FaultServer]
) -> None:
    server = serve(stall(FIRST[adapter], hold=HOLD))
    client = with_retries(adapter_for(adapter, server, is_async=is_async, idle_timeout=None), deadline=1.0)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError) as caught:
        await client.get_response("hi", stream=True).get_final_response()
    assert time.monotonic() - started < BOUND
    assert caught.value.partial_text == "Hel" and caught.value.deadline == 1.0
    assert isinstance(caught.value, TimeoutError)
    assert await settled(server)


@ADAPTERS
@SYNC_OR_ASYNC
async def test_the_retry_deadline_bounds_a_plain_call_the_server_never_answers(
    adapter: str, is_async: bool, serve: Callable[[Fault], FaultServer]
) -> None:
    """The adapter caps the request's timeouts by the time left, so even the abandoned sync
    thread and its socket end soon after the deadline."""
    server = serve(stall(before_headers=True, hold=HOLD))
    client = with_retries(adapter_for(adapter, server, is_async=is_async), deadline=1.0)
    started = time.monotonic()
    with pytest.raises(DeadlineExceededError):
        await client.get_response("hi")
    assert time.monotonic() - started < BOUND
    assert await settled(server)
