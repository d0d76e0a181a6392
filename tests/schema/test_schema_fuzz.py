"""Property and fuzz tests: generated types round-trip; arbitrary text yields a value or a
`ModelBehaviorError`, never another exception, a hang or a `RecursionError`."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, create_model

from so_middleware import ModelBehaviorError
from so_middleware.schema import OutputSchema

Checker = Callable[[dict[str, Any]], None]

SETTINGS = settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_model_ids = itertools.count()

TypeAndValues = tuple[Any, st.SearchStrategy[Any]]

BASE: list[TypeAndValues] = [
    (int, st.integers(-(10**15), 10**15)),
    (str, st.text(max_size=20)),
    (bool, st.booleans()),
    (float, st.floats(allow_nan=False, allow_infinity=False)),
]


def _model(children: list[TypeAndValues]) -> TypeAndValues:
    fields = {f"f{index}": (child[0], ...) for index, child in enumerate(children)}
    model: type[BaseModel] = create_model(f"Gen{next(_model_ids)}", **fields)  # type: ignore[call-overload]
    values = st.tuples(*(child[1] for child in children)).map(
        lambda row: model(**{f"f{index}": value for index, value in enumerate(row)})
    )
    return model, values


def _extend(children: st.SearchStrategy[TypeAndValues]) -> st.SearchStrategy[TypeAndValues]:
    lists = children.map(lambda child: (list[child[0]], st.lists(child[1], max_size=4)))  # type: ignore[name-defined]
    optionals = children.map(lambda child: (Optional[child[0]], st.none() | child[1]))
    pairs = st.tuples(children, children).map(
        lambda pair: (tuple[pair[0][0], pair[1][0]], st.tuples(pair[0][1], pair[1][1]))  # type: ignore[name-defined]
    )
    models = st.lists(children, min_size=1, max_size=3).map(_model)
    return lists | optionals | pairs | models


TYPES = st.recursive(st.sampled_from(BASE), _extend, max_leaves=6)


@SETTINGS
@given(data=st.data(), type_and_values=TYPES)
def test_generated_types_round_trip(
    data: st.DataObject, type_and_values: TypeAndValues, check_openai_strict: Checker
) -> None:
    output_type, values = type_and_values
    assume(output_type is not str)  # a bare str is plain text, not JSON: no schema to round-trip
    schema = OutputSchema(output_type)
    check_openai_strict(schema.json_schema())
    value = data.draw(values)
    wire = schema.dump_json(value)
    assert schema.validate_json(wire) == value
    assert schema.validate_json(wire, lenient=True) == value
    sizes = data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=8))
    parser = schema.partial_parser()
    position = 0
    for size in itertools.cycle(sizes):
        if position >= len(wire):
            break
        parser.feed(wire[position : position + size])
        position += size
    assert parser.finish() == value
    assert parser.value == value


class Item(BaseModel):
    name: str
    qty: int
    tags: list[str] = []


FUZZ_SCHEMAS = [
    OutputSchema(Item),
    OutputSchema(list[Item]),
    OutputSchema(int),
    OutputSchema(dict[str, Any], strict=False),
]
SEED_DOCS = [
    '{"name": "a", "qty": 1, "tags": ["x", "y"]}',
    '{"response": [{"name": "a\\n\\u00e9", "qty": 2}, {"name": "b", "qty": 3}]}',
    '{"response": 12}',
    '```json\n{"response": [1, 2.5e3, true, null]}\n```',
]


def _only_values_or_model_errors(schema: OutputSchema, text: str) -> None:
    for lenient in (False, True):
        try:
            schema.validate_json(text, lenient=lenient)
        except ModelBehaviorError as exc:
            assert str(exc)
        for chunk in (1, 5, 64) if len(text) <= 5_000 else (997,):
            parser = schema.partial_parser(lenient=lenient)
            try:
                for start in range(0, len(text), chunk):
                    parser.feed(text[start : start + chunk])
                parser.value  # noqa: B018 - reading the value must not fail either
                parser.finish()
            except ModelBehaviorError as exc:
                assert str(exc)


def _mutate(text: str, edits: list[tuple[int, int, str]]) -> str:
    for kind, position, char in edits:
        position = position % (len(text) + 1)
        if kind == 0:
            text = text[:position] + char + text[position:]
        elif kind == 1:
            text = text[:position] + text[position + 1 :]
        elif kind == 2:
            text = text[:position]
        else:
            text = text[:position] + text[position : position + 8] * 3 + text[position:]
    return text


@SETTINGS
@given(
    schema_index=st.integers(0, len(FUZZ_SCHEMAS) - 1),
    doc_index=st.integers(0, len(SEED_DOCS) - 1),
    edits=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 200), st.sampled_from(list('{}[]",:\\ntfu0-.e \x00\ud800'))),
        max_size=5,
    ),
)
def test_mutated_json(schema_index: int, doc_index: int, edits: list[tuple[int, int, str]]) -> None:
    _only_values_or_model_errors(FUZZ_SCHEMAS[schema_index], _mutate(SEED_DOCS[doc_index], edits))


@SETTINGS
@given(schema_index=st.integers(0, len(FUZZ_SCHEMAS) - 1), text=st.text(max_size=200))
def test_random_text(schema_index: int, text: str) -> None:
    _only_values_or_model_errors(FUZZ_SCHEMAS[schema_index], text)


@SETTINGS
@given(schema_index=st.integers(0, len(FUZZ_SCHEMAS) - 1), blob=st.binary(max_size=200))
def test_binary_input(schema_index: int, blob: bytes) -> None:
    schema = FUZZ_SCHEMAS[schema_index]
    _only_values_or_model_errors(schema, blob.decode("utf-8", "surrogateescape"))
    parser = schema.partial_parser()
    try:
        for index in range(0, len(blob), 3):
            parser.feed(blob[index : index + 3])
        parser.finish()
    except ModelBehaviorError:
        pass


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        "{" * 100_000,
        '{"a":' * 50_000,
        '{"response": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"response": "' + "\\" * 10_001,
        '{"response": 1' + "0" * 10_000 + "}",
        "\ud800\udfff\x00",
        '{"name": "\\ud800", "qty": 1}',
        '{"name": "\\udc00\\ud800", "qty": 1}',
        '"' + "x" * 1_000_000,
        "NaN",
        '{"response": Infinity}',
    ],
    ids=[
        "deep-arrays",
        "deep-objects",
        "deep-keys",
        "deep-closed",
        "backslashes",
        "huge-number",
        "surrogates",
        "lone-high-escape",
        "reversed-surrogates",
        "huge-string",
        "nan",
        "infinity",
    ],
)
def test_hostile_inputs(text: str) -> None:
    for schema in FUZZ_SCHEMAS:
        _only_values_or_model_errors(schema, text)


def test_huge_valid_document_validates() -> None:
    items = [{"name": "n" * 100, "qty": index} for index in range(5_000)]
    text = json.dumps({"response": items})
    schema = OutputSchema(list[Item])
    parser = schema.partial_parser()
    for start in range(0, len(text), 4096):
        parser.feed(text[start : start + 4096])
    assert len(parser.completed_items) == 5_000
    assert parser.finish() == schema.validate_json(text)
