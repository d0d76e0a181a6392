"""Seed 004 against a recording Chat Completions backend on loopback: what the backend received,
byte for byte, for every `text.format` (SC-001, SC-002, FR-001…FR-009), streaming and not."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from so_middleware import responses_format_to_chat
from so_middleware.gateway import chat_response_format

ODD_SCHEMA_FORMAT = {
    "type": "json_schema",
    "strict": False,
    "description": "odd keywords, kept as given",
    "name": "Odd",
    "x-vendor-extension": {"keep": [1, 2.5, None]},
    "schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"N": {"type": "number", "multipleOf": 0.5, "exclusiveMinimum": 1.0}},
        "properties": {
            "née": {"type": "string", "pattern": "^[\\p{L} ]+$", "x-order": 3},
            "n": {"$ref": "#/$defs/N"},
            "tags": {"type": "array", "prefixItems": [{"const": "a"}], "unevaluatedItems": False},
        },
        "patternProperties": {"^x-": {}},
        "dependentRequired": {"n": ["née"]},
        "if": {"required": ["n"]},
        "then": {"minProperties": 2},
        "required": [],
        "additionalProperties": True,
    },
}
FORMATS = [
    pytest.param({"type": "json_object"}, id="json_object"),
    pytest.param({"type": "json_schema", "name": "p", "schema": {"type": "object"}, "strict": True}, id="json_schema"),
    pytest.param(ODD_SCHEMA_FORMAT, id="odd-schema"),
    pytest.param({"type": "json_schema", "schema": {"type": "object"}}, id="no-name"),
    pytest.param({"type": "grammar", "grammar": 'root ::= "yes"', "syntax": "gbnf"}, id="unknown-type"),
]


def _post(url: str, body: dict[str, Any], **kwargs: Any) -> httpx2.Response:
    return httpx2.post(f"{url}/responses", content=json.dumps(body).encode(), timeout=30,
                       headers={"content-type": "application/json"}, **kwargs)  # fmt: skip


def _received_format(raw: bytes) -> str | None:
    """The backend body's response_format, serialised again in the order received."""
    body = json.loads(raw)
    return json.dumps(body["response_format"]) if "response_format" in body else None


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("text_format", FORMATS)
def test_backend_receives_the_format_byte_equal(fake_gateway: Any, text_format: dict[str, Any], stream: bool) -> None:
    backend, gateway = fake_gateway()
    reply = _post(gateway.base_url, {"model": "m", "input": "hi", "text": {"format": text_format}, "stream": stream})
    assert reply.status_code == 200, reply.text
    expected = chat_response_format(text_format)
    assert _received_format(backend.raw_bodies[-1]) == json.dumps(expected)
    if text_format["type"] == "json_schema":  # json_schema: the fields nested, every key and its order kept
        assert list(expected["json_schema"]) == [k for k in text_format if k != "type"]
    else:
        assert expected == text_format
    # the library's own translation, the same one: every key, its value and its order
    assert json.dumps(responses_format_to_chat(text_format)) == json.dumps(expected)


def test_the_format_is_echoed_as_received(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    reply = _post(gateway.base_url, {"model": "m", "input": "hi", "text": {"format": ODD_SCHEMA_FORMAT}})
    assert json.dumps(reply.json()["text"]["format"]) == json.dumps(ODD_SCHEMA_FORMAT)


@pytest.mark.parametrize(
    "text", [None, {"format": {"type": "text"}}, {"verbosity": "low"}], ids=["absent", "text", "no-format"]
)
def test_no_response_format_for_text_or_none(fake_gateway: Any, text: dict[str, Any] | None) -> None:
    backend, gateway = fake_gateway()
    body: dict[str, Any] = {"model": "m", "input": "hi"}
    if text is not None:
        body["text"] = text
    assert _post(gateway.base_url, body).status_code == 200
    assert "response_format" not in backend.bodies[-1]
    echoed = _post(gateway.base_url, body).json()["text"]["format"]
    assert echoed == {"type": "text"}


def test_sdk_parse_sends_its_schema_unchanged(fake_gateway: Any) -> None:
    """`responses.parse(text_format=...)` through the unmodified SDK: the SDK's own text.format arrives."""
    from pydantic import BaseModel

    class Person(BaseModel):
        name: str
        age: int

    backend, gateway = fake_gateway()
    sent: list[dict[str, Any]] = []
    http = httpx2.Client(event_hooks={"request": [lambda r: sent.append(json.loads(r.content))]})
    client = openai.OpenAI(base_url=gateway.base_url, api_key="none", http_client=http, max_retries=0)
    response = client.responses.parse(model="m", input="Ada, 36", text_format=Person)
    assert response.output_parsed == Person(name="Ada Lovelace", age=36)
    expected = chat_response_format(sent[0]["text"]["format"])
    assert _received_format(backend.raw_bodies[-1]) == json.dumps(expected)
    assert expected["json_schema"]["strict"] is True and expected["json_schema"]["name"] == "Person"
    client.close()
