"""The Open Responses OpenAPI document (`spec/openapi.json`) as JSON-schema validators, one per
component, with `$ref`s resolved by `referencing` against the document itself."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
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


def event_problems(event: dict[str, Any]) -> list[str]:
    """Every way a streamed event breaks the schema of its type (an unknown type is a problem)."""
    component = _event_components().get(event.get("type", ""))
    if component is None:
        return [f"{event.get('type')!r} is not an event of the spec"]
    return problems(component, event)
