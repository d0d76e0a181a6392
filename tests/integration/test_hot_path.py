"""The happy path's cheaper pieces keep their behaviour: schemas are still fresh copies per call
(a request's and a response's own, though a plan shares the cached one), and checking a profile
raises what rendering it raises."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from pydantic import BaseModel

from so_middleware import ResponseFormat, UserError, with_structured_output
from so_middleware.core import copy_json
from so_middleware.openai import OPENAI_API, OpenAIChatClient
from so_middleware.schema import OutputSchema
from so_middleware.wire.chat import response_format_to_wire


class Person(BaseModel):
    name: str
    tags: list[str]


def test_copy_json_is_a_deep_copy() -> None:
    value = {"a": [1, {"b": (2, 3)}], "c": {"d": None}}
    copied = copy_json(value)
    assert copied == value
    copied["a"][1]["b"] = "changed"
    copied["c"]["d"] = 1
    assert value == {"a": [1, {"b": (2, 3)}], "c": {"d": None}}


def test_copy_json_copies_containers_inside_lists_and_tuples_and_keeps_scalars() -> None:
    value = {"enum": [["x"], ("y", ["z"])], "n": 1.5, "ok": True}
    copied = copy_json(value)
    assert copied == value and type(copied["enum"][1]) is tuple
    copied["enum"][0].append("changed")
    copied["enum"][1][1].append("changed")
    assert value == {"enum": [["x"], ("y", ["z"])], "n": 1.5, "ok": True}


def test_json_schema_is_a_fresh_copy_each_call() -> None:
    schema = OutputSchema(Person)
    first = schema.json_schema()
    first["properties"]["name"]["type"] = "integer"
    assert schema.json_schema()["properties"]["name"]["type"] == "string"


def test_check_profile_raises_what_json_schema_raises() -> None:
    assert OutputSchema(Person).check_profile("anthropic") is None
    plain = OutputSchema(str)
    with pytest.raises(UserError) as rendered:
        plain.json_schema()
    with pytest.raises(UserError) as checked:
        plain.check_profile()
    assert str(checked.value) == str(rendered.value)


def test_request_schema_is_not_the_format_schema() -> None:
    fmt = ResponseFormat.json_schema({"type": "object", "properties": {"x": {"type": "integer"}}}, name="X")
    wire = response_format_to_wire(fmt)
    assert wire is not None
    wire["json_schema"]["schema"]["properties"]["x"]["type"] = "string"
    assert fmt.schema is not None and fmt.schema["properties"]["x"]["type"] == "integer"


def test_json_schema_view_is_the_shared_schema_json_schema_copies() -> None:
    schema = OutputSchema(Person)
    view = schema.json_schema_view()
    assert view == schema.json_schema() and view is schema.json_schema_view()
    assert schema.json_schema_view("anthropic") == schema.json_schema("anthropic")


@pytest.mark.anyio
async def test_a_responses_format_is_its_own_so_changing_it_changes_no_later_request() -> None:
    sent: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        message = {"role": "assistant", "content": '{"name": "Ada", "tags": ["x"]}'}
        completion = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                      "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
        return httpx2.Response(200, json=completion)

    sdk = openai.AsyncOpenAI(
        api_key="x", base_url="http://mock/v1", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    )
    client = with_structured_output(OpenAIChatClient(sdk, "m", capabilities=OPENAI_API))
    first = await client.get_response("Ada", output_type=Person)
    assert first.response_format is not None and first.response_format.schema is not None
    first.response_format.schema["properties"]["name"]["type"] = "integer"
    second = await client.get_response("Ada", output_type=Person)
    assert [body["response_format"]["json_schema"]["schema"]["properties"]["name"]["type"] for body in sent] == [
        "string",
        "string",
    ]
    assert second.response_format == ResponseFormat.json_schema(
        OutputSchema(Person).json_schema(), name="Person", strict=True
    )
    assert OutputSchema(Person).json_schema_view()["properties"]["name"]["type"] == "string"
