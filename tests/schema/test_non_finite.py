"""NaN, Infinity and 1e999 are not JSON numbers: rejected (so re-asked) unless the type opts in."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from so_middleware import ModelBehaviorError
from so_middleware.schema import OutputSchema


class Reading(BaseModel):
    value: float


class LooseReading(BaseModel):
    model_config = ConfigDict(allow_inf_nan=True)
    value: float


class FieldReading(BaseModel):
    value: float = Field(allow_inf_nan=True)


NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]
RAW_NUMBER = {"type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]}


def _schemas() -> list[tuple[OutputSchema, str]]:
    return [
        (OutputSchema(Reading), '{{"value": {}}}'),
        (OutputSchema(list[float]), '{{"response": [1.5, {}]}}'),
        (OutputSchema(float), '{{"response": {}}}'),
        (OutputSchema(RAW_NUMBER), '{{"value": {}}}'),
        (OutputSchema({"type": "number"}), '{{"response": {}}}'),
    ]


@pytest.mark.parametrize("token", NON_FINITE)
@pytest.mark.parametrize("index", range(5), ids=["model", "list", "float", "raw-object", "raw-number"])
def test_non_finite_numbers_are_rejected_everywhere(token: str, index: int) -> None:
    schema, template = _schemas()[index]
    text = template.format(token)
    with pytest.raises(ModelBehaviorError, match=r"not JSON|Invalid JSON"):
        schema.validate_json(text)
    with pytest.raises(ModelBehaviorError):
        schema.validate_json(text, lenient=True)
    with pytest.raises(ModelBehaviorError):
        schema.validate_json(f"Here it is:\n```json\n{text}\n```", lenient=True)
    for lenient in (False, True):
        parser = schema.partial_parser(lenient=lenient)
        with pytest.raises(ModelBehaviorError):
            for start in range(0, len(text), 3):
                parser.feed(text[start : start + 3])
            parser.finish()


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_non_finite_python_values_are_rejected(number: float) -> None:
    with pytest.raises(ModelBehaviorError, match="finite number"):
        OutputSchema(Reading).validate_python({"value": number})
    with pytest.raises(ModelBehaviorError, match="finite number"):
        OutputSchema(RAW_NUMBER).validate_python({"value": number})


def test_the_error_names_the_field() -> None:
    with pytest.raises(ModelBehaviorError) as info:
        OutputSchema(Reading).validate_json('{"value": 1e999}')
    assert "- value:" in str(info.value)


@pytest.mark.parametrize("output_type", [LooseReading, FieldReading])
def test_a_type_that_allows_non_finite_floats_gets_them(output_type: Any) -> None:
    schema = OutputSchema(output_type)
    assert math.isinf(schema.validate_json('{"value": 1e999}').value)
    assert math.isnan(schema.validate_json('{"value": NaN}').value)
    assert math.isinf(schema.validate_python({"value": -math.inf}).value)
    parser = schema.partial_parser()
    parser.feed('{"value": 1e999}')
    assert math.isinf(parser.finish().value)


def test_only_an_answer_that_may_hold_a_non_finite_number_is_parsed_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check reads the text again only where a number could be non-finite (`NaN`, `Infinity`,
    an exponent, 309 digits or more) or the nesting too deep: other answers are validated in one pass."""
    from so_middleware.schema import _validators

    checked: list[str] = []
    real = _validators.parse_json
    monkeypatch.setattr(_validators, "parse_json", lambda text, what: checked.append(text) or real(text, what))
    schema = OutputSchema(Reading)
    assert schema.validate_json('{"value": 1.5}').value == 1.5
    assert checked == []
    cautious = ['{"value": 1.5e3}', '{"value": 2.5, "note": "' + "{" * 201 + '"}']  # brackets in a string count too
    assert [schema.validate_json(text).value for text in cautious] == [1500.0, 2.5]
    huge = '{"value": 1' + "0" * 400 + ".5}"
    with pytest.raises(ModelBehaviorError, match="finite number"):
        schema.validate_json(huge)
    assert checked == [*cautious, huge]
