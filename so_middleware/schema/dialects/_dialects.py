"""The schema dialects of Gemini, Amazon Bedrock, Mistral and Ollama.

Each is written from the provider's documented rules:

- `"gemini"`: Gemini's `response_json_schema` (JSON Schema, all active models since Nov 2025;
  ai.google.dev structured-output guide). Kept: `type`, `format`, `title`, `description`,
  `enum`, `items`, `prefixItems`, `minItems`/`maxItems`, `minimum`/`maximum`, `anyOf`,
  `properties`, `additionalProperties`, `required`, `propertyOrdering`, `$defs`/`$ref` (with only
  `$`-keyword siblings). Everything else goes into the description and is validated after the
  answer.
- `"gemini-openapi"`: the older `response_schema`, a subset of the OpenAPI 3.0 Schema Object
  (generativelanguage v1beta `Schema`): upper-case `type`, `nullable` instead of a null type,
  string-only `enum`, no `$ref` (inlined; recursion unrolled), no `additionalProperties`.
- `"bedrock"`: Converse `outputConfig.textFormat` and strict tools (docs.aws.amazon.com, Bedrock
  user guide "structured output"): the same subset as Anthropic's; recursion unrolled. The wire
  sends the schema as a JSON string.
- `"mistral"`: `response_format` json_schema with `strict: true`, which needs only
  `additionalProperties: false` on every object (docs.mistral.ai, custom structured outputs).
- `"ollama"`: the `format` of `/api/chat`, a JSON schema the engine compiles to a grammar;
  recursion unrolled, the rest sent as it is and validated after the answer.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from ...core import UserError
from ._transform import Problem, ProfileRules, transform_schema
from ._unroll import is_recursive, unroll_recursion

__all__ = [
    "ANTHROPIC",
    "BEDROCK",
    "GEMINI",
    "GEMINI_OPENAPI",
    "MISTRAL",
    "gemini_openapi",
    "order_properties",
    "render_dialect",
    "unrolled",
]

_COMMON_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)

GEMINI = ProfileRules(
    name="gemini",
    force_required=False,
    keep_default=False,
    const_as_enum=True,
    keep_numeric=True,
    numeric_keys=frozenset({"minimum", "maximum"}),
    keep_max_items=True,
    max_min_items=None,
    allow_recursion=True,
    allow_all_of=False,
    simple_patterns_only=False,
    keep_patterns=False,
    keep_prefix_items=True,
    open_objects=True,
    formats=frozenset({"date-time", "date", "time"}),
)

# The same rules, less what the OpenAPI subset cannot say: recursion, open objects, `prefixItems`.
GEMINI_OPENAPI = dataclasses.replace(
    GEMINI,
    name="gemini-openapi",
    allow_recursion=False,
    keep_prefix_items=False,
    open_objects=False,
    formats=frozenset({"date-time"}),
)

ANTHROPIC = ProfileRules(
    name="anthropic",
    force_required=False,
    keep_default=True,
    const_as_enum=False,
    keep_numeric=False,
    keep_max_items=False,
    max_min_items=1,
    allow_recursion=False,
    allow_all_of=True,
    simple_patterns_only=True,
    formats=_COMMON_FORMATS,
)

BEDROCK = dataclasses.replace(ANTHROPIC, name="bedrock")  # Bedrock's structured output takes Anthropic's subset

MISTRAL = ProfileRules(
    name="mistral",
    force_required=False,
    keep_default=True,
    const_as_enum=False,
    keep_numeric=True,
    keep_max_items=True,
    max_min_items=None,
    allow_recursion=True,
    allow_all_of=True,
    simple_patterns_only=False,
    formats=_COMMON_FORMATS,
)

_OPENAPI_TYPES = {
    "string": "STRING",
    "number": "NUMBER",
    "integer": "INTEGER",
    "boolean": "BOOLEAN",
    "array": "ARRAY",
    "object": "OBJECT",
}


def unrolled(base: dict[str, Any], *, depth: int, what: str, provider: str, always: bool = False) -> dict[str, Any]:
    """`base` with its recursion unrolled to `depth` (every `$ref` inlined with `always=True`)."""
    if not always and not is_recursive(base):
        return base
    return unroll_recursion(base, depth=depth, what=what, provider=provider)


def order_properties(schema: Any) -> Any:
    """Add Gemini's `propertyOrdering` (the declared order) to every object with properties."""
    if isinstance(schema, list):
        return [order_properties(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {
        key: (value if key in ("enum", "const", "default", "properties") else order_properties(value))
        for key, value in schema.items()
    }
    for key in ("$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            out[key] = {name: order_properties(sub) for name, sub in schema[key].items()}
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        out["properties"] = {name: order_properties(sub) for name, sub in properties.items()}
        out["propertyOrdering"] = list(properties)
    return out


def gemini_openapi(schema: dict[str, Any], path: str = "") -> tuple[dict[str, Any], list[Problem]]:
    """A transformed, `$ref`-free schema spelled as Gemini's OpenAPI subset, and what it cannot say."""
    problems: list[Problem] = []
    return _openapi_node(schema, path, problems), problems


def _openapi_node(node: dict[str, Any], path: str, problems: list[Problem]) -> dict[str, Any]:
    out = dict(node)
    out.pop("additionalProperties", None)
    if isinstance(out.get("anyOf"), list):
        branches = [branch for branch in out["anyOf"] if branch != {"type": "null"}]
        nullable = len(branches) < len(out["anyOf"])
        branches = [_openapi_node(branch, path, problems) for branch in branches]
        if not branches:
            problems.append(Problem(path, "a value that is always null cannot be expressed"))
        elif len(branches) == 1:
            out.pop("anyOf")
            out = {**branches[0], **{key: value for key, value in out.items() if key != "type"}}
        else:
            out["anyOf"] = branches
        if nullable:
            out["nullable"] = True
    kind = out.get("type")
    if isinstance(kind, list):
        kinds = [item for item in kind if item != "null"]
        if len(kinds) != 1:
            problems.append(Problem(path, f"type {kind!r} names several types; use anyOf"))
        else:
            out["type"] = kinds[0]
            if len(kinds) < len(kind):
                out["nullable"] = True
        kind = out.get("type")
    if kind == "null":
        problems.append(Problem(path, "a value that is always null cannot be expressed"))
    elif isinstance(kind, str):
        out["type"] = _OPENAPI_TYPES.get(kind, kind)
    if "enum" in out and not all(isinstance(value, str) for value in out["enum"]):
        values = out.pop("enum")
        out["description"] = _noted(out.get("description"), f"one of {values}")
    if isinstance(out.get("properties"), dict):
        out["properties"] = {
            name: _openapi_node(sub, f"{path}.{name}" if path else name, problems)
            for name, sub in out["properties"].items()
        }
        if not out["properties"]:
            problems.append(Problem(path, "an object without named properties (a dict) cannot be expressed"))
    if out.get("maxItems") == 0 and out.get("items") == {"type": "null"}:
        out["items"] = {"type": "STRING"}  # where recursion was cut: no item, so any item type
    elif isinstance(out.get("items"), dict):
        out["items"] = _openapi_node(out["items"], f"{path}[]", problems)
    return out


def _noted(description: Any, note: str) -> str:
    return f"{description} ({note})" if isinstance(description, str) and description else note


def render_dialect(
    base: dict[str, Any], profile: str, *, strict: bool, wrapped: bool, what: str, depth: int
) -> tuple[dict[str, Any], list[Problem]]:
    """The schema in one of this module's dialects, and the problems that keep it from being sent."""
    if profile == "ollama":
        return copy.deepcopy(unrolled(base, depth=depth, what=what, provider="Ollama")), []
    if profile == "bedrock":
        source = unrolled(base, depth=depth, what=what, provider="Amazon Bedrock")
        return transform_schema(source, BEDROCK, wrapped=wrapped)
    if profile == "mistral":
        schema, problems = transform_schema(base, MISTRAL, wrapped=wrapped)
        if problems and not strict:
            return copy.deepcopy(base), []
        return schema, problems
    if profile == "gemini":
        source = unrolled(base, depth=depth, what=what, provider="Gemini")
        schema, problems = transform_schema(source, GEMINI, wrapped=wrapped)
        return order_properties(schema), problems
    if profile == "gemini-openapi":
        source = unrolled(base, depth=depth, what=what, provider="Gemini (response_schema)", always=True)
        schema, problems = transform_schema(source, GEMINI_OPENAPI, wrapped=wrapped)
        if problems:
            return schema, problems
        converted, problems = gemini_openapi(schema)
        return order_properties(converted), problems
    raise UserError(f"Unknown schema profile {profile!r}.")
