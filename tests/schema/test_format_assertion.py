"""A raw JSON schema's `format` is asserted when an answer is validated: engines that constrain
the answer skip it, so validation is what catches an email in a `uri` field."""

from __future__ import annotations

import json

import pytest

from so_middleware import ModelBehaviorError
from so_middleware.schema import OutputSchema

FORMATS = [
    ("uri", "https://example.com/a?b=1", "ada@example.com"),
    ("email", "ada@example.com", "ada at example dot com"),
    ("date-time", "2024-01-02T03:04:05Z", "2024-01-02 at noon"),
    ("date", "2024-01-02", "2024-13-02"),
    ("time", "03:04:05Z", "25:00:00Z"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    ("ipv4", "192.168.0.1", "192.168.0.256"),
    ("ipv6", "2001:db8::1", "192.168.0.1"),
    ("hostname", "example.com", "-example-.com"),
    ("duration", "P3DT4H", "3 days"),
]


def site_schema(fmt: str) -> OutputSchema:
    raw = {"type": "object", "properties": {"value": {"type": "string", "format": fmt}}, "required": ["value"]}
    return OutputSchema(raw, strict=False)


@pytest.mark.parametrize(("fmt", "good", "bad"), FORMATS, ids=[f[0] for f in FORMATS])
def test_a_value_in_its_format_is_accepted(fmt: str, good: str, bad: str) -> None:
    assert site_schema(fmt).validate_json(json.dumps({"value": good})) == {"value": good}


@pytest.mark.parametrize(("fmt", "good", "bad"), FORMATS, ids=[f[0] for f in FORMATS])
def test_a_value_out_of_its_format_is_refused_naming_the_format(fmt: str, good: str, bad: str) -> None:
    with pytest.raises(ModelBehaviorError) as caught:
        site_schema(fmt).validate_json(json.dumps({"value": bad}))
    assert fmt in str(caught.value) and "value" in str(caught.value)


def test_a_format_the_validator_does_not_know_is_left_unchecked() -> None:
    assert site_schema("x-house-number").validate_json('{"value": "12b"}') == {"value": "12b"}
