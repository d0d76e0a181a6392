"""Function tools through the gateway on a backend that ignores them (llama-server with a chat
template that has none): a required call comes back as a `function_call` item, asked of the
backend as JSON under the schema it enforces; with `auto` the schema offers an answer beside the
calls, and the model's choice comes back as a `function_call` item or a message.

The fake backend answers `/props` as llama-server does, so discovery finds the same profile as
on the real one; the `local_server` tests run the real llama-server with SmolLM2-135M and assert
only typed outcomes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from fakes import FakeChatBackend, sdk

from so_middleware.gateway._server import AppServer

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather in a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 20}},
        "required": ["city"],
        "additionalProperties": False,
    },
}
TIME = {
    "type": "function",
    "name": "get_time",
    "description": "The time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 20}}, "required": ["zone"]},
}
LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 2048}, "build_info": "b6000-abc",
               "chat_template_caps": {"supports_tools": False}}  # fmt: skip
QUESTION = "What is the weather in Oslo?"


def calls_of(output: list[Any]) -> list[Any]:
    return [item for item in output if item.type == "function_call"]


@pytest.fixture
def llama_like(fake_gateway: Callable[..., Any]) -> tuple[FakeChatBackend, AppServer]:
    backend, server = fake_gateway()
    backend.props = LLAMA_PROPS
    backend.text = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    return backend, server


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("choice", ["required", {"type": "function", "name": "get_weather"}])
def test_a_required_call_is_asked_by_schema_and_answered_as_a_function_call(
    llama_like: tuple[FakeChatBackend, AppServer], stream: bool, choice: Any
) -> None:
    backend, server = llama_like
    client = sdk(server)
    if stream:
        with client.responses.create(model="m", input=QUESTION, tools=[WEATHER, TIME], tool_choice=choice,
                                     stream=True) as events:  # fmt: skip
            response = next(e for e in events if e.type == "response.completed").response
    else:
        response = client.responses.create(model="m", input=QUESTION, tools=[WEATHER, TIME], tool_choice=choice)
    [call] = calls_of(response.output)
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Oslo"})
    assert response.status == "completed"
    sent = backend.bodies[-1]
    assert "tools" not in sent and "tool_choice" not in sent  # the backend would drop them anyway
    schema = sent["response_format"]["json_schema"]["schema"]
    names = [option["properties"]["name"]["const"] for option in schema.get("anyOf", [schema])]
    assert names == (["get_weather", "get_time"] if choice == "required" else ["get_weather"])


def create(client: openai.OpenAI, stream: bool, **request: Any) -> Any:
    request.setdefault("input", QUESTION)
    if not stream:
        return client.responses.create(model="m", **request)
    with client.responses.create(model="m", stream=True, **request) as events:
        return next(e for e in events if e.type == "response.completed").response


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("choice", [None, "auto"])
@pytest.mark.parametrize(
    ("answer", "calls", "text"),
    [('{"answer": "Sunny."}', [], "Sunny."), ('{"name": "get_time", "arguments": {"zone": "CET"}}', ["get_time"], "")],
)
def test_with_auto_the_model_decides_and_its_choice_is_a_call_or_a_message(
    llama_like: tuple[FakeChatBackend, AppServer], stream: bool, choice: str | None, answer: str, calls: list[str],
    text: str,
) -> None:  # fmt: skip
    backend, server = llama_like
    backend.text = answer
    extra = {} if choice is None else {"tool_choice": choice}
    response = create(sdk(server), stream, tools=[WEATHER, TIME], **extra)
    assert [c.name for c in calls_of(response.output)] == calls
    assert response.output_text == text and response.status == "completed"
    schema = backend.bodies[-1]["response_format"]["json_schema"]["schema"]
    assert schema["anyOf"][-1]["properties"] == {"answer": {"type": "string"}}


@pytest.mark.parametrize("stream", [False, True])
def test_with_auto_and_a_text_format_the_message_follows_the_format(
    llama_like: tuple[FakeChatBackend, AppServer], stream: bool
) -> None:
    backend, server = llama_like
    backend.text = '{"answer": {"city": "Oslo"}}'
    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    text = {"format": {"type": "json_schema", "name": "City", "schema": city}}
    response = create(sdk(server), stream, tools=[WEATHER], tool_choice="auto", text=text)
    assert json.loads(response.output_text) == {"city": "Oslo"} and calls_of(response.output) == []
    schema = backend.bodies[-1]["response_format"]["json_schema"]["schema"]
    assert schema["anyOf"][-1]["properties"]["answer"]["properties"] == city["properties"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    "answer",
    ['{"name": "launch_rockets", "arguments": {}}', "It is sunny in Oslo."],  # what no grammar-bound backend sends
    ids=["unknown-call", "text"],
)
@pytest.mark.parametrize("choice", ["required", "auto"])
def test_an_answer_that_is_no_call_is_a_bad_gateway_keeping_the_backend_text(
    llama_like: tuple[FakeChatBackend, AppServer], stream: bool, answer: str, choice: str
) -> None:
    """A call of a tool the request did not declare never reaches the client as a call, whether
    the call was required or left to the model: the schema sent lists only the declared tools."""
    backend, server = llama_like
    backend.text = answer
    with pytest.raises(openai.APIStatusError) as caught:
        create(sdk(server), stream, tools=[WEATHER], tool_choice=choice)
    schema = backend.bodies[-1]["response_format"]["json_schema"]["schema"]
    assert [option["properties"].get("name", {}).get("const") for option in schema.get("anyOf", [schema])] == (
        ["get_weather"] if choice == "required" else ["get_weather", None]
    )
    assert caught.value.status_code == 502
    assert caught.value.body["code"] == "backend_bad_response"  # type: ignore[index]
    assert caught.value.body["raw_text"] == answer  # type: ignore[index]


def test_a_backend_that_honours_tools_gets_them_as_sent(fake_gateway: Callable[..., Any]) -> None:
    backend, server = fake_gateway()  # no /props: not recognised, the generic profile
    backend.tool_call = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    response = sdk(server).responses.create(model="m", input=QUESTION, tools=[WEATHER], tool_choice="auto")
    assert [c.name for c in calls_of(response.output)] == ["get_weather"]
    assert backend.bodies[-1]["tools"][0]["function"]["name"] == "get_weather"
    assert "response_format" not in backend.bodies[-1]


# ------------------------------------------------------------------ the real llama-server


@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True])
def test_the_embedded_model_answers_a_forced_tool_with_a_call(gateway_sdk: openai.OpenAI, stream: bool) -> None:
    request: dict[str, Any] = {"model": "smollm2", "input": QUESTION, "tools": [WEATHER, TIME],
                               "tool_choice": {"type": "function", "name": "get_weather"}, "max_output_tokens": 200}  # fmt: skip
    try:
        if stream:
            with gateway_sdk.responses.create(**request, stream=True) as events:
                ended = ("response.completed", "response.incomplete")
                response = next(e for e in events if e.type in ended).response
        else:
            response = gateway_sdk.responses.create(**request)
    except openai.APIStatusError as error:  # the typed outcome of an answer that is no call
        assert error.status_code == 502
        return
    [call] = calls_of(response.output)
    assert call.name == "get_weather"
    assert isinstance(json.loads(call.arguments), dict)


@pytest.mark.local_server
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("question", [QUESTION, "Say hello to me."])
def test_the_embedded_model_answers_auto_with_a_call_or_a_message(
    gateway_sdk: openai.OpenAI, stream: bool, question: str
) -> None:
    request: dict[str, Any] = {"model": "smollm2", "input": question, "tools": [WEATHER, TIME], "tool_choice": "auto",
                               "max_output_tokens": 200}  # fmt: skip
    try:
        if stream:
            with gateway_sdk.responses.create(**request, stream=True) as events:
                ended = ("response.completed", "response.incomplete")
                response = next(e for e in events if e.type in ended).response
        else:
            response = gateway_sdk.responses.create(**request)
    except openai.APIStatusError as error:  # the typed outcome of an answer that is neither
        assert error.status_code == 502
        return
    calls = calls_of(response.output)
    if calls:
        assert all(c.name in ("get_weather", "get_time") and isinstance(json.loads(c.arguments), dict) for c in calls)
    else:
        assert [item.type for item in response.output] == ["message"]


def test_a_tool_whose_definitions_are_no_object_is_a_400_naming_it(
    llama_like: tuple[FakeChatBackend, AppServer],
) -> None:
    backend, server = llama_like
    tool = {**WEATHER, "parameters": {**WEATHER["parameters"], "$defs": ["not", "an", "object"]}}
    with pytest.raises(openai.BadRequestError, match="tool 'get_weather' must be an object") as caught:
        sdk(server).responses.create(model="m", input=QUESTION, tools=[tool, TIME], tool_choice="required")
    assert caught.value.status_code == 400 and backend.bodies == []


def test_a_function_call_output_reaches_the_backend_named_after_its_call(
    llama_like: tuple[FakeChatBackend, AppServer],
) -> None:
    """A `function_call_output` has only the call's id; the backend that reads the history as text
    is told which tool answered (what agent clients such as Codex CLI send back)."""
    backend, server = llama_like
    backend.text = '{"answer": "Sunny."}'
    history = [
        {"role": "user", "content": QUESTION},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "12 C"},
    ]
    response = sdk(server).responses.create(model="m", input=history, tools=[WEATHER, TIME])  # type: ignore[arg-type]
    assert response.output_text == "Sunny."
    texts = [m["content"] for m in backend.bodies[-1]["messages"] if m["role"] == "user"]
    assert texts[-1] == "The call of get_weather returned: 12 C"


def _repeated(times: int, *, arguments: str = '{"city": "Oslo"}') -> list[Any]:
    """The question, then `times` calls of get_weather with `arguments`, each answered."""
    history: list[Any] = [{"role": "user", "content": QUESTION}]
    for n in range(times):
        history.append({"type": "function_call", "call_id": f"call_{n}", "name": "get_weather", "arguments": arguments})
        history.append({"type": "function_call_output", "call_id": f"call_{n}", "output": "12 C"})
    return history


def _offered(body: dict[str, Any]) -> list[str | None]:
    schema = body["response_format"]["json_schema"]["schema"]
    return [option["properties"].get("name", {}).get("const") for option in schema.get("anyOf", [schema])]


@pytest.mark.parametrize("stream", [False, True])
def test_after_repeated_identical_calls_an_auto_turn_may_only_answer(
    llama_like: tuple[FakeChatBackend, AppServer], stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A model that calls the same tool with the same arguments again after reading its result
    never ends (the embedded model under Codex CLI did so until the client was killed): after two
    such calls in a row, the schema sent offers the answer alone, and a warning says why."""
    backend, server = llama_like
    backend.text = '{"answer": "It is 12 C in Oslo."}'
    with caplog.at_level("WARNING", logger="so_middleware.tool_emulation"):
        response = create(sdk(server), stream, input=_repeated(2), tools=[WEATHER, TIME], tool_choice="auto")
    assert response.output_text == "It is 12 C in Oslo." and calls_of(response.output) == []
    assert _offered(backend.bodies[-1]) == [None]  # no tool in the grammar
    assert backend.bodies[-1]["response_format"]["json_schema"]["schema"]["properties"] == {
        "answer": {"type": "string"}
    }
    [record] = [r for r in caplog.records if r.name == "so_middleware.tool_emulation"]
    assert "get_weather 2 times" in record.getMessage()


