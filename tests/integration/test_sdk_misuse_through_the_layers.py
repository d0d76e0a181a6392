"""SDK clients misused under the structured-output layer: one async SDK client on two event loops, one
per loop, a call as a task."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from extraction_server import ExtractionServer, Row

from so_middleware import UserError, run_sync, with_structured_output
from so_middleware.openai import OpenAIChatClient

LOOP_ADVICE = "make the async client inside the coroutine asyncio.run() runs (one per event loop)"


@pytest.mark.parametrize("first", ["sync", "asyncio.run"])
def test_one_async_sdk_client_on_two_event_loops_is_a_user_error_saying_what_to_do(first: str) -> None:
    with ExtractionServer() as server:
        sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        client = with_structured_output(OpenAIChatClient(sdk, "m", discover=False))

        async def in_asyncio_run() -> Any:
            return (await client.get_response("item 1", output_type=Row)).value

        def in_sync() -> Any:
            return client.get_response_sync("item 1", output_type=Row).value

        loop = asyncio.new_event_loop()  # what asyncio.run() makes, kept open to close the client on it
        calls = [in_sync, lambda: loop.run_until_complete(in_asyncio_run())]
        if first != "sync":
            calls.reverse()
        try:
            assert calls[0]() == Row(n=1, word="w1")
            served = len(server.served)
            with pytest.raises(UserError, match=r"this AsyncOpenAI was first used on another event loop") as caught:
                calls[1]()
            assert LOOP_ADVICE in str(caught.value)
            assert len(server.served) == served  # refused before any request
        finally:
            # the pooled connection closed on its own loop: left open, the SDK's finalizer would close it
            # on whichever loop collects the client (a later test's), after this one has closed
            if first == "sync":
                run_sync(sdk.close)
            else:
                loop.run_until_complete(sdk.close())
            loop.close()


def test_a_new_async_client_per_event_loop_works() -> None:
    with ExtractionServer() as server:

        async def once() -> Any:
            async with openai.AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0) as sdk:
                client = with_structured_output(OpenAIChatClient(sdk, "m", discover=False))
                return (await client.get_response("item 2", output_type=Row)).value

        assert asyncio.run(once()) == asyncio.run(once()) == Row(n=2, word="w2")


@pytest.mark.anyio
async def test_get_response_is_a_coroutine_so_create_task_takes_it() -> None:
    """A forgotten `await` reads `.value` from a coroutine (the docs' errors page says what that means);
    it stays a coroutine so that `asyncio.create_task` and anyio's task groups take it."""
    with ExtractionServer() as server:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0) as sdk:
            client = with_structured_output(OpenAIChatClient(sdk, "m", discover=False))
            pending = client.get_response("item 3", output_type=Row)
            assert asyncio.iscoroutine(pending)
            with pytest.raises(AttributeError, match="'coroutine' object has no attribute 'value'"):
                _ = pending.value  # type: ignore[attr-defined]
            assert (await asyncio.create_task(pending)).value == Row(n=3, word="w3")
