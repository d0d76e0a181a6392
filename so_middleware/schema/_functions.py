"""A Python function as a tool: its arguments' schema from its signature, its result as text.

`function_schema(get_weather)` reads the parameters' annotations (`Annotated[..., Field(...)]`
included), their defaults and the docstring (its first paragraph is the description; a Google
style `Args:` section describes the parameters) into a pydantic model, and the arguments' JSON
schema is that model's `OutputSchema`: every type structured output takes, with the same strict
transforms. `validate_arguments(text)` turns the model's JSON arguments into keyword arguments
(typed values: a model, a date, an enum), and `result_text(value)` writes what the function
returned as the text a tool result carries (a str as it is; anything else as JSON).

Example:
    def get_weather(city: str, unit: Literal["C", "F"] = "C") -> Weather:
        '''The weather now.

        Args:
            city: The city's English name.
        '''

    schema = function_schema(get_weather)
    schema.parameters["properties"]["city"]["description"] == "The city's English name."
    schema.validate_arguments('{"city": "Paris"}') == {"city": "Paris", "unit": "C"}
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pydantic
import pydantic_core

from ..core import UserError
from ._output_schema import OutputSchema

__all__ = ["FunctionSchema", "function_schema"]

_ARG_LINE = re.compile(r"^\s{2,}(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True)
class FunctionSchema:
    """What a model needs to call one function, and what the call needs to run it.

    `parameters` is the arguments' JSON schema (sent with `strict` when `strict` is True).
    """

    name: str
    description: str | None
    parameters: dict[str, Any]
    strict: bool
    arguments: OutputSchema

    def validate_arguments(self, text: str) -> dict[str, Any]:
        """The keyword arguments in `text` (the model's JSON), typed; `ModelBehaviorError` if invalid."""
        value = self.arguments.validate_json(text.strip() or "{}")
        return {field: getattr(value, field) for field in type(value).model_fields}

    def result_text(self, value: Any) -> str:
        """`value` as a tool result's text; `UserError` naming the function if it is not JSON."""
        if isinstance(value, str):
            return value
        try:
            return json.dumps(pydantic_core.to_jsonable_python(value), ensure_ascii=False)
        except (pydantic_core.PydanticSerializationError, TypeError, ValueError):
            raise UserError(
                f"tool {self.name!r} returned {type(value).__name__}, which cannot be written as JSON: return a str, "
                "a number, a list, a dict, a dataclass or a pydantic model"
            ) from None


def function_schema(
    function: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> FunctionSchema:
    """The `FunctionSchema` of `function`; `UserError` naming the parameter that cannot have one."""
    label = name or getattr(function, "__name__", None) or type(function).__name__
    try:
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function, include_extras=True)
    except (TypeError, ValueError, NameError) as exc:
        raise UserError(f"tool {label!r}: cannot read its signature ({exc})") from None
    summary, described = _docstring(inspect.getdoc(function) or "")
    fields: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise UserError(
                f"tool {label!r}: parameter {parameter.name!r} is *args or **kwargs, which a model cannot fill; "
                "name each parameter"
            )
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise UserError(f"tool {label!r}: parameter {parameter.name!r} is positional-only; a model passes names")
        if parameter.name not in hints:
            raise UserError(f"tool {label!r}: parameter {parameter.name!r} has no type annotation; annotate it")
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (
            hints[parameter.name],
            pydantic.Field(default, description=described.get(parameter.name)),
        )
    try:
        model = pydantic.create_model(f"{_identifier(label)}_arguments", __config__=_CONFIG, **fields)
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError) as exc:
        raise UserError(f"tool {label!r}: its parameters cannot make a schema ({str(exc).splitlines()[0]})") from None
    try:
        arguments, strict = OutputSchema(model, strict=True, name=label), True
    except UserError:
        arguments, strict = OutputSchema(model, strict=False, name=label), False
    parameters = arguments.json_schema("openai-strict" if strict else "json-schema")
    parameters.pop("title", None)
    return FunctionSchema(label, description or summary, parameters, strict, arguments)


_CONFIG = pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=False)


def _identifier(name: str) -> str:
    return re.sub(r"\W", "_", name) or "tool"


def _docstring(text: str) -> tuple[str | None, dict[str, str]]:
    """The first paragraph, and each parameter's description from an `Args:` section."""
    paragraphs = text.strip().split("\n\n")
    summary = " ".join(paragraphs[0].split()) if paragraphs and paragraphs[0].strip() else None
    if summary is not None and summary.lower().startswith(("args:", "arguments:", "parameters:")):
        summary = None
    described: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if not in_args:
            continue
        if stripped and not line.startswith((" ", "\t")):
            break  # the next section
        match = _ARG_LINE.match(line)
        if match and len(line) - len(line.lstrip()) <= 4:
            name = match.group(1).lstrip("*")
            described[name] = match.group(2).strip()
            current = name
        elif current is not None and stripped:
            described[current] = f"{described[current]} {stripped}".strip()
    return summary, described
