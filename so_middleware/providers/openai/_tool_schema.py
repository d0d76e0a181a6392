"""The JSON schema a backend that ignores tools is asked to answer by: one object per tool offered
and, when the model may decide (`tool_choice` "auto"), one more for an answer without a call.

A call is `{"name": <the tool's name, a const>, "arguments": <its parameters>}`; the answer is
`{"answer": <content>}`: a string, or the caller's response format's schema when there is one.
Its own key, not a reserved tool name, tells it apart, so any tool name can be offered.

Example:
    schema = call_schema([weather, time], answer={"type": "string"})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core import FunctionTool, UserError

__all__ = ["ANSWER", "call_schema", "offered_tools"]

ANSWER = "answer"


def offered_tools(tools: Sequence[FunctionTool | Mapping[str, Any]]) -> list[FunctionTool]:
    """The function tools of a call (a `FunctionTool`, or a Chat Completions or Responses tool
    dict); any other kind of tool cannot be emulated and raises `UserError`."""
    found: list[FunctionTool] = []
    for tool in tools:
        if isinstance(tool, FunctionTool):
            found.append(tool)
            continue
        spec = tool.get("function", tool) if tool.get("type") == "function" else None
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            kind = tool.get("type", "untyped")
            raise UserError(f"a {kind!r} tool cannot be emulated on this backend: only function tools can")
        found.append(FunctionTool(spec["name"], spec.get("parameters") or {"type": "object"}, spec.get("description")))
    return found


def call_schema(tools: Sequence[FunctionTool], answer: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON schema of one call to one of `tools`: `{"name": <const>, "arguments": <parameters>}`,
    an `anyOf` of one such object per tool when there are several; with `answer` (the schema of
    an answer without a call) one more object, `{"answer": <answer>}`, after the calls.

    Each tool's `$defs` (or `definitions`) move to the root, where its `$ref`s point (prefixed by
    the tool's name when there are several variants, so two tools' `Address` stay apart)."""
    defs: dict[str, Any] = {}
    several = len(tools) + (answer is not None) > 1
    variants = [
        _closed(
            {"name": {"const": tool.name}, "arguments": _hoisted(tool.parameters, _prefix(tool.name, several), defs)}
        )
        for tool in tools
    ]
    if answer is not None:
        variants.append(_closed({ANSWER: _hoisted(answer, _prefix(ANSWER, several), defs)}))
    schema = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {**schema, "$defs": defs} if defs else schema


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _prefix(name: str, several: bool) -> str:
    return f"{name}__" if several else ""


def _hoisted(parameters: Mapping[str, Any], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """`parameters` without its definitions, which go into `defs` (renamed with `prefix`), its
    `$ref`s pointing at them there."""
    local = {**(parameters.get("definitions") or {}), **(parameters.get("$defs") or {})}

    def moved(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {key: _renamed(value, prefix) if key == "$ref" else moved(value) for key, value in node.items()}
        return [moved(item) for item in node] if isinstance(node, list) else node

    defs.update((prefix + name, moved(definition)) for name, definition in local.items())
    return moved({key: value for key, value in parameters.items() if key not in ("definitions", "$defs")})  # type: ignore[no-any-return]


def _renamed(ref: Any, prefix: str) -> Any:
    for base in ("#/$defs/", "#/definitions/"):
        if isinstance(ref, str) and ref.startswith(base):
            return f"#/$defs/{prefix}{ref[len(base) :]}"
    return ref
