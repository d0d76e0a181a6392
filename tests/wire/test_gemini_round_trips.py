"""Gemini's codec both ways: `to_wire(from_wire(x)) == x` on documented `generateContent` bodies,
and `from_wire(to_wire(v))` gives `v` back for generated values (hypothesis).

The bodies are the ones the Gemini API reference documents (ai.google.dev/api/generate-content:
`GenerateContentRequest` and `GenerateContentResponse`, with the examples of the text-generation,
structured-output, function-calling and thinking guides under ai.google.dev/gemini-api/docs).
`request_to_wire` gives the SDK's keyword arguments, so the request written back is the body the
real, unmodified `google-genai` SDK sends for them: it runs over an `httpx.MockTransport` that keeps
the body (no server needed to see what the SDK writes). The API reads a field in camelCase and in
snake_case alike, and the SDK writes some nested ones in snake_case, so bodies are compared with
their field names in camelCase (the values of `args`, `response` and the schemas are left as
they are: they are the caller's data).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

from so_middleware import ChatMessage, ChatOptions, FinishReason, ForcedTool, FunctionTool, ResponseFormat
from so_middleware.wire import gemini
from so_middleware.wire.common import WireError

MODEL = "gemini-2.5-flash"
# What an answer carries that the library does not: per-modality counts, safety ratings, the candidate's index.
NOT_CARRIED = {"promptTokensDetails", "candidatesTokensDetails", "safetyRatings", "index", "avgLogprobs"}
OPAQUE = {"args", "response", "responseJsonSchema", "responseSchema", "parametersJsonSchema", "parameters"}


def camel(value: Any) -> Any:
    """`value` with every field name in camelCase, outside the caller's data."""
    if isinstance(value, list):
        return [camel(item) for item in value]
    if not isinstance(value, dict):
        return value
    renamed = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        name = head + "".join(word.title() for word in rest)
        renamed[name] = item if name in OPAQUE else camel(item)
    return renamed


_SENT: list[tuple[str, dict[str, Any]]] = []


