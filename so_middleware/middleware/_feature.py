"""`StructuredOutput`: the feature object that asks a run for a typed answer."""

from __future__ import annotations

import typing
from typing import Any, Generic, TypeVar, overload

from ..core import ChatResponse, Feature, UserError
from ..schema import OutputSchema
from .strategies import Mode, mode_names

__all__ = ["StructuredOutput"]

T = TypeVar("T")


class StructuredOutput(Feature, Generic[T]):
    """Ask for a typed answer: a feature for `options={"features": [StructuredOutput(Person)]}`.

    `output_type` is any type `OutputSchema` takes (a pydantic model, a dataclass, `list[int]`,
    an `Enum`, a union, `str`, ...); `schema` a raw JSON-schema dict for types known only at run
    time. `mode` is `auto`, `native`, `tool`, `json_object` or `prompted`. `strict`: `None` (the
    default) sends a strict schema where the backend has strict mode and the type allows it, and a
    non-strict one otherwise; `True` demands strict (a type that cannot be strict is a
    `UserError` here); `False` never sends strict. A type that cannot be used raises `UserError`
    here, before any call. After the run, `feature.response` holds the response, so a caller
    that only handed the feature down still gets its answer. A class as `output_type` types it:
    `StructuredOutput(Person).response` is a `ChatResponse[Person] | None`; other type forms and
    `schema=` give `StructuredOutput[Any]`.

    Example:
        feature = StructuredOutput(list[int], max_retries=1)
        await agent.run("three primes", options={"features": [feature]})
        feature.response.value  # [2, 3, 5]
    """

    handled_by = "with_structured_output"

    @overload
    def __init__(
        self,
        output_type: type[T],
        *,
        schema: None = None,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
        mode: Mode = "auto",
        max_retries: int = 2,
    ) -> None: ...

    @overload
    def __init__(
        self: StructuredOutput[Any],
        output_type: Any = None,
        *,
        schema: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
        mode: Mode = "auto",
        max_retries: int = 2,
    ) -> None: ...

    def __init__(
        self,
        output_type: Any = None,
        *,
        schema: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
        mode: Mode = "auto",
        max_retries: int = 2,
    ) -> None:
        if (output_type is None) == (schema is None):
            raise UserError("StructuredOutput needs exactly one of output_type=... or schema={...}")
        if mode not in mode_names():
            raise UserError(f"unknown mode {mode!r}; expected one of {', '.join(mode_names())}")
        if strict not in (None, True, False):
            raise UserError(f"strict must be True, False or None (automatic), got {strict!r}")
        if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
            raise UserError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise UserError(f"name must be a non-empty string, got {name!r}")
        if description is not None and not isinstance(description, str):
            raise UserError(f"description must be a string, got {type(description).__name__}")
        self.output_type = output_type if schema is None else schema
        self.text_type = self.output_type if _is_text_type(self.output_type) else None
        self.output_schema = _schema_of(str if self.text_type is not None else self.output_type, strict, name)
        self.name = name
        self.description = description
        self.strict = strict
        self.mode: Mode = mode
        self.max_retries = max_retries
        self.response: ChatResponse[T] | None = None

    def is_plain_text(self) -> bool:
        """True for `str`, `None` and `Annotated[str, ...]`: the answer is the text."""
        return self.text_type is not None or self.output_schema.is_plain_text()

    def copy_for_run(self) -> StructuredOutput[T]:
        """A fresh feature with the same settings (the creation-time default is never written to)."""
        clone: StructuredOutput[T] = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.response = None
        return clone

    def __repr__(self) -> str:
        return f"StructuredOutput({self.output_schema.name()}, mode={self.mode!r}, max_retries={self.max_retries})"


def _is_text_type(output_type: Any) -> bool:
    if typing.get_origin(output_type) is typing.Annotated:
        return typing.get_args(output_type)[0] is str
    return output_type is str


def _schema_of(output_type: Any, strict: bool | None, name: str | None) -> OutputSchema:
    """The strict schema when asked for or when the type allows it (strict=None); else the plain one."""
    if strict is False:
        return OutputSchema(output_type, strict=False, name=name)
    if strict is True:
        return OutputSchema(output_type, strict=True, name=name)
    try:
        return OutputSchema(output_type, strict=True, name=name)
    except UserError:
        return OutputSchema(output_type, strict=False, name=name)
