"""One `tool` log record per call: name, call id, duration, outcome; content only when asked for."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from so_middleware import with_function_invocation
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio


def get_weather(city: str) -> str:
    """The weather now in a city."""
    return f"sunny in {city}, key sk-abcdefghijklmnopqrstuvwxyz012345"


def tool_records(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [r.so_middleware for r in caplog.records if getattr(r, "so_middleware", {}).get("event") == "tool"]  # type: ignore[attr-defined]


async def test_each_tool_call_is_one_record_without_content_by_default(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="so_middleware")
    fake = FakeChatClient([Reply(tool_calls=[("get_weather", '{"city": "Paris"}'), ("nope", "{}")]), "Sunny."])
    await with_function_invocation(fake, tools=[get_weather]).get_response("Weather?")
    records = tool_records(caplog)
    assert [(r["name"], r["call_id"], r["iteration"], r["outcome"]) for r in records] == [
        ("get_weather", "call_0", 1, "ok"),
        ("nope", "call_1", 1, "error"),
    ]
    assert all(r["duration"] >= 0 for r in records)
    assert not any("arguments" in r or "result" in r for r in records)
    assert "Paris" not in caplog.text


async def test_content_is_logged_when_asked_for_with_credentials_redacted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="so_middleware")
    fake = FakeChatClient([Reply(tool_calls=[("get_weather", '{"city": "Paris"}')]), "Sunny."])
    await with_function_invocation(fake, tools=[get_weather], include_content=True).get_response("Weather?")
    (record,) = tool_records(caplog)
    assert record["arguments"] == '{"city": "Paris"}'
    assert record["result"].startswith("sunny in Paris") and "sk-abcdefghij" not in record["result"]
