"""The size limits providers document for strict schemas, checked on the final schema.

OpenAI (structured-outputs guide, "Supported schemas"): at most 5000 object properties in total,
10 levels of nesting, 1000 enum values, 120,000 characters of property names, definition names,
enum and const values, and 15,000 characters for one string enum of more than 250 values.
Anthropic (structured-outputs docs): at most 24 optional properties and 16 properties whose
schema is a union, summed over the request; a bigger schema fails with "too complex".
"""

from __future__ import annotations

from typing import Any

from .._schema_tools import definitions_of, ref_target
from ._transform import Problem

__all__ = ["anthropic_limit_problems", "openai_limit_problems"]

OPENAI_MAX_PROPERTIES = 5000
OPENAI_MAX_NESTING = 10
OPENAI_MAX_ENUM_VALUES = 1000
OPENAI_MAX_STRING_SIZE = 120_000
OPENAI_LARGE_ENUM = 250
OPENAI_LARGE_ENUM_MAX_CHARS = 15_000
ANTHROPIC_MAX_OPTIONAL = 24
ANTHROPIC_MAX_UNIONS = 16
_MAX_REF_HOPS = 200


def _nodes(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _is_schema_with_properties(node: dict[str, Any]) -> bool:
    return isinstance(node.get("properties"), dict) and (node.get("type") == "object" or "additionalProperties" in node)


def openai_limit_problems(schema: dict[str, Any]) -> list[Problem]:
    """Problems with the documented OpenAI strict-mode size limits."""
    problems: list[Problem] = []
    properties = 0
    enum_values = 0
    string_size = sum(len(name) for name in definitions_of(schema))
    for node in _nodes(schema):
        if _is_schema_with_properties(node):
            properties += len(node["properties"])
            string_size += sum(len(str(name)) for name in node["properties"])
        enum = node.get("enum")
        if isinstance(enum, list) and not (enum and all(isinstance(value, dict) for value in enum)):
            enum_values += len(enum)
            strings = [value for value in enum if isinstance(value, str)]
            chars = sum(len(value) for value in strings)
            string_size += chars
            if len(strings) > OPENAI_LARGE_ENUM and chars > OPENAI_LARGE_ENUM_MAX_CHARS:
                problems.append(
                    Problem(
                        "",
                        f"a string enum of {len(strings)} values totals {chars} characters "
                        f"(OpenAI allows {OPENAI_LARGE_ENUM_MAX_CHARS} above {OPENAI_LARGE_ENUM} values)",
                    )
                )
        if "const" in node and isinstance(node["const"], str):
            string_size += len(node["const"])
    if properties > OPENAI_MAX_PROPERTIES:
        problems.append(Problem("", f"{properties} object properties (OpenAI allows {OPENAI_MAX_PROPERTIES})"))
    if enum_values > OPENAI_MAX_ENUM_VALUES:
        problems.append(Problem("", f"{enum_values} enum values (OpenAI allows {OPENAI_MAX_ENUM_VALUES})"))
    if string_size > OPENAI_MAX_STRING_SIZE:
        problems.append(
            Problem("", f"{string_size} characters of names and enum values (OpenAI allows {OPENAI_MAX_STRING_SIZE})")
        )
    depth = _NestingMeter(schema).depth(schema)
    if depth > OPENAI_MAX_NESTING:
        problems.append(Problem("", f"{depth} levels of object nesting (OpenAI allows {OPENAI_MAX_NESTING})"))
    return problems


def anthropic_limit_problems(schema: dict[str, Any]) -> list[Problem]:
    """Problems with Anthropic's documented compilation limits."""
    optional = 0
    unions = 0
    for node in _nodes(schema):
        if not _is_schema_with_properties(node):
            continue
        required = set(node.get("required", []))
        for name, sub in node["properties"].items():
            if name not in required:
                optional += 1
            if isinstance(sub, dict) and ("anyOf" in sub or isinstance(sub.get("type"), list)):
                unions += 1
    problems: list[Problem] = []
    if optional > ANTHROPIC_MAX_OPTIONAL:
        problems.append(Problem("", f"{optional} optional properties (Anthropic allows {ANTHROPIC_MAX_OPTIONAL})"))
    if unions > ANTHROPIC_MAX_UNIONS:
        problems.append(Problem("", f"{unions} properties with union types (Anthropic allows {ANTHROPIC_MAX_UNIONS})"))
    return problems


class _NestingMeter:
    """Deepest chain of nested objects, following `$ref`s but not around a recursion loop."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.defs = definitions_of(root)
        self.memo: dict[str, int] = {}
        self.active: set[str] = set()
        self.hops = 0

    def depth(self, node: Any) -> int:
        if isinstance(node, list):
            return max((self.depth(item) for item in node), default=0)
        if not isinstance(node, dict):
            return 0
        deepest = 0
        target = ref_target(node.get("$ref"))
        if target is not None and target != "#":
            deepest = self._ref_depth(target)
        for key in ("properties", "items", "anyOf", "allOf", "prefixItems"):
            child = node.get(key)
            if key == "properties" and isinstance(child, dict):
                deepest = max([deepest, *(self.depth(sub) for sub in child.values())])
            elif child is not None:
                deepest = max(deepest, self.depth(child))
        return deepest + (1 if node.get("type") == "object" else 0)

    def _ref_depth(self, target: str) -> int:
        if target in self.memo:
            return self.memo[target]
        self.hops += 1
        if target in self.active or target not in self.defs or self.hops > _MAX_REF_HOPS:
            return 0
        self.active.add(target)
        result = self.depth(self.defs[target])
        self.active.discard(target)
        self.memo[target] = result
        return result
