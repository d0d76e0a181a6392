"""with_options: defaults and a configure callback, applied to a copy; the call's own values win."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from so_middleware import (
    ChatOptions,
    ConfigureOptionsChatClient,
    Feature,
    UserError,
    with_options,
    with_structured_output,
)
from so_middleware.local import LocalModelServer, chat_client
from so_middleware.testing import FakeChatClient, final_response

pytestmark = pytest.mark.anyio


class Tagging(Feature):
    """A feature no layer knows: it must arrive below as the same object."""


@pytest.mark.parametrize("stream", [False, True])
async def test_defaults_reach_the_inner_client_and_the_call_wins(stream: bool) -> None:
    fake = FakeChatClient("ok")
    client = with_options(fake, temperature=0, max_tokens=50, stop="END")
    response = await final_response(client, "hi", stream=stream, options={"temperature": 0.7, "seed": 3})
    assert response.text == "ok"
    sent = fake.calls[0].options
    assert (sent.temperature, sent.max_tokens, sent.seed, list(sent.stop or [])) == (0.7, 50, 3, ["END"])
    assert fake.calls[0].stream is stream


@pytest.mark.parametrize("stream", [False, True])
async def test_a_call_without_options_gets_the_defaults(stream: bool) -> None:
    fake = FakeChatClient("ok")
    await final_response(with_options(fake, model="small", instructions="Be brief."), "hi", stream=stream)
    assert (fake.calls[0].options.model, fake.calls[0].options.instructions) == ("small", "Be brief.")


@pytest.mark.parametrize("stream", [False, True])
async def test_the_callers_dict_options_and_features_are_never_changed(stream: bool) -> None:
    fake = FakeChatClient("ok")
    default_tag, call_tag = Tagging(), Tagging()
    client = with_options(fake, temperature=0, features=[default_tag], additional_properties={"team": "a"})
    options = {"features": [call_tag], "additional_properties": {"trace": "x"}}
    snapshot = {"features": [call_tag], "additional_properties": {"trace": "x"}}
    await final_response(client, "hi", stream=stream, options=options)
    assert options == snapshot and options["features"][0] is call_tag
    sent = fake.calls[0].options
    assert sent.features[0] is call_tag and sent.features[1] is default_tag  # the very objects, call's first
    assert sent.additional_properties["team"] == "a" and sent.additional_properties["trace"] == "x"


@pytest.mark.parametrize("stream", [False, True])
async def test_a_chat_options_object_is_not_the_one_sent_and_stays_as_it_was(stream: bool) -> None:
    fake = FakeChatClient("ok")
    mine = ChatOptions(seed=1)
    await final_response(with_options(fake, temperature=0.2), "hi", stream=stream, options=mine)
    assert fake.calls[0].options is not mine
    assert mine == ChatOptions(seed=1)
    assert (fake.calls[0].options.seed, fake.calls[0].options.temperature) == (1, 0.2)


@pytest.mark.parametrize("stream", [False, True])
async def test_configure_sees_the_merged_options_and_its_result_is_sent(stream: bool) -> None:
    fake = FakeChatClient("ok")
    seen: list[ChatOptions] = []

    def cap_tokens(options: ChatOptions) -> ChatOptions:
        seen.append(options)
        return options.replace(max_tokens=min(options.max_tokens or 100, 100))

    client = with_options(fake, max_tokens=500, configure=cap_tokens)
    await final_response(client, "hi", stream=stream, options={"temperature": 0})
    assert seen[0].max_tokens == 500 and seen[0].temperature == 0
    assert fake.calls[0].options.max_tokens == 100


async def test_configure_may_return_a_dict() -> None:
    fake = FakeChatClient("ok")
    client = with_options(fake, configure=lambda options: {"model": "other", "seed": 7})
    await client.get_response("hi", options={"seed": 1})
    assert (fake.calls[0].options.model, fake.calls[0].options.seed) == ("other", 7)


async def test_configure_returning_nothing_is_a_user_error() -> None:
    client = with_options(FakeChatClient("ok"), configure=lambda options: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(UserError, match="configure must return the options"):
        await client.get_response("hi")


def test_unknown_default_keys_fail_when_the_layer_is_built() -> None:
    with pytest.raises(UserError, match="unknown option 'temprature'"):
        with_options(FakeChatClient("ok"), temprature=0)
    with pytest.raises(UserError, match="configure must be a function"):
        with_options(FakeChatClient("ok"), configure="nope")  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True])
async def test_output_type_passes_through_to_structured_output(stream: bool) -> None:
    class Answer(BaseModel):
        n: int

    fake = FakeChatClient('{"n": 4}')
    client = with_options(with_structured_output(fake), temperature=0)
    response = await final_response(client, "2+2?", stream=stream, output_type=Answer)
    assert response.value == Answer(n=4)
    assert fake.calls[0].options.temperature == 0 and fake.calls[0].options.response_format is not None


def test_options_for_shows_what_a_call_would_send() -> None:
    client = ConfigureOptionsChatClient(FakeChatClient("ok"), defaults={"temperature": 0})
    assert client.options_for({"seed": 1}) == ChatOptions(temperature=0, seed=1)


@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True])
async def test_defaults_reach_the_real_server(local_server: LocalModelServer, stream: bool) -> None:
    """max_tokens=1 from the defaults cuts the real model's answer at one token."""
    adapter = chat_client(local_server, "chat")
    try:
        client = with_options(adapter, max_tokens=1, temperature=0)
        response = await final_response(client, "Count from one to twenty.", stream=stream)
        assert response.finish_reason == "length"
        assert response.usage is not None and response.usage.output_tokens == 1
    finally:
        await adapter.sdk_client.close()
