"""Response formats: the two OpenAI spellings translated both ways, and the same format on the wire
whether a call streams or not, on every route (the seed 004 passthrough requirements).

The translation tests are pure. The wire tests capture the request bodies the official SDKs send,
with httpx2 event hooks, over `httpx2.MockTransport` answering with minimal documented bodies.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from so_middleware import (
    ResponseFormat,
    UserError,
    chat_format_to_responses,
    responses_format_to_chat,
)
from so_middleware.anthropic import ANTHROPIC_API, AnthropicChatClient
from so_middleware.openai import (
    LLAMA_SERVER_RESPONSES,
    OPENAI_API,
    OpenAIChatClient,
    OpenAIResponsesClient,
)
from so_middleware.testing import HttpRecorder
from so_middleware.wire.chat import response_format_to_wire
from so_middleware.wire.messages import output_format_to_wire
from so_middleware.wire.responses import text_format_to_wire

pytestmark = pytest.mark.anyio

NESTED = {
    "type": "object",
    "$defs": {
        "Address": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "Tag": {"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "null"}]},
    },
    "properties": {
        "name": {"type": "string", "description": "full name"},
        "address": {"$ref": "#/$defs/Address"},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}, "maxItems": 3},
    },
    "required": ["name", "address", "tags"],
    "additionalProperties": False,
    "x-vendor": {"kept": True},
}

# (chat response_format, responses text.format): the same format in both spellings.
PAIRS = [
    pytest.param({"type": "json_object"}, {"type": "json_object"}, id="json_object"),
    pytest.param(
        {"type": "json_schema", "json_schema": {"name": "Person", "schema": NESTED, "strict": True}},
        {"type": "json_schema", "name": "Person", "schema": NESTED, "strict": True},
        id="json_schema-strict-nested-defs",
    ),
    pytest.param(
        {
            "type": "json_schema",
            "json_schema": {"name": "P", "schema": {"type": "object"}, "strict": False, "description": "A person."},
        },
        {"type": "json_schema", "name": "P", "schema": {"type": "object"}, "strict": False, "description": "A person."},
        id="json_schema-not-strict-description",
    ),
    pytest.param(
        {"type": "json_schema", "json_schema": {"name": "P", "schema": {"type": "object"}}},
        {"type": "json_schema", "name": "P", "schema": {"type": "object"}},
        id="json_schema-strict-absent",
    ),
]


@pytest.mark.parametrize(("chat", "responses"), PAIRS)
def test_translation_both_ways_and_round_trip(chat: dict[str, Any], responses: dict[str, Any]) -> None:
    assert responses_format_to_chat(responses) == chat
    assert chat_format_to_responses(chat) == responses
    assert chat_format_to_responses(responses_format_to_chat(responses)) == responses
    assert responses_format_to_chat(chat_format_to_responses(chat)) == chat
    # Either spelling reads into the same neutral value.
    assert ResponseFormat.from_wire(chat) == ResponseFormat.from_wire(responses)


def test_schema_is_carried_unchanged_never_reinterpreted() -> None:
    original = copy.deepcopy(NESTED)
    chat = responses_format_to_chat({"type": "json_schema", "name": "Person", "schema": NESTED, "strict": True})
    assert chat is not None
    carried = chat["json_schema"]["schema"]
    assert carried == original
    assert json.dumps(carried) == json.dumps(original)  # same keys in the same order
    carried["properties"]["name"]["type"] = "integer"  # the copy is the caller's own
    assert original == NESTED


def test_text_or_no_format_sends_nothing() -> None:
    for value in ({"type": "text"}, None):
        assert responses_format_to_chat(value) is None
        assert chat_format_to_responses(value) is None


def test_unknown_type_is_forwarded_unchanged() -> None:
    """The translation forwards an unknown type as given (the gateway forwards whatever a client
    sends); reading one into a `ResponseFormat` is what warns."""
    grammar = {"type": "grammar", "grammar": 'root ::= "yes" | "no"', "x": [1, 2]}
    assert responses_format_to_chat(grammar) == grammar
    assert chat_format_to_responses(grammar) == grammar
    with pytest.warns(UserWarning, match="unknown response format type 'grammar'"):
        assert ResponseFormat.from_wire(grammar) == ResponseFormat("grammar")


def test_every_key_of_a_json_schema_format_keeps_its_value_and_order_both_ways() -> None:
    flat = {"type": "json_schema", "strict": False, "x-vendor": [1], "schema": {"type": "object"}}  # no name
    nested = {"type": "json_schema", "json_schema": {"strict": False, "x-vendor": [1], "schema": {"type": "object"}}}
    assert json.dumps(responses_format_to_chat(flat)) == json.dumps(nested)
    assert json.dumps(chat_format_to_responses(nested)) == json.dumps(flat)


@pytest.mark.parametrize("value", [{"kind": "json"}, {"type": 3}, "json_object"], ids=repr)
def test_a_format_without_a_string_type_is_a_user_error(value: Any) -> None:
    with pytest.raises(UserError, match=r"text\.format\.type must be a string"):
        responses_format_to_chat(value)
    with pytest.raises(UserError, match=r"response_format\.type must be a string"):
        chat_format_to_responses(value)


def test_the_adapters_rendering_is_the_same_translation() -> None:
    """The Chat Completions spelling is the Responses one nested: one table for both."""
    for fmt in (
        ResponseFormat.json_schema(NESTED, name="P", strict=True, description="d"),
        ResponseFormat.json_object(),
    ):
        assert response_format_to_wire(fmt) == responses_format_to_chat(text_format_to_wire(fmt))
        assert text_format_to_wire(fmt) == chat_format_to_responses(response_format_to_wire(fmt))


# --------------------------------------------------------------- on the wire, every route


CHAT_COMPLETION = {
    "id": "c1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "{}"}}],
}
CHAT_STREAM = (
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"{}"},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
)
RESPONSE = {
    "id": "r1",
    "object": "response",
    "created_at": 1,
    "model": "m",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "m1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "{}", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
RESPONSE_STREAM = f"event: response.completed\ndata: {json.dumps({'type': 'response.completed', 'response': RESPONSE, 'sequence_number': 0})}\n\n"
MESSAGE = {
    "id": "m1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [{"type": "text", "text": "{}"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
MESSAGE_STREAM = "".join(
    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
    for e in (
        {"type": "message_start", "message": {**MESSAGE, "content": [], "stop_reason": None}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    )
)


def answer(request: httpx2.Request) -> httpx2.Response:
    streamed = json.loads(request.content).get("stream")
    path = request.url.path
    if streamed:
        text = (
            CHAT_STREAM
            if path.endswith("/chat/completions")
            else RESPONSE_STREAM
            if path.endswith("/responses")
            else MESSAGE_STREAM
        )
        return httpx2.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})
    body = (
        CHAT_COMPLETION if path.endswith("/chat/completions") else RESPONSE if path.endswith("/responses") else MESSAGE
    )
    return httpx2.Response(200, json=body)


def route_client(route: str, recorder: HttpRecorder) -> Any:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer), event_hooks={"request": [recorder]})
    if route == "anthropic":
        return AnthropicChatClient(
            anthropic.AsyncAnthropic(api_key="x", base_url="http://mock", http_client=http),
            "m",
            capabilities=ANTHROPIC_API,
        )
    sdk = openai.AsyncOpenAI(api_key="x", base_url="http://mock/v1", http_client=http)
    if route == "chat":
        return OpenAIChatClient(sdk, "m", capabilities=OPENAI_API)
    profile = LLAMA_SERVER_RESPONSES if route == "responses-llama-server" else OPENAI_API
    return OpenAIResponsesClient(sdk, "m", capabilities=profile)


ROUTES = ["chat", "responses", "responses-llama-server", "anthropic"]
FORMATS = [
    pytest.param(ResponseFormat.json_schema(NESTED, name="Person", strict=True, description="d"), id="json_schema"),
    pytest.param(ResponseFormat.json_object(), id="json_object"),
    pytest.param(ResponseFormat.text(), id="text"),
]


def format_fields(body: dict[str, Any]) -> dict[str, Any]:
    return {key: body[key] for key in ("response_format", "text", "output_config") if key in body}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("fmt", FORMATS)
async def test_streaming_sends_the_same_format_as_non_streaming(route: str, fmt: ResponseFormat) -> None:
    recorder = HttpRecorder()
    client = route_client(route, recorder)
    options = {"response_format": fmt, "max_tokens": 5}
    if route == "anthropic" and fmt.type == "json_object":
        with pytest.warns(UserWarning, match="no Anthropic form"):
            await client.get_response("x", options=options)
            await client.get_response("x", options=options, stream=True).get_final_response()
    else:
        await client.get_response("x", options=options)
        await client.get_response("x", options=options, stream=True).get_final_response()
    plain, streamed = recorder.bodies
    assert streamed.pop("stream") is True
    streamed.pop("stream_options", None)
    assert plain == streamed  # the whole request, format included, is the same
    sent = format_fields(plain)
    expected: dict[str, Any] = {
        "chat": {"response_format": response_format_to_wire(fmt)},
        "responses": {"text": {"format": text_format_to_wire(fmt)}},
        "responses-llama-server": {
            "text": {"format": text_format_to_wire(fmt)},
            "response_format": response_format_to_wire(fmt),
        },
        "anthropic": {"output_config": {"format": output_format_to_wire(fmt)}},
    }[route]
    assert sent == {key: value for key, value in expected.items() if value not in (None, {"format": None})}
    if fmt.type == "json_schema":  # the nested schema reaches the wire as given, in every spelling
        schemas = [
            sent.get("response_format", {}).get("json_schema", {}).get("schema"),
            sent.get("text", {}).get("format", {}).get("schema"),
            sent.get("output_config", {}).get("format", {}).get("schema"),
        ]
        assert [s for s in schemas if s is not None] and all(s == NESTED for s in schemas if s is not None)


@pytest.mark.parametrize("route", ["chat", "responses", "responses-llama-server"])
async def test_unknown_type_reaches_the_wire_unchanged(route: str) -> None:
    recorder = HttpRecorder()
    grammar = {"type": "grammar", "grammar": 'root ::= "yes"'}
    with pytest.warns(UserWarning, match="unknown response format type 'grammar'"):
        await route_client(route, recorder).get_response("x", options={"response_format": grammar})
    sent = format_fields(recorder.bodies[0])
    assert sent.get("response_format", grammar) == grammar
    if route != "chat":
        assert sent["text"] == {"format": grammar}