@pytest.mark.parametrize(
    ("history", "choice"),
    [
        (_repeated(1), "auto"),  # one call: calling again may be the way on
        (_repeated(1) + _repeated(1, arguments='{"city": "Bergen"}')[1:], "auto"),  # other arguments
        ([*_repeated(2), {"role": "user", "content": "And now?"}], "auto"),  # a new user message
        (_repeated(3), "required"),  # the caller asked for a call
    ],
    ids=["once", "other-arguments", "after-a-user-message", "required"],
)
def test_calls_that_are_no_answered_repeat_keep_the_tools_offered(
    llama_like: tuple[FakeChatBackend, AppServer], history: list[Any], choice: str
) -> None:
    backend, server = llama_like
    response = sdk(server).responses.create(model="m", input=history, tools=[WEATHER], tool_choice=choice)  # type: ignore[arg-type]
    assert [c.name for c in calls_of(response.output)] == ["get_weather"]
    assert "get_weather" in _offered(backend.bodies[-1])


def test_the_number_of_repeats_is_configurable(fake_gateway: Callable[..., Any]) -> None:
    backend, server = fake_gateway(emulated_call_repeats=3)
    backend.props = LLAMA_PROPS
    backend.text = '{"answer": "Sunny."}'
    client = sdk(server)
    client.responses.create(model="m", input=_repeated(2), tools=[WEATHER], tool_choice="auto")  # type: ignore[arg-type]
    assert _offered(backend.bodies[-1]) == ["get_weather", None]
    client.responses.create(model="m", input=_repeated(3), tools=[WEATHER], tool_choice="auto")  # type: ignore[arg-type]
    assert _offered(backend.bodies[-1]) == [None]


def test_a_backend_that_calls_tools_itself_is_not_guarded(fake_gateway: Callable[..., Any]) -> None:
    backend, server = fake_gateway()  # no /props: the generic profile, tools sent as they are
    backend.tool_call = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    response = sdk(server).responses.create(model="m", input=_repeated(5), tools=[WEATHER], tool_choice="auto")  # type: ignore[arg-type]
    assert [c.name for c in calls_of(response.output)] == ["get_weather"]
    assert backend.bodies[-1]["tools"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("repeats", [0, 1.5, True])
def test_a_repeat_count_that_is_no_positive_whole_number_is_refused(repeats: Any) -> None:
    from so_middleware import UserError
    from so_middleware.gateway import GatewayConfig

    with pytest.raises(UserError, match="emulated_call_repeats"):
        GatewayConfig(backend_url="x", emulated_call_repeats=repeats)