def _keep(request: httpx.Request) -> httpx.Response:
    _SENT.append((request.url.path, json.loads(request.content)))
    return httpx.Response(200, json={"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]})


SDK = genai.Client(api_key="k", http_options={"base_url": "http://gemini.invalid/",
                                              "httpx_client": httpx.Client(transport=httpx.MockTransport(_keep))})  # fmt: skip


def sent_by_sdk(request: dict[str, Any]) -> dict[str, Any]:
    """The body the SDK sends for `generate_content(**request)`, field names in camelCase, bytes in
    the standard base64 alphabet (the SDK writes the URL-safe one; the API reads both), without
    the empty `generationConfig` the SDK writes for a config of no generation field."""
    SDK.models.generate_content(**request)
    path, body = _SENT.pop()
    assert path.endswith(f"/models/{request['model']}:generateContent")
    body = dict(camel(body))
    if body.get("generationConfig") == {}:
        del body["generationConfig"]
    for content in body["contents"]:
        for part in content["parts"]:
            if "inlineData" in part:
                part["inlineData"]["data"] = part["inlineData"]["data"].replace("-", "+").replace("_", "/")
    return body


def carried(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without what the library does not carry."""
    if isinstance(answer, dict):
        return {k: carried(v) for k, v in answer.items() if k not in NOT_CARRIED}
    if isinstance(answer, list):
        return [carried(v) for v in answer]
    return answer


# ---------------------------------------------------------------- requests

DOCUMENTED_REQUESTS = {
    # The text-generation guide: a system instruction, a conversation, the generation settings.
    "text generation": {
        "systemInstruction": {"parts": [{"text": "You are a cat. Your name is Neko."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Hello"}]},
            {"role": "model", "parts": [{"text": "Great to meet you. What would you like to know?"}]},
            {"role": "user", "parts": [{"text": "I have two dogs in my house. How many paws are in my house?"}]},
        ],
        "generationConfig": {"stopSequences": ["Title"], "temperature": 1.0, "topP": 0.8, "topK": 10,
                             "maxOutputTokens": 800, "seed": 7, "thinkingConfig": {"thinkingBudget": 0}},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}],
    },
    # The structured-output guide: JSON with a JSON Schema.
    "structured output": {
        "contents": [{"role": "user", "parts": [{"text": "List a few popular cookie recipes."}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
            "type": "array", "items": {"type": "object", "properties": {
                "recipeName": {"type": "string"}, "ingredients": {"type": "array", "items": {"type": "string"}}},
                "propertyOrdering": ["recipeName", "ingredients"]}}},
    },
    # The same guide's older form: the OpenAPI-subset `responseSchema`.
    "structured output, OpenAPI form": {
        "contents": [{"role": "user", "parts": [{"text": "List a few popular cookie recipes."}]}],
        "generationConfig": {"responseMimeType": "application/json",
                             "responseSchema": {"type": "ARRAY", "items": {"type": "STRING"}}},
    },
    # JSON mode alone; and an enum answer, whose MIME type and schema go as they came.
    "JSON mode": {
        "contents": [{"role": "user", "parts": [{"text": "A cookie recipe as JSON."}]}],
        "generationConfig": {"responseMimeType": "application/json"},
    },
    "enum": {
        "contents": [{"role": "user", "parts": [{"text": "What kind of instrument is an oboe?"}]}],
        "generationConfig": {"responseMimeType": "text/x.enum",
                             "responseSchema": {"type": "STRING", "enum": ["Percussion", "Woodwind"]}},
    },
    # The function-calling guide: a declaration, a forced call, the call and its response in the turns.
    "function calling": {
        "contents": [
            {"role": "user", "parts": [{"text": "What's the temperature in London?"}]},
            {"role": "model", "parts": [
                {"text": "I should look it up.", "thought": True, "thoughtSignature": "c2lnbmF0dXJl"},
                {"functionCall": {"name": "get_current_temperature", "args": {"location": "London"}},
                 "thoughtSignature": "Y2FsbA=="}]},
            {"role": "user", "parts": [{"functionResponse": {
                "name": "get_current_temperature", "response": {"temperature": 15, "unit": "Celsius"}}}]},
        ],
        "tools": [{"functionDeclarations": [{
            "name": "get_current_temperature", "description": "Gets the current temperature for a given location.",
            "parametersJsonSchema": {"type": "object", "properties": {"location": {"type": "string"}},
                                     "required": ["location"]}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_current_temperature"]}},
    },
    # Vertex AI's calls carry ids; a result answers by id, `output` or `error`.
    "calls with ids": {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris and in Oslo?"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "weather", "args": {"city": "Paris"}}},
                                        {"functionCall": {"id": "c2", "name": "weather", "args": {"city": "Oslo"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "c1", "name": "weather", "response": {"output": "18C"}}},
                                       {"functionResponse": {"id": "c2", "name": "weather",
                                                             "response": {"error": "no station"}}}]},
        ],
        "tools": [{"functionDeclarations": [{"name": "weather", "parametersJsonSchema": {"type": "object"}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    },
    # The image-understanding guide: inline bytes and a file by URI.
    "images": {
        "contents": [{"role": "user", "parts": [
            {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
            {"fileData": {"mimeType": "image/png", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}},
            {"text": "Caption these images."}]}],
    },
}  # fmt: skip


@pytest.mark.parametrize("body", DOCUMENTED_REQUESTS.values(), ids=list(DOCUMENTED_REQUESTS))
def test_a_documented_request_is_written_back_as_it_was_read(body: dict[str, Any]) -> None:
    messages, options = gemini.request_from_wire(body, model=MODEL)
    assert sent_by_sdk(gemini.request_to_wire(messages, options, model=None)) == camel(body)


def test_a_request_in_snake_case_reads_as_in_camel_case() -> None:
    """The API reads both spellings (the guides' curl examples write `system_instruction`)."""
    snake = {"system_instruction": {"parts": [{"text": "Be brief."}]}, "contents": [{"role": "user", "parts": [
        {"inline_data": {"mime_type": "image/png", "data": "iVBORw0K"}}]}],
        "generation_config": {"max_output_tokens": 9, "response_mime_type": "application/json"}}  # fmt: skip
    assert gemini.request_from_wire(snake, model=MODEL) == gemini.request_from_wire(camel(snake), model=MODEL)


def test_what_is_read_is_what_the_request_says() -> None:
    messages, options = gemini.request_from_wire(DOCUMENTED_REQUESTS["function calling"], model=MODEL)
    call, result = messages[1].contents[1], messages[2].contents[0]
    assert (call.name, call.parsed_arguments()) == ("get_current_temperature", {"location": "London"})  # type: ignore[union-attr]
    assert result.call_id == call.call_id  # type: ignore[union-attr]  # a response without id answers its named call
    assert options.tool_choice == ForcedTool("get_current_temperature")
    assert options.tools == [FunctionTool("get_current_temperature", {"type": "object", "properties": {
        "location": {"type": "string"}}, "required": ["location"]}, "Gets the current temperature for a given location.")]  # fmt: skip
    _, options = gemini.request_from_wire(DOCUMENTED_REQUESTS["text generation"], model=MODEL)
    assert (options.temperature, options.top_p, options.max_tokens, options.seed, options.stop) == (1.0, 0.8, 800, 7,
                                                                                                 ["Title"])  # fmt: skip
    assert options.extra_body == {"topK": 10, "thinkingConfig": {"thinkingBudget": 0},
                                  "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT",
                                                      "threshold": "BLOCK_ONLY_HIGH"}]}  # fmt: skip


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"contents": []}, "contents"),
        ({"contents": [{"role": "system", "parts": [{"text": "x"}]}]}, "contents[0].role"),
        ({"contents": [{"role": "user", "parts": [{"executableCode": {"code": "1"}}]}]}, "contents[0].parts[0]"),
        ({"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": [{"googleSearch": {}}]}, "tools[0]"),
        ({"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]},
         "contents[0].parts[0].functionResponse"),
        ({"contents": [{"role": "user", "parts": [{"text": "x"}]}],
          "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a", "b"]}}},
         "toolConfig.functionCallingConfig"),
        ({"contents": [{"role": "user", "parts": [{"text": "x"}]}], "generationConfig": {"maxOutputTokens": "9"}},
         "max_output_tokens"),
    ],
)  # fmt: skip
def test_a_request_the_codec_cannot_read_is_a_wire_error_naming_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as info:
        gemini.request_from_wire(body, model=MODEL)
    assert info.value.param == param


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30)


