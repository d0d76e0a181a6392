"""The Open Responses OpenAPI document (`spec/openapi.json`) as JSON-schema validators, one per
component, with `$ref`s resolved by `referencing` against the document itself."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from openai.types.responses import (
    CustomTool,
    ResponseCustomToolCall,
    ResponseCustomToolCallInputDeltaEvent,
    ResponseCustomToolCallInputDoneEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ToolChoiceCustom,
)
from pydantic import BaseModel, ValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SPEC = Path(__file__).parent / "spec" / "openapi.json"
_URI = "urn:openresponses:openapi"

# The one component whose published form no server can meet: `schema` admits only null, so a
# json_schema format echoed with its schema (as OpenAI's API and every SDK expect) would fail.
# Corrected here to "an object or null", the shape the request side (`JsonSchemaResponseFormatParam`) takes,
# and the one upstream has since given it; the spec here stays the newest a package registry ships.
_SPEC_SLIPS = {("JsonSchemaResponseFormat", "schema"): {"anyOf": [{"type": "object"}, {"type": "null"}]}}

# OpenAI's names for the spec's reasoning events: sent unless the client asks for the spec's (see
# docs/how-to/gateway.md), not in the spec.
OPENAI_ONLY_EVENTS = {"response.reasoning_text.delta", "response.reasoning_text.done"}

# OpenAI's custom tools, which the spec leaves out (its tools are function tools only): a request that
# offers one gets it echoed in `tools` (and in `tool_choice` when forced), and its calls as
# `custom_tool_call` output items, streamed with `response.custom_tool_call_input.*` events. With
# `custom_tools=True` those pieces are checked against the OpenAI SDK's types, and the rest of the
# answer against the spec.
_CUSTOM_TOOL_TYPES: dict[str, type[BaseModel]] = {
    "custom": CustomTool,
    "custom_tool_call": ResponseCustomToolCall,
    "response.custom_tool_call_input.delta": ResponseCustomToolCallInputDeltaEvent,
    "response.custom_tool_call_input.done": ResponseCustomToolCallInputDoneEvent,
}
_ITEM_EVENTS: dict[str, type[BaseModel]] = {
    "response.output_item.added": ResponseOutputItemAddedEvent,
    "response.output_item.done": ResponseOutputItemDoneEvent,
}


@cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(SPEC.read_text())
    for (component, field), schema in _SPEC_SLIPS.items():
        document["components"]["schemas"][component]["properties"][field] = schema
    return document


@cache
def validator(component: str) -> Draft202012Validator:
    """The validator of one `components/schemas` entry."""
    registry: Registry[Any] = Registry().with_resource(_URI, Resource.from_contents(_document(), DRAFT202012))
    return Draft202012Validator({"$ref": f"{_URI}#/components/schemas/{component}"}, registry=registry)


def problems(component: str, value: Any) -> list[str]:
    """Every way `value` breaks the component's schema (empty when it validates)."""
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"[:300] for e in validator(component).iter_errors(value)
    ]


def list_problems(page: dict[str, Any]) -> list[str]:
    """Every way an `input_items` page breaks the spec: each of its `data` items is an `ItemField`; the page
    itself is OpenAI's list (`object`, `data`, `first_id`, `last_id`, `has_more`), which the spec leaves out."""
    found = [f"{key} is missing" for key in ("object", "data", "first_id", "last_id", "has_more") if key not in page]
    for index, item in enumerate(page.get("data") or []):
        found += [f"data/{index}: {p}" for p in problems("ItemField", item)]
    return found


@cache
def _event_components() -> dict[str, str]:
    schemas = _document()["components"]["schemas"]
    return {
        schema["properties"]["type"]["enum"][0]: name
        for name, schema in schemas.items()
        if name.endswith("StreamingEvent") and "type" in schema.get("properties", {})
    }


def event_problems(event: dict[str, Any], *, custom_tools: bool = False) -> list[str]:
    """Every way a streamed event breaks the schema of its type (an unknown type is a problem); with
    CUSTOM_TOOLS, OpenAI's custom tool pieces are checked against OpenAI's types."""
    kind = event.get("type", "")
    if custom_tools and (kind in _CUSTOM_TOOL_TYPES or (kind in _ITEM_EVENTS and _is_custom(event.get("item")))):
        return _openai_problems(_CUSTOM_TOOL_TYPES.get(kind) or _ITEM_EVENTS[kind], event)
    found: list[str] = []
    if custom_tools and isinstance(event.get("response"), dict):
        spec_side, found = _without_custom_tools(event["response"], "response/")
        event = {**event, "response": spec_side}
    component = _event_components().get(kind)
    if component is None:
        return [*found, f"{kind!r} is not an event of the spec"]
    return found + problems(component, event)


def response_problems(response: dict[str, Any], *, custom_tools: bool = False) -> list[str]:
    """Every way a response object breaks the spec's `ResponseResource`; with CUSTOM_TOOLS, its
    custom tools and `custom_tool_call` items are checked against OpenAI's types."""
    if not custom_tools:
        return problems("ResponseResource", response)
    spec_side, found = _without_custom_tools(response, "")
    return found + problems("ResponseResource", spec_side)


def _is_custom(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _CUSTOM_TOOL_TYPES


def _openai_problems(model: type[BaseModel], value: Any) -> list[str]:
    try:
        model.model_validate(value)
    except ValidationError as error:
        return [f"{'/'.join(map(str, e['loc']))}: {e['msg']}"[:300] for e in error.errors()]
    return []


def _without_custom_tools(response: dict[str, Any], where: str) -> tuple[dict[str, Any], list[str]]:
    """(RESPONSE without its custom tools and custom tool calls, a forced custom tool as the spec's forced
    function; the problems OpenAI's types find in what was taken out), paths under WHERE."""
    spec_side, found = dict(response), []
    for key in ("tools", "output"):
        if isinstance(entries := response.get(key), list):
            for index, entry in enumerate(entries):
                if _is_custom(entry):
                    model = _CUSTOM_TOOL_TYPES[entry["type"]]
                    found += [f"{where}{key}/{index}: {p}" for p in _openai_problems(model, entry)]
            spec_side[key] = [entry for entry in entries if not _is_custom(entry)]
    if isinstance(choice := response.get("tool_choice"), dict) and choice.get("type") == "custom":
        found += [f"{where}tool_choice: {p}" for p in _openai_problems(ToolChoiceCustom, choice)]
        spec_side["tool_choice"] = {"type": "function", "name": choice.get("name")}
    return spec_side, found
