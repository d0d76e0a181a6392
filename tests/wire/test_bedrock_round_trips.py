"""The Converse request both ways: `request_to_wire(request_from_wire(x)) == x` on whole documented
`converse` requests, and `request_from_wire(request_to_wire(v))` gives `v` back for generated values
(hypothesis).

The requests are shaped as the Converse API reference documents `ConverseRequest`
(docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html, and botocore's
bedrock-runtime service model): system blocks, turns with text, images and documents, tool use and
tool results, signed reasoning, `inferenceConfig`, tool specs (with `strict`) and each `toolChoice`,
`outputConfig.textFormat` with its schema as a JSON string, and fields read into `extra_body`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from so_middleware import (
    ChatMessage,
    ChatOptions,
    DataContent,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ResponseFormat,
)
from so_middleware.wire import bedrock
from so_middleware.wire.common import WireError

MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
           "additionalProperties": False}  # fmt: skip
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}  # fmt: skip
WEATHER_TOOL = {"toolSpec": {"name": "get_weather", "description": "The weather in a city",
                             "inputSchema": {"json": WEATHER}, "strict": True}}  # fmt: skip

DOCUMENTED_REQUESTS: dict[str, dict[str, Any]] = {
    "text with system and inference config": {
        "modelId": MODEL,
        "system": [{"text": "You are an app that creates playlists for a radio station."}, {"text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"text": "Create a list of 3 pop songs."}]},
            {"role": "assistant", "content": [{"text": "1. Flowers 2. Anti-Hero 3. Vampire"}]},
            {"role": "user", "content": [{"text": "Make sure the songs are by artists from the United Kingdom."}]},
        ],
        "inferenceConfig": {"maxTokens": 512, "temperature": 0.5, "topP": 0.9, "stopSequences": ["\n\nHuman:"]},
    },
    "an image and a document": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [
            {"text": "What is in this image, and what does the report say?"},
            {"image": {"format": "png", "source": {"bytes": PNG}}},
            {"document": {"format": "pdf", "name": "document", "source": {"bytes": b"%PDF-1.7"}}},
            {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/photo.jpg"}}}},
        ]}],
    },
    "tools, a call and its results": {
        "modelId": MODEL,
        "messages": [
            {"role": "user", "content": [{"text": "What is the weather in Oslo and Paris?"}]},
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Two cities: two calls.", "signature": "c2ln"}}},
                {"text": "Let me look."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Oslo"}}},
                {"toolUse": {"toolUseId": "tooluse_2", "name": "get_weather", "input": {"city": "Paris"}}},
            ]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "sunny"}], "status": "success"}},
                {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "no such city"}], "status": "error"}},
                {"text": "And tomorrow?"},
            ]},
        ],
        "toolConfig": {"tools": [WEATHER_TOOL], "toolChoice": {"auto": {}}},
    },
    "any tool": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "Weather in Oslo?"}]}],
        "toolConfig": {"tools": [WEATHER_TOOL, {"toolSpec": {"name": "noop", "inputSchema": {"json": {"type": "object"}}}}],
                       "toolChoice": {"any": {}}},
    },
    "a named tool": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "Weather in Oslo?"}]}],
        "toolConfig": {"tools": [WEATHER_TOOL], "toolChoice": {"tool": {"name": "get_weather"}}},
    },
    "tools without a choice": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "Weather in Oslo?"}]}],
        "toolConfig": {"tools": [WEATHER_TOOL]},
    },
    "structured output": {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": "Ada Lovelace was 36."}]}],
        "inferenceConfig": {"temperature": 0},
        "outputConfig": {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {
            "schema": json.dumps(PERSON), "name": "Person", "description": "A person and their age"}}}},
    },
    "fields of the model and the service": {
        "modelId": MODEL,
        "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "additionalModelRequestFields": {"top_k": 20},
        "guardrailConfig": {"guardrailIdentifier": "gr-1", "guardrailVersion": "1", "trace": "enabled"},
        "performanceConfig": {"latency": "optimized"},
        "requestMetadata": {"team": "search"},
    },
}  # fmt: skip


@pytest.mark.parametrize("body", DOCUMENTED_REQUESTS.values(), ids=list(DOCUMENTED_REQUESTS))
def test_a_documented_request_is_written_back_as_it_was_read(body: dict[str, Any]) -> None:
    messages, options = bedrock.request_from_wire(body)
    assert bedrock.request_to_wire(messages, options, model=None) == body


def test_what_is_read_is_what_the_request_says() -> None:
    messages, options = bedrock.request_from_wire(DOCUMENTED_REQUESTS["tools, a call and its results"])
    assert [message.role for message in messages] == ["user", "assistant", "tool", "user"]
    calls = [c for c in messages[1].contents if isinstance(c, FunctionCallContent)]
    assert [(c.call_id, c.parsed_arguments()) for c in calls] == [("tooluse_1", {"city": "Oslo"}),
                                                                  ("tooluse_2", {"city": "Paris"})]  # fmt: skip
    results = messages[2].contents
    assert [(r.call_id, r.result, r.is_error) for r in results if isinstance(r, FunctionResultContent)] == [
        ("tooluse_1", "sunny", False), ("tooluse_2", "no such city", True)]  # fmt: skip
    assert options.tools == [FunctionTool("get_weather", WEATHER, "The weather in a city", strict=True)]
    assert options.tool_choice == "auto"
    _, options = bedrock.request_from_wire(DOCUMENTED_REQUESTS["a named tool"])
    assert options.tool_choice == ForcedTool("get_weather")
    _, options = bedrock.request_from_wire(DOCUMENTED_REQUESTS["structured output"])
    assert options.response_format == ResponseFormat.json_schema(PERSON, name="Person",
                                                                 description="A person and their age")  # fmt: skip
    messages, options = bedrock.request_from_wire(DOCUMENTED_REQUESTS["text with system and inference config"])
    assert [m.text for m in messages[:2]] == ["You are an app that creates playlists for a radio station.", "Be brief."]
    assert (options.max_tokens, options.temperature, options.top_p, options.stop) == (512, 0.5, 0.9, ["\n\nHuman:"])
    messages, _ = bedrock.request_from_wire(DOCUMENTED_REQUESTS["an image and a document"])
    assert [c.media_type for c in messages[0].contents if isinstance(c, DataContent)] == [
        "image/png", "application/pdf", "image/jpeg"]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"modelId": MODEL, "messages": []}, "messages"),
        ({"modelId": MODEL, "messages": [{"role": "system", "content": []}]}, "messages[0].role"),
        ({"modelId": MODEL, "messages": [{"role": "user", "content": [{"video": {}}]}]}, "messages[0].content[0]"),
        ({"modelId": MODEL, "messages": [{"role": "user", "content": [{"image": {"format": "tiff", "source": {}}}]}]},
         "messages[0].content[0].image.format"),
        ({"modelId": MODEL, "messages": [{"role": "user", "content": [{"text": "x"}]}],
          "toolConfig": {"tools": [{"toolSpec": {"name": "f"}}]}}, "toolConfig.tools[0].toolSpec"),
        ({"modelId": MODEL, "messages": [{"role": "user", "content": [{"text": "x"}]}],
          "outputConfig": {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"schema": "{"}}}}},
         "outputConfig.textFormat.structure.jsonSchema.schema"),
    ],
)  # fmt: skip
def test_a_field_that_cannot_be_read_is_a_wire_error_naming_it(body: dict[str, Any], param: str) -> None:
    with pytest.raises(WireError) as info:
        bedrock.request_from_wire(body)
    assert info.value.param == param


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=20)
_contents = st.one_of(
    _text.map(lambda text: ChatMessage("user", text)),
    _text.map(lambda text: ChatMessage("assistant", text)),
    st.binary(min_size=1, max_size=16).map(lambda data: ChatMessage("user", [DataContent(data, "image/png")])),
)


@settings(max_examples=60, deadline=None)
@given(
    turns=st.lists(_contents, min_size=1, max_size=4),
    instructions=st.one_of(st.none(), _text),
    max_tokens=st.one_of(st.none(), st.integers(1, 4096)),
    temperature=st.one_of(st.none(), st.floats(0, 1)),
)
def test_a_request_written_and_read_back_is_the_request(
    turns: list[ChatMessage], instructions: str | None, max_tokens: int | None, temperature: float | None
) -> None:
    options = ChatOptions(model=MODEL, instructions=instructions, max_tokens=max_tokens, temperature=temperature,
                          tools=[FunctionTool("get_weather", WEATHER, strict=True)], tool_choice="required",
                          response_format=ResponseFormat.json_schema(PERSON, name="Person"))  # fmt: skip
    body = bedrock.request_to_wire(turns, options, model=None)
    messages, read = bedrock.request_from_wire(body)
    assert bedrock.request_to_wire(messages, read, model=None) == body
    assert (read.model, read.max_tokens, read.temperature, read.tools, read.tool_choice, read.response_format) == (
        options.model, options.max_tokens, options.temperature, options.tools, options.tool_choice,
        options.response_format)  # fmt: skip