@settings(max_examples=40)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=5),
    instructions=st.none() | TEXT,
    temperature=st.none() | st.floats(0, 2),
    seed=st.none() | st.integers(0, 2**31),
    max_tokens=st.none() | st.integers(1, 4096),
    stop=st.none() | st.lists(TEXT, min_size=1, max_size=3),
    tools=st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3),
    schema=st.none() | st.just({"type": "object", "properties": {"a": {"type": "integer"}}}),
)
def test_requests_read_back_what_was_written(
    texts: list[str],
    instructions: str | None,
    temperature: float | None,
    seed: int | None,
    max_tokens: int | None,
    stop: list[str] | None,
    tools: list[str],
    schema: dict[str, Any] | None,
) -> None:
    turns = [ChatMessage("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(texts)]
    options = ChatOptions(
        model=MODEL, instructions=instructions, temperature=temperature, seed=seed, max_tokens=max_tokens, stop=stop,
        tools=[FunctionTool(name, {"type": "object", "properties": {}}) for name in tools] or None,
        response_format=ResponseFormat.json_schema(schema) if schema else None,
    )  # fmt: skip
    read_messages, read_options = gemini.request_from_wire(
        sent_by_sdk(gemini.request_to_wire(turns, options, model=None)), model=MODEL
    )
    assert [(m.role, m.text) for m in read_messages] == [(m.role, m.text) for m in turns]
    assert read_options == options


# ---------------------------------------------------------------- answers

DOCUMENTED_ANSWERS = {
    # The reference's `GenerateContentResponse` example.
    "text": {
        "candidates": [{"content": {"parts": [{"text": "AI learns patterns from data."}], "role": "model"},
                        "finishReason": "STOP", "index": 0,
                        "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"}]}],
        "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 7, "totalTokenCount": 15,
                          "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 8}]},
        "modelVersion": "gemini-2.5-flash", "responseId": "resp-1",
    },
    # The thinking guide: a thought summary, the answer, thoughts counted apart, a cached prefix.
    "thinking": {
        "candidates": [{"content": {"role": "model", "parts": [
            {"text": "**Counting** the paws.", "thought": True, "thoughtSignature": "c2lnbmF0dXJl"},
            {"text": "There are 10 paws."}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 6, "thoughtsTokenCount": 40,
                          "cachedContentTokenCount": 4, "totalTokenCount": 66},
        "modelVersion": "gemini-2.5-pro", "responseId": "resp-2",
    },
    # The function-calling guide: a call (no id on the Developer API), ended by STOP.
    "function call": {
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "get_current_temperature", "args": {"location": "London"}}}]},
            "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5, "totalTokenCount": 55},
        "modelVersion": "gemini-2.5-flash",
    },
    # The thought-signatures guide: Gemini 3 signs the first call of a turn.
    "signed function call": {
        "candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "check_flight", "args": {"flight": "AA100"}}, "thoughtSignature": "U2lnX0E="}]},
            "finishReason": "STOP"}],
        "modelVersion": "gemini-3-pro-preview",
    },
    "cut at the token limit": {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Once upon a"}]}, "finishReason": "MAX_TOKENS"}],
        "modelVersion": "gemini-2.5-flash",
    },
    "safety": {
        "candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "SAFETY"}],
        "modelVersion": "gemini-2.5-flash",
    },
}  # fmt: skip


