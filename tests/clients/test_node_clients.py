"""The Node clients, unmodified, from tests/clients/package-lock.json (`npm ci` in `make test`), through
the gateway over the scripted backend. Each script prints one JSON line of what its client returned."""

from __future__ import annotations

from typing import Any

from node_run import run_node
from scripted import WEATHER

from so_middleware.gateway._routes import reads_spec_names


def test_openai_node_zod_text_format_and_tool_round_trip(scripted: Any) -> None:
    backend, gateway = scripted
    results = run_node("openai_node.mjs", gateway.base_url)
    for mode in ("plain", "streamed"):
        got = results[mode]
        assert got["parsed"] == WEATHER, mode
        assert got["call"] == {"name": "get_weather", "parsed_arguments": {"city": "Paris"}}, mode
        assert got["after_tool"] == WEATHER, mode
    kinds = results["streamed"]["kinds"]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert backend.tool_results() == ['{"temperature_c": 21}'] * 2


def test_openai_node_streams_backend_reasoning(scripted: Any) -> None:
    """A backend that reasons (`reasoning_content`): the SDK reads its reasoning item, plain and streamed
    (its stream accumulator throws on an event it does not know, such as the spec's `response.reasoning.*`)."""
    backend, gateway = scripted
    backend.reasoning = "Paris is named; look its weather up."
    results = run_node("openai_node.mjs", gateway.base_url)
    for mode in ("plain", "streamed"):
        assert results[mode]["reasoning"] == [backend.reasoning], mode
        assert results[mode]["after_tool"] == WEATHER, mode
    assert "response.reasoning_text.delta" in results["streamed"]["kinds"]  # OpenAI's name, the one it reads
    assert gateway.app.headers and not [h for h in gateway.app.headers if reads_spec_names(h)]


def _check_ai_sdk(results: dict[str, Any], backend: Any) -> None:
    assert results["generateObject"] == WEATHER
    assert results["streamObject"] == WEATHER and results["streamObjectPartials"] >= 1
    generated = results["generateText"]
    assert (generated["output"], generated["steps"], generated["calls"]) == (
        WEATHER,
        2,
        [["get_weather", {"city": "Paris"}]],
    )
    assert results["streamText"]["output"] == WEATHER and results["streamText"]["steps"] == 2
    assert {"tool-call", "tool-result", "text-delta"} <= set(results["streamText"]["parts"])
    assert results["looked_up"] == ["Paris", "Paris"]
    assert backend.tool_results() == ['{"temperature_c":21}'] * 2


def test_vercel_ai_sdk_objects_and_tools_on_openai_responses(scripted: Any) -> None:
    backend, gateway = scripted
    _check_ai_sdk(run_node("ai_sdk.mjs", gateway.base_url), backend)


def test_vercel_ai_sdk_with_a_reasoning_backend_and_store_false(scripted: Any) -> None:
    """`store: false`: the SDK sends earlier items back in full; it reads a reasoning item per step."""
    backend, gateway = scripted
    backend.reasoning = "Paris is named; look its weather up."
    results = run_node("ai_sdk.mjs", gateway.base_url, AI_SDK_STORE="false")
    _check_ai_sdk(results, backend)
    assert results["generateText"]["reasoning"] == [1, 1]
    assert {"reasoning-start", "reasoning-end"} <= set(results["streamText"]["parts"])
    # the SDK says what it is (its user agent): its streams name reasoning as OpenAI does
    assert gateway.app.headers and not [h for h in gateway.app.headers if reads_spec_names(h)]


def test_vercel_ai_sdk_with_a_reasoning_backend_and_store(scripted: Any) -> None:
    """With `store` (its default) the SDK sends earlier items back as `item_reference`s, resolved from the store."""
    backend, gateway = scripted
    backend.reasoning = "Paris is named; look its weather up."
    _check_ai_sdk(run_node("ai_sdk.mjs", gateway.base_url), backend)
