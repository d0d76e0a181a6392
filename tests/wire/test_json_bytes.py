"""`wire.common.dumps`: the one writer of JSON bytes for request bodies, the gateway's answers and
its WebSocket events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from so_middleware.wire.common import dumps


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
