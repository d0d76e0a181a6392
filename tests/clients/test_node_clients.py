"""The Node clients, unmodified, from tests/clients/package-lock.json (`npm ci` in `make test`), through
the gateway over the scripted backend. Each script prints one JSON line of what its client returned."""

from __future__ import annotations

from typing import Any

from node_run import run_node
from scripted import WEATHER


def test_openai_node_zod_text_format_and_tool_round_trip(scripted: Any) -> None:
    backend, gateway = scripted
    backend.reasoning = "Paris is named; look its weather up."
    results = run_node("openai_node.mjs", gateway.base_url)
    for mode in ("plain", "streamed"):
        got = results[mode]
        assert got["parsed"] == WEATHER, mode
        assert got["call"] == {"name": "get_weather", "parsed_arguments": {"city": "Paris"}}, mode
        assert got["after_tool"] == WEATHER, mode
        assert got["reasoning"] == [backend.reasoning], mode
    kinds = results["streamed"]["kinds"]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.reasoning_text.delta" in kinds  # OpenAI's name, the one this SDK reads
    assert backend.tool_results() == ['{"temperature_c": 21}'] * 2


def test_vercel_ai_sdk_objects_and_tools_on_openai_responses(scripted: Any) -> None:
    backend, gateway = scripted
    backend.reasoning = "Paris is named; look its weather up."
    results = run_node("ai_sdk.mjs", gateway.base_url)
    assert results["generateObject"] == WEATHER
    assert results["streamObject"] == WEATHER and results["streamObjectPartials"] >= 1
    assert results["generateText"] == {"output": WEATHER, "steps": 2, "calls": [["get_weather", {"city": "Paris"}]]}
    assert results["generateText"]["reasoning"] == results["streamText"]["reasoning"] == backend.reasoning * 2
    assert results["streamText"]["output"] == WEATHER and results["streamText"]["steps"] == 2
    assert {"tool-call", "tool-result", "text-delta"} <= set(results["streamText"]["parts"])
    assert results["looked_up"] == ["Paris", "Paris"]
    assert backend.tool_results() == ['{"temperature_c":21}'] * 2
