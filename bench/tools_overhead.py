"""CPU per tool-calling run against a scripted backend: our layers beside pydantic-ai's and the OpenAI
Agents SDK's agents, and beside a hand-written loop over the raw SDK (the floor).

One run is one task with one tool round: the model asks for `get_weather(city="Oslo")`, the tool
runs, the model answers a `Forecast` as JSON (two Chat Completions requests). Every contender talks
to an in-process `httpx2.MockTransport` that answers as the documented Chat Completions format
does: a `tool_calls` message while the conversation has no tool result, else the final JSON. So
the figures are client-side work only: building requests, parsing answers, running the tool,
validating the value, and whatever each library adds. Runs are interleaved across contenders.

- raw loop: `chat.completions.create` with the tool, the call run by hand, `create` again with the
  `response_format`, `Forecast.model_validate_json`;
- so_middleware: `with_structured_output(with_function_invocation(OpenAIChatClient(...)))`, the
  OpenAI profile (native schema and tools);
- pydantic-ai: `Agent(OpenAIChatModel, output_type=NativeOutput(Forecast), tools=[...])`;
- openai-agents: `Agent(OpenAIChatCompletionsModel, output_type=Forecast, tools=[...])`, tracing off.

    .venv/bin/python bench/tools_overhead.py [--runs 5] [--per-run 100]

prints a Markdown table and writes `bench/results/tools_overhead.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
from _common import RESULTS, async_sdk, median
from pydantic import BaseModel

MODEL = "gpt-4o-mini"
Run = Callable[[], Awaitable[Any]]


class Forecast(BaseModel):
    city: str
    degrees: int


def get_weather(city: str) -> dict[str, Any]:
    """The temperature now in a city, in degrees Celsius.

    Args:
        city: The city's English name.
    """
    return {"city": city, "celsius": 4}


def _completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
    }


CALL = _completion(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
        ],
    },
    "tool_calls",
)
ANSWER = _completion({"role": "assistant", "content": '{"city": "Oslo", "degrees": 4}'}, "stop")
CALL_BODY, ANSWER_BODY = json.dumps(CALL).encode(), json.dumps(ANSWER).encode()


def scripted() -> httpx2.MockTransport:
    """The backend: a call while no tool result was sent, else the answer."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        messages = json.loads(request.content)["messages"]
        body = ANSWER_BODY if any(m.get("role") == "tool" for m in messages) else CALL_BODY
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=body)

    return httpx2.MockTransport(handler)


def contenders() -> dict[str, Run]:
    import agents
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from so_middleware import with_function_invocation, with_structured_output
    from so_middleware.openai import OPENAI_API, OpenAIChatClient

    raw_sdk = async_sdk(scripted())
    tool_param = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The temperature now in a city, in degrees Celsius.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "Forecast", "schema": Forecast.model_json_schema(), "strict": False},
    }

    async def raw_loop() -> Any:
        messages: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
        first = await raw_sdk.chat.completions.create(
            model=MODEL, messages=messages, tools=[tool_param], response_format=response_format
        )
        asked = first.choices[0].message
        messages.append(asked.model_dump(exclude_none=True))
        for call in asked.tool_calls or ():
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        second = await raw_sdk.chat.completions.create(
            model=MODEL, messages=messages, tools=[tool_param], response_format=response_format
        )
        return Forecast.model_validate_json(second.choices[0].message.content or "")

    ours_client = with_structured_output(
        with_function_invocation(
            OpenAIChatClient(async_sdk(scripted()), MODEL, capabilities=OPENAI_API), tools=[get_weather]
        )
    )

    async def ours() -> Any:
        return (await ours_client.get_response("Weather in Oslo?", output_type=Forecast)).value

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=async_sdk(scripted())))
    pydantic_agent = Agent(model, output_type=NativeOutput(Forecast), tools=[get_weather])

    async def pydantic_ai() -> Any:
        return (await pydantic_agent.run("Weather in Oslo?")).output

    agents.set_tracing_disabled(True)
    sdk_agent = agents.Agent(
        name="weather",
        tools=[agents.function_tool(get_weather)],
        output_type=Forecast,
        model=agents.OpenAIChatCompletionsModel(model=MODEL, openai_client=async_sdk(scripted())),
    )

    async def openai_agents() -> Any:
        return (await agents.Runner.run(sdk_agent, "Weather in Oslo?")).final_output

    return {
        "raw SDK loop (by hand)": raw_loop,
        "so_middleware": ours,
        "pydantic-ai": pydantic_ai,
        "openai-agents": openai_agents,
    }


async def measure(runs: int, per_run: int, warmup: int) -> dict[str, list[float]]:
    """CPU seconds per tool-calling run of each contender, runs interleaved across contenders."""
    calls = contenders()
    for name, call in calls.items():
        for _ in range(warmup):
            value = await call()
        assert value == Forecast(city="Oslo", degrees=4), (name, value)
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(runs):
        for name, call in calls.items():
            start = time.process_time()
            for _ in range(per_run):
                await call()
            timings[name].append((time.process_time() - start) / per_run)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--per-run", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    timings = asyncio.run(measure(args.runs, args.per_run, args.warmup))
    floor = median(timings["raw SDK loop (by hand)"])
    rows = []
    print("| contender | µs per run (median) | spread (min–max of runs) | ÷ raw loop |")
    print("|---|---|---|---|")
    for name, found in timings.items():
        per_run = median(found)
        rows.append({"contender": name, "median_us": per_run * 1e6, "runs_us": [t * 1e6 for t in found],
                     "ratio_to_raw_loop": per_run / floor})  # fmt: skip
        print(
            f"| {name} | {per_run * 1e6:.0f} | {min(found) * 1e6:.0f}–{max(found) * 1e6:.0f} | {per_run / floor:.2f}× |"
        )
    (RESULTS / "tools_overhead.json").write_text(
        json.dumps({"runs": args.runs, "per_run": args.per_run, "rows": rows}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
