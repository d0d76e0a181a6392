"""Lenient reading of prompted JSON: fences, prose, repairs, unwrapped values."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware import ModelBehaviorError
from so_middleware.schema import OutputSchema


class Item(BaseModel):
    name: str
    qty: int


ITEM = Item(name="bolt", qty=3)

ITEM_TEXTS = [
    '{"name": "bolt", "qty": 3}',
    '```json\n{"name": "bolt", "qty": 3}\n```',
    'Here you go:\n```\n{"name": "bolt", "qty": 3}\n```\nAnything else?',
    'Sure! {"name": "bolt", "qty": 3} Hope that helps.',
    'First try: {"name": "nut", "qty": "many"}. Corrected: {"name": "bolt", "qty": 3}',
    '{"name": "bolt", "qty": 3,}',
    '{"name": "bolt", // the part\n "qty": 3}',
    "{'name': 'bolt', 'qty': 3}",
    "{\u201cname\u201d: \u201cbolt\u201d, \u201cqty\u201d: 3}",
    '{"name": "bolt", "qty": 3',
    'Braces in prose {like this} then {"name": "bolt", "qty": 3}',
    '```json\n{"name": "bolt", "qty": 3}',
]


@pytest.mark.parametrize("text", ITEM_TEXTS)
def test_lenient_object(text: str) -> None:
    assert OutputSchema(Item).validate_json(text, lenient=True) == ITEM


@pytest.mark.parametrize("text", ITEM_TEXTS[1:])
def test_strict_mode_refuses_the_same_texts(text: str) -> None:
    with pytest.raises(ModelBehaviorError):
        OutputSchema(Item).validate_json(text)


def test_last_validating_candidate_wins() -> None:
    text = 'Option A: {"name": "a", "qty": 1}\nOption B: {"name": "b", "qty": 2}'
    assert OutputSchema(Item).validate_json(text, lenient=True) == Item(name="b", qty=2)
    text = 'Good: {"name": "a", "qty": 1} then broken: {"name": "b", "qty": "x"}'
    assert OutputSchema(Item).validate_json(text, lenient=True) == Item(name="a", qty=1)


@pytest.mark.parametrize(
    ("output_type", "text", "expected"),
    [
        (list[int], "[1, 2]", [1, 2]),
        (list[int], "```json\n[1, 2,]\n```", [1, 2]),
        (list[int], 'The list: {"response": [3]}', [3]),
        (int, "42", 42),
        (int, 'The answer is {"response": 42}.', 42),
        (bool, "true", True),
        (list[Item], '[{"name": "bolt", "qty": 3}]', [ITEM]),
    ],
)
def test_unwrapped_values_are_tolerated_only_when_lenient(output_type: Any, text: str, expected: Any) -> None:
    schema = OutputSchema(output_type)
    assert schema.validate_json(text, lenient=True) == expected
    with pytest.raises(ModelBehaviorError):
        schema.validate_json(text)


def test_lenient_failure_reports_the_most_useful_error() -> None:
    text = 'I think it is {"name": "bolt", "qty": "lots"}.'
    with pytest.raises(ModelBehaviorError) as info:
        OutputSchema(Item).validate_json(text, lenient=True)
    assert "qty" in str(info.value)
    assert info.value.raw_text == text


@pytest.mark.parametrize("text", ["", "   ", "no json here at all", "[" * 100_000, "{" * 50_000, "\x00\x01\x02"])
def test_lenient_garbage_is_a_model_behavior_error(text: str) -> None:
    with pytest.raises(ModelBehaviorError):
        OutputSchema(Item).validate_json(text, lenient=True)
