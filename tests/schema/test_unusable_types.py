"""Types and schemas no answer can satisfy, or that are not JSON, fail at construction naming the field."""

from __future__ import annotations

import math
import re
import typing
from collections.abc import AsyncIterator, Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from so_middleware import StructuredOutput, UserError
from so_middleware.schema import OutputSchema


class Empty(Enum):
    pass


class HasEmpty(BaseModel):
    choice: Empty


class Tags(BaseModel):
    tags: set[list[int]]


class Mutable(BaseModel):
    a: int


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)
    a: int


@dataclass(frozen=True)
class FrozenPoint:
    x: int


class Pair(TypedDict):
    a: int


class NanBound(BaseModel):
    level: float = Field(le=math.nan)


@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (set[list[int]], "it is set[list[int]], whose list[int] items are not hashable"),
        (frozenset[dict[str, int]], "items are not hashable"),
        (Tags, "field 'tags' is set[list[int]]"),
        (list[set[Mutable]], "Mutable items are not hashable"),
        (set[Pair], "Pair items are not hashable"),
        (Empty, "'enum' has no values"),
        (HasEmpty, "at choice ('enum'): 'enum' has no values"),
        (NanBound, "at level ('maximum'): nan"),
    ],
    ids=[
        "set-of-lists",
        "frozenset-of-dicts",
        "field",
        "nested-set-of-models",
        "set-of-typeddict",
        "empty-enum",
        "empty-enum-field",
        "nan-bound",
    ],
)
def test_unsatisfiable_types_are_refused_at_construction(output_type: Any, expected: str) -> None:
    for strict in (True, False):
        with pytest.raises(UserError, match=re.escape(expected)):
            OutputSchema(output_type, strict=strict)
    with pytest.raises(UserError):
        StructuredOutput(output_type, strict=False)


@pytest.mark.parametrize(
    "output_type",
    [set[int], frozenset[tuple[int, str]], set[Frozen], set[FrozenPoint], frozenset[frozenset[int]], set[int | None]],
)
def test_sets_of_hashable_items_are_fine(output_type: Any) -> None:
    schema = OutputSchema(output_type, strict=False)
    assert schema.is_wrapped


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"type": "object", "properties": {"tags": {"type": "array", "default": {1, 2}}}},
            "at tags ('default'): a set",
        ),
        ({"type": "object", "properties": {"n": {"type": "number", "maximum": math.nan}}}, "at n ('maximum'): nan"),
        ({"type": "object", "properties": {"n": {"type": "number", "minimum": -math.inf}}}, "at n ('minimum'): -inf"),
        ({"type": "object", "properties": {"d": {"type": "string", "default": b"x"}}}, "at d ('default'): a bytes"),
        ({"type": "object", "properties": {"e": {"enum": []}}}, "at e ('enum'): 'enum' has no values"),
        ({"type": "object", "properties": {1: {"type": "string"}}}, "a key 1 that is not a string"),
    ],
    ids=["set-default", "nan-maximum", "inf-minimum", "bytes-default", "empty-enum", "int-key"],
)
def test_schema_values_that_are_not_json_are_refused(raw: dict[str, Any], expected: str) -> None:
    for strict in (True, False):
        with pytest.raises(UserError) as info:
            OutputSchema(raw, strict=strict)
        assert expected in str(info.value)


def test_a_property_named_enum_is_not_an_enum() -> None:
    schema = OutputSchema({"type": "object", "properties": {"enum": {"type": "string"}}, "required": ["enum"]})
    assert schema.validate_json('{"enum": "x"}') == {"enum": "x"}


T = TypeVar("T")
Bounded = TypeVar("Bounded", bound=int)


class HoldsAClass(BaseModel):
    kind: type[int]


class HoldsACallback(BaseModel):
    on_done: Callable[[], None]


@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (type[int], "it is type[int], a class"),
        (typing.Type[int], "it is type[int], a class"),  # noqa: UP006
        (type, "it is type, a class"),
        (Callable[[int], str], "a callable"),
        (typing.Callable[[], int], "a callable"),
        (Iterator[int], "a one-shot iterator"),
        (Iterable[int], "a one-shot iterator"),
        (Generator[int, None, None], "a generator"),
        (AsyncIterator[int], "an async iterator"),
        (list[type[int]], "it is type[int], a class"),
        (HoldsAClass, "field 'kind' is type[int], a class"),
        (HoldsACallback, "field 'on_done' is "),
        (T, "bare TypeVar"),
    ],
    ids=[
        "type-of-int",
        "typing-Type",
        "bare-type",
        "callable",
        "typing-callable",
        "iterator",
        "iterable",
        "generator",
        "async-iterator",
        "list-of-classes",
        "field-class",
        "field-callable",
        "bare-typevar",
    ],
)
def test_types_no_answer_can_become_are_refused_at_construction(output_type: Any, expected: str) -> None:
    """Before: `type[int]` made 9 calls (every strategy, every re-ask), each answer invalid."""
    with pytest.raises(UserError, match=re.escape(expected)):
        StructuredOutput(output_type)


@pytest.mark.parametrize("output_type", [Bounded, Sequence[int], Mapping[str, int], list[int]])
def test_json_shaped_types_and_bound_typevars_are_fine(output_type: Any) -> None:
    assert StructuredOutput(output_type).output_schema is not None
