"""`wire.common.dumps`: the one writer of JSON bytes for request bodies, the gateway's answers and
its WebSocket events; `wire.common.loads`, its reader of answer lines."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from so_middleware.wire.common import dumps, loads


@pytest.mark.parametrize(
    "value",
    [
        {"model": "m", "messages": [{"role": "user", "content": "héllo ☃ 日本"}]},
        [1, 2.5, None, True, "a\u2028b", {"nested": {"x": []}}],
        {"emoji": "\U0001f600", "quote": '"', "control": "\x01\n"},
    ],
)
def test_compact_json_that_reads_back_as_the_value(value: Any) -> None:
    text = dumps(value)
    assert isinstance(text, bytes)
    assert json.loads(text) == value
    assert b", " not in text and b": " not in text


@pytest.mark.parametrize(
    "value",
    [{"text": "broken \ud800 half"}, {"big": 2**70}],
    ids=["lone surrogate", "int past 64 bits"],
)
def test_what_orjson_refuses_is_written_escaped_by_the_standard_library(value: Any) -> None:
    text = dumps(value)
    text.decode("utf-8")  # always sendable as UTF-8, a WebSocket text frame included
    assert json.loads(text) == value
    assert text == json.dumps(value, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    "data",
    [
        b'{"model":"m","message":{"role":"assistant","content":"h\xc3\xa9llo \\u2603"},"done":false}',
        b'[1, 2.5, -0.0, 1e-7, null, true, "a\\u2028b", {"nested": {"x": []}}]',
        b'{"k": 1, "k": 2}',
        b'{"big": 123456789012345678901234567890}',
        b'{"text": "broken \\ud800 half"}',
        b'{"huge": 1e999}',
    ],
    ids=["text", "values", "repeated key", "int past 64 bits", "lone surrogate", "past float range"],
)
def test_loads_reads_what_json_loads_reads(data: bytes) -> None:
    """orjson reads most lines; what it refuses (a lone surrogate, numbers past its range) the
    standard library reads: the value is always `json.loads`'s."""
    assert loads(data) == json.loads(data)


def test_loads_reads_nan_and_bytes_that_are_not_utf8_as_the_sdk_line_reader_does() -> None:
    assert math.isnan(loads(b'{"x": NaN}')["x"])
    assert loads(b'{"text": "a\xff"}') == {"text": "a\ufffd"}  # decoded with replacement characters


def test_loads_refuses_what_is_not_json() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads(b'{"x": ')
