"""A layer written on the per-verb hooks: `respond` for a plain call, `stream` for a streamed one,
each given one `LayerCall` whose options are a `ChatOptions`; `ResponseStream.map` rewrites a
stream. What the inner client received and what the caller got, on both verbs."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from so_middleware import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatStream,
    ContinuationToken,
    DelegatingChatClient,
    LayerCall,
    TextContent,
    UserError,
)
from so_middleware.testing import FakeChatClient

pytestmark = pytest.mark.anyio


class Shouting(DelegatingChatClient):
    """Rewrites the answer on both verbs, and sends every call at temperature 0."""

    async def respond(self, call: LayerCall) -> ChatResponse[Any]:
        return _shouted(await super().respond(_cold(call)))

    def stream(self, call: LayerCall) -> ChatStream:
        return (
            super()
            .stream(_cold(call))
            .map(lambda update: dataclasses.replace(update, contents=[TextContent(update.text.upper())]), _shouted)
        )


def _shouted(response: ChatResponse[Any]) -> ChatResponse[Any]:
    answer = ChatMessage("assistant", response.text.upper())
    return ChatResponse(answer, finish_reason=response.finish_reason, usage=response.usage)


class Counting(DelegatingChatClient):
    """Changes only the plain verb: a stream passes through untouched."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._self_calls: list[LayerCall] = []

    async def respond(self, call: LayerCall) -> ChatResponse[Any]:
        self._self_calls.append(call)
        return await super().respond(call)


def _cold(call: LayerCall) -> LayerCall:
    return call.replace(options=call.options.replace(temperature=0))


async def test_a_plain_call_goes_through_respond_with_coerced_options() -> None:
    fake = FakeChatClient("hello there")
    caller_options = {"max_tokens": 7}
    response = await Shouting(fake).get_response("Hi", options=caller_options)
    assert response.text == "HELLO THERE"
    (call,) = fake.calls
    assert call.stream is False and call.options.temperature == 0 and call.options.max_tokens == 7
    assert caller_options == {"max_tokens": 7}  # the caller's options are left as they were


async def test_a_streamed_call_goes_through_stream_and_map_rewrites_updates_and_final() -> None:
    fake = FakeChatClient("hello there")
    stream = Shouting(fake).get_response("Hi", stream=True)
    texts = [update.text async for update in stream]
    final = await stream.get_final_response()
    assert "".join(texts) == "HELLO THERE" and final.text == "HELLO THERE"
    assert fake.calls[0].stream is True and fake.calls[0].options.temperature == 0


async def test_closing_a_mapped_stream_closes_the_inner_one() -> None:
    fake = FakeChatClient("one two three four five six")
    stream = Shouting(fake).get_response("Hi", stream=True)
    async with stream:
        async for _ in stream:
            break
    assert fake.closed_streams == 1


async def test_a_layer_overriding_one_verb_passes_the_other_through() -> None:
    fake = FakeChatClient("hi")
    layer = Counting(fake)
    await layer.get_response("a", options={"seed": 3})
    stream = layer.get_response("b", stream=True)
    assert (await stream.get_final_response()).text == "hi"
    (seen,) = layer._self_calls  # only the plain call reached `respond`
    assert isinstance(seen.options, ChatOptions) and seen.options.seed == 3
    assert [call.stream for call in fake.calls] == [False, True]


async def test_a_continuation_token_arrives_among_the_options() -> None:
    class Answering(DelegatingChatClient):  # answers itself: the fake runs no background runs
        async def respond(self, call: LayerCall) -> ChatResponse[Any]:
            token = call.options.continuation_token
            return ChatResponse(ChatMessage("assistant", token.response_id if token else ""))

    response = await Answering(FakeChatClient()).get_response(continuation_token=ContinuationToken("resp_1"))
    assert response.text == "resp_1"


async def test_bad_options_are_refused_before_the_inner_client_is_called() -> None:
    fake = FakeChatClient("x")
    with pytest.raises(UserError, match="unknown option 'temprature'"):
        await Counting(fake).get_response("Hi", options={"temprature": 0})
    assert fake.calls == []


@pytest.mark.parametrize("stream", [False, True])
async def test_bad_options_fail_at_the_entry_before_any_layer_runs(stream: bool) -> None:
    """Coerced once, where the call enters the stack: no layer's hook sees a call that never
    started (a streamed one raises when it is made, not when it is iterated)."""
    inner = Counting(FakeChatClient("x"))
    outer = Counting(inner)
    with pytest.raises(UserError, match="unknown option 'temprature'"):
        outer.get_response("Hi", options={"temprature": 0}, stream=stream)
    assert not hasattr(DelegatingChatClient, "process")
    assert outer._self_calls == [] and inner._self_calls == []


async def test_an_error_in_the_inner_stream_ends_the_mapped_stream_with_it() -> None:
    stream = Shouting(FakeChatClient(RuntimeError("backend down"))).get_response("Hi", stream=True)
    with pytest.raises(RuntimeError, match="backend down"):
        async for _ in stream:
            pass
    with pytest.raises(RuntimeError, match="backend down"):
        await stream.get_final_response()