@pytest.mark.parametrize("body", DOCUMENTED_ANSWERS.values(), ids=list(DOCUMENTED_ANSWERS))
def test_a_documented_answer_is_written_back_as_it_was_read(body: dict[str, Any]) -> None:
    assert gemini.response_to_wire(gemini.response_from_wire(body)) == carried(body)


@pytest.mark.parametrize("body", DOCUMENTED_ANSWERS.values(), ids=list(DOCUMENTED_ANSWERS))
def test_the_sdks_answer_object_reads_as_its_json(body: dict[str, Any]) -> None:
    """What the adapter reads (the SDK's `GenerateContentResponse`, signatures as bytes) is written
    back as the JSON it came from."""
    answer = types.GenerateContentResponse.model_validate(body)
    assert gemini.response_to_wire(gemini.response_from_wire(answer)) == carried(body)


def test_what_is_read_from_an_answer_is_what_it_says() -> None:
    answer = gemini.response_from_wire(DOCUMENTED_ANSWERS["thinking"])
    assert (answer.text, answer.finish_reason, answer.model_id) == ("There are 10 paws.", "stop", "gemini-2.5-pro")
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.usage.reasoning_tokens) == (20, 46, 40)
    assert gemini.response_from_wire(DOCUMENTED_ANSWERS["function call"]).finish_reason == "tool_calls"


def test_a_refusal_is_written_as_a_blocked_prompt() -> None:
    blocked = {"promptFeedback": {"blockReason": "OTHER", "blockReasonMessage": "not this"}}
    answer = gemini.response_from_wire(blocked)
    assert answer.finish_reason == "content_filter" and answer.refusal
    assert gemini.response_to_wire(answer)["promptFeedback"]["blockReason"] == "OTHER"


@pytest.mark.parametrize("reason", list(FinishReason), ids=str)
def test_each_reason_is_read_back_as_written(reason: FinishReason) -> None:
    """A reason reads back as itself, except the two Gemini has no name for: tool calls end with
    STOP (the calls say it), a refusal is a safety stop."""
    written = gemini.finish_reason_to_wire(reason)
    if written is not None:
        read = gemini.FINISH_REASONS[written]
        expected = {FinishReason.TOOL_CALLS: FinishReason.STOP, FinishReason.REFUSAL: FinishReason.CONTENT_FILTER}
        assert read is expected.get(reason, reason)
