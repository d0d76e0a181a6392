"""The JSON schema a backend that ignores tools is asked to answer by: one object per tool offered
and, when the model may decide (`tool_choice` "auto"), one more for an answer without a call.

A call is `{"name": <the tool's name, a const>, "arguments": <its parameters>}`; the answer is
`{"answer": <content>}`: a string, or the caller's response format's schema when there is one.
Its own key, not a reserved tool name, tells it apart, so any tool name can be offered.

Example:
    schema = call_schema([weather, time], answer={"type": "string"})
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import unquote

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

    Each tool's `$defs` (or `definitions`) move to the root, where its `$ref`s point, named
    `<tool>__<name>` when there are several variants (so two tools' `Address` stay apart), in
    letters, digits, `_`, `-` and `.` only (no `$ref` needs escaping, whatever reads it). A name
    already taken (tool `a`'s `b__c` and tool `a__b`'s `c`; a tool named `answer` beside the
    answer's own) gets a `_2`, `_3`... suffix: each `$ref` points at its own variant's definition.
    A `$ref` to the root (`#`, `#/properties/...`) points at the variant's place instead. A
    `$defs` that is not an object, or a `$ref` into it naming no definition, raises `UserError`."""
    defs: dict[str, Any] = {}
    several = len(tools) + (answer is not None) > 1
    place = "#/anyOf/{}/properties/{}" if several else "#/properties/{1}"
    variants = [
        _closed(
            {
                "name": {"const": tool.name},
                "arguments": _Hoist(f"tool {tool.name!r}", tool.name, several, place.format(i, "arguments"), defs)(
                    tool.parameters
                ),
            }
        )
        for i, tool in enumerate(tools)
    ]
    if answer is not None:
        where = place.format(len(variants), ANSWER)
        variants.append(_closed({ANSWER: _Hoist("the response format", ANSWER, several, where, defs)(answer)}))
    schema = variants[0] if len(variants) == 1 else {"anyOf": variants}
    return {**schema, "$defs": defs} if defs else schema


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_BASES = ("#/$defs/", "#/definitions/")


class _Hoist:
    """Moves one variant's definitions into the shared `defs`, under names no other variant has."""

    def __init__(self, owner: str, name: str, several: bool, place: str, defs: dict[str, Any]) -> None:
        self.owner, self.prefix, self.place, self.defs = owner, f"{name}__" if several else "", place, defs
        self.names: dict[str, str] = {}  # this variant's definition -> its name at the root

    def __call__(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """`parameters` without its definitions, which go into `defs`, its `$ref`s pointing at them there."""
        local: dict[str, Any] = {}
        for key in ("definitions", "$defs"):
            found = parameters.get(key)
            if found is not None and not isinstance(found, Mapping):
                raise UserError(f"the {key!r} of {self.owner} must be an object, not {type(found).__name__}")
            local.update(found or {})
        for name in local:
            self.names[name] = self._free(_UNSAFE.sub("_", self.prefix + str(name)))
        self.defs.update((self.names[name], self._moved(definition)) for name, definition in local.items())
        return self._moved({k: v for k, v in parameters.items() if k not in ("definitions", "$defs")})  # type: ignore[no-any-return]

    def _free(self, wanted: str) -> str:
        taken = set(self.defs) | set(self.names.values())
        name, suffix = wanted, 1
        while name in taken:
            suffix += 1
            name = f"{wanted}_{suffix}"
        self.defs.setdefault(name, None)  # held until the definition lands here
        return name

    def _moved(self, node: Any) -> Any:
        if isinstance(node, Mapping):
            return {key: self._ref(value) if key == "$ref" else self._moved(value) for key, value in node.items()}
        return [self._moved(item) for item in node] if isinstance(node, list) else node

    def _ref(self, ref: Any) -> Any:
        if not isinstance(ref, str):  # a property named `$ref`, say: a schema like any other
            return self._moved(ref)
        if not ref.startswith("#"):
            return ref  # another document's: left to whoever reads it
        for base in _BASES:
            if ref.startswith(base):
                first, slash, rest = ref[len(base) :].partition("/")
                name = unquote(first).replace("~1", "/").replace("~0", "~")
                if name not in self.names:
                    raise UserError(f"the $ref {ref!r} of {self.owner} names no definition it has")
                return f"#/$defs/{self.names[name]}{slash}{rest}"
        return self.place + ref[1:]
