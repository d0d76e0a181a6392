"""The unmodified OpenAI SDK against the gateway, over real sockets, in front of the real local
llama-server (SmolLM2-135M): `text.format` reaches the backend, so the schema is grammar-enforced."""

from __future__ import annotations

import json

import openai
import pytest
from pydantic import BaseModel, Field

pytestmark = pytest.mark.local_server

MODEL = "smollm2"


class Person(BaseModel):
    """Bounded by its schema: llama.cpp's grammar allows at most 12 characters of name, an age of
    at most 3 digits and bounded whitespace, so every answer closes well within 400 tokens, however
    the 135M model samples (a free `str` can repeat "johnjohn..." until any limit)."""

    name: str = Field(max_length=12)
    age: int = Field(ge=0, le=150)


PROMPT = "John Smith is a 35-year-old engineer. Extract the person."


def test_parse_returns_a_typed_person(gateway_sdk: openai.OpenAI) -> None:
    response = gateway_sdk.responses.parse(model=MODEL, input=PROMPT, text_format=Person, max_output_tokens=400)
    assert response.status == "completed"
    assert isinstance(response.output_parsed, Person)
    # the request's text.format is echoed as sent (FR-008)
    assert response.text.format.type == "json_schema"
    assert response.text.format.name == "Person"
    assert response.usage is not None and response.usage.output_tokens > 0
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens


def test_stream_yields_deltas_and_a_parsed_final(gateway_sdk: openai.OpenAI) -> None:
    with gateway_sdk.responses.stream(model=MODEL, input=PROMPT, text_format=Person, max_output_tokens=400) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [event.type for event in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]  # fmt: skip
    assert kinds.count("response.output_text.delta") >= 2
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"]  # fmt: skip
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert deltas == final.output_text
    assert isinstance(final.output_parsed, Person)


def test_json_object_returns_parseable_json(gateway_sdk: openai.OpenAI) -> None:
    response = gateway_sdk.responses.create(
        model=MODEL, input='Reply with the JSON object {"name": "Tom"}', text={"format": {"type": "json_object"}},
        max_output_tokens=200, temperature=0,
    )  # fmt: skip
    assert response.status == "completed"
    assert isinstance(json.loads(response.output_text), dict)
    assert response.text.format.type == "json_object"


def test_a_length_finish_is_incomplete(gateway_sdk: openai.OpenAI) -> None:
    response = gateway_sdk.responses.create(model=MODEL, input="Tell a long story about the sea.", max_output_tokens=5)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    assert response.output[0].status == "incomplete"


def test_ids_are_unique(gateway_sdk: openai.OpenAI) -> None:
    first = gateway_sdk.responses.create(model=MODEL, input="Say hi.", max_output_tokens=5)
    second = gateway_sdk.responses.create(model=MODEL, input="Say hi.", max_output_tokens=5)
    assert first.id.startswith("resp_") and second.id.startswith("resp_") and first.id != second.id
    assert first.output[0].id != second.output[0].id
