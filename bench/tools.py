"""Tool calling on the embedded model: our agent loop beside pydantic-ai's and the OpenAI Agents SDK's.

Tasks with known right calls, on the Chat Completions route of the embedded llama-server
(SmolLM2-135M-Instruct, whose chat template has no tools, so llama-server drops `tools`):

- `single`: one city's weather (`get_weather(city=...)`), answered as a `Forecast`;
- `parallel`: two cities' weather (two `get_weather` calls), answered as a `Comparison`;
- `multi-step`: a city's weather, then `to_fahrenheit(celsius=...)` on it, answered as a `Reading`.

Each task runs with five cities through three agents pointed at the same server by base URL, one
task at a time, each agent in turn (ours and the Agents SDK's also with the first call required,
`tool_choice="required"`, which both lift after a round of calls; pydantic-ai has no such setting): `so_middleware` (`with_structured_output` over
`with_function_invocation` on the local Chat client: the adapter emulates the tools through the
one schema the engine enforces), pydantic-ai (`Agent(OpenAIChatModel, output_type=..., tools=...)`)
and the Agents SDK (`Agent(OpenAIChatCompletionsModel, output_type=..., tools=...)`, tracing off).
Every agent gets at most 4 model requests per task (our `max_iterations`, pydantic-ai's
`UsageLimits(request_limit=4)`, the SDK's `max_turns=4`), temperature 0, 160 output tokens.

Per agent and task kind: the share of runs that ended in a typed value, the share whose tool calls
were right (every expected call made, with the expected arguments), requests and tokens per run.

    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/tools.py

writes `bench/results/tools.json`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from dataclasses import dataclass
from typing import Any

from _common import MODEL_ALIAS, RESULTS, log
from pydantic import BaseModel, Field

CITIES = ["Paris", "Oslo", "Rome", "Lima", "Cairo"]
DEGREES = {"Paris": 21, "Oslo": 4, "Rome": 25, "Lima": 18, "Cairo": 33}
MAX_REQUESTS = 4
MAX_TOKENS = 160
AGENTS = (
    "so_middleware",
    "so_middleware, first call required",
    "pydantic-ai",
    "openai-agents",
    "openai-agents, first call required",
)


class Forecast(BaseModel):
    city: str = Field(max_length=30)
    degrees: int


class Comparison(BaseModel):
    warmer_city: str = Field(max_length=30)


class Reading(BaseModel):
    fahrenheit: float


def get_weather(city: str) -> dict[str, Any]:
    """The temperature now in a city, in degrees Celsius.

    Args:
        city: The city's English name.
    """
    return {"city": city, "celsius": DEGREES.get(city.strip().title(), 15)}


def to_fahrenheit(celsius: float) -> float:
    """Convert degrees Celsius to degrees Fahrenheit.

    Args:
        celsius: The temperature in degrees Celsius.
    """
    return celsius * 9 / 5 + 32


@dataclass(frozen=True)
class Task:
    kind: str
    prompt: str
    output_type: type[BaseModel]
    expected: tuple[tuple[str, dict[str, Any]], ...]


def tasks() -> list[Task]:
    found: list[Task] = []
    for index, city in enumerate(CITIES):
        other = CITIES[(index + 1) % len(CITIES)]
        found.append(Task("single", f"What is the weather in {city}? Use the tool.", Forecast,
                          (("get_weather", {"city": city}),)))  # fmt: skip
        found.append(Task("parallel", f"Which is warmer now, {city} or {other}? Look both up with the tool.",
                          Comparison, (("get_weather", {"city": city}), ("get_weather", {"city": other}))))  # fmt: skip
        found.append(Task("multi-step", f"Get the temperature in {city}, then convert it to Fahrenheit.", Reading,
                          (("get_weather", {"city": city}), ("to_fahrenheit", {"celsius": DEGREES[city]}))))  # fmt: skip
    return found


def right(expected: tuple[tuple[str, dict[str, Any]], ...], made: list[tuple[str, dict[str, Any]]]) -> bool:
    """Every expected call was made with the expected arguments (strings compared loosely)."""

    def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return {k: str(v).strip().lower() for k, v in a.items()} == {k: str(v).strip().lower() for k, v in b.items()}

    return all(any(name == n and same(args, a) for n, a in made) for name, args in expected)


def _arguments(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


async def ours(server: Any, task: Task, *, required: bool = False) -> dict[str, Any]:
    from so_middleware import OutputError, ToolBudget, with_function_invocation, with_structured_output
    from so_middleware.local._clients import chat_client

    adapter = chat_client(server, "chat", max_retries=0, timeout=300)
    client = with_structured_output(
        with_function_invocation(adapter, tools=[get_weather, to_fahrenheit], max_iterations=MAX_REQUESTS),
        max_retries=1,
    )
    budget = ToolBudget(max_requests=MAX_REQUESTS)
    options: dict[str, Any] = {"temperature": 0, "max_tokens": MAX_TOKENS, "features": [budget]}
    if required:
        options["tool_choice"] = "required"  # the first call only: the loop lifts it after a round of calls
    typed, made = False, []
    try:
        response = await client.get_response(task.prompt, output_type=task.output_type, options=options)
        typed = isinstance(response.value, task.output_type)
        made = [(a.name, _arguments(a.arguments)) for a in response.additional_properties.get("tool_activities", [])]
        error = None
    except OutputError as exc:
        made = [(a.name, _arguments(a.arguments)) for a in getattr(exc, "activities", [])]
        error = type(exc).__name__
    finally:
        await adapter.sdk_client.close()
    return {
        "typed": typed,
        "made": made,
        "requests": budget.spent_requests,
        "tokens": budget.spent_tokens,
        "error": error,
    }


async def pydantic_ai(server: Any, task: Task) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    model = OpenAIChatModel(server.model, provider=OpenAIProvider(base_url=server.base_url, api_key="local"))
    agent = Agent(model, output_type=task.output_type, tools=[get_weather, to_fahrenheit], retries=1,
                  model_settings={"temperature": 0, "max_tokens": MAX_TOKENS})  # fmt: skip
    typed, made, requests, tokens, error = False, [], 0, 0, None
    try:
        result = await agent.run(task.prompt, usage_limits=UsageLimits(request_limit=MAX_REQUESTS))
        typed = isinstance(result.output, task.output_type)
        messages = result.all_messages()
        usage = result.usage()
        requests, tokens = usage.requests, usage.total_tokens or 0
    except Exception as exc:  # pydantic-ai's own ends: usage limit, unexpected model behaviour
        error, messages = type(exc).__name__, []
    for message in messages:
        for part in getattr(message, "parts", []):
            if isinstance(part, ToolCallPart):
                made.append((part.tool_name, _arguments(part.args)))
    return {"typed": typed, "made": made, "requests": requests, "tokens": tokens, "error": error}


async def openai_agents(server: Any, task: Task, *, required: bool = False) -> dict[str, Any]:
    import agents
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0)
    agent = agents.Agent(
        name="weather",
        instructions="Use the tools to answer.",
        tools=[agents.function_tool(get_weather), agents.function_tool(to_fahrenheit)],
        output_type=task.output_type,
        model=agents.OpenAIChatCompletionsModel(model=server.model, openai_client=client),
        model_settings=agents.ModelSettings(
            temperature=0, max_tokens=MAX_TOKENS, tool_choice="required" if required else None
        ),  # the SDK resets a required tool choice after a tool call (reset_tool_choice, on by default)
    )
    typed, made, requests, tokens, error = False, [], 0, 0, None
    try:
        result = await agents.Runner.run(agent, task.prompt, max_turns=MAX_REQUESTS)
        typed = isinstance(result.final_output, task.output_type)
        for item in result.new_items:
            raw = getattr(item, "raw_item", None)
            if type(item).__name__ == "ToolCallItem" and raw is not None:
                made.append((getattr(raw, "name", ""), _arguments(getattr(raw, "arguments", "{}"))))
        usage = result.context_wrapper.usage
        requests, tokens = usage.requests, usage.total_tokens
    except Exception as exc:  # the SDK's own ends: max turns, a model behaviour error
        error = type(exc).__name__
    finally:
        await client.close()
    return {"typed": typed, "made": made, "requests": requests, "tokens": tokens, "error": error}


RUNNERS: dict[str, Any] = {
    "so_middleware": ours,
    "so_middleware, first call required": functools.partial(ours, required=True),
    "pydantic-ai": pydantic_ai,
    "openai-agents": openai_agents,
    "openai-agents, first call required": functools.partial(openai_agents, required=True),
}


async def run_all(server: Any) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in AGENTS}
    for task in tasks():
        for name in AGENTS:
            started = time.perf_counter()
            outcome = await RUNNERS[name](server, task)
            outcome |= {"kind": task.kind, "right_calls": right(task.expected, outcome["made"]),
                        "seconds": round(time.perf_counter() - started, 2)}  # fmt: skip
            rows[name].append(outcome)
            log(f"tools: {name} {task.kind}: typed={outcome['typed']} right={outcome['right_calls']} "
                f"requests={outcome['requests']} error={outcome['error']}")  # fmt: skip
    summary: dict[str, Any] = {}
    for name, outcomes in rows.items():
        for kind in ("single", "parallel", "multi-step", "all"):
            chosen = [o for o in outcomes if kind in ("all", o["kind"])]
            count = len(chosen) or 1
            summary.setdefault(name, {})[kind] = {
                "runs": len(chosen),
                "typed": round(sum(o["typed"] for o in chosen) / count, 2),
                "right_calls": round(sum(o["right_calls"] for o in chosen) / count, 2),
                "requests_per_run": round(sum(o["requests"] for o in chosen) / count, 2),
                "tokens_per_run": round(sum(o["tokens"] for o in chosen) / count, 1),
            }
    return {"summary": summary, "rows": rows}


def main() -> None:
    from so_middleware.local import LocalModelServer

    started = time.perf_counter()
    with LocalModelServer(threads=1, parallel=1, extra_args=["--alias", MODEL_ALIAS]) as server:
        result = asyncio.run(run_all(server))
    result |= {"model": MODEL_ALIAS, "max_requests": MAX_REQUESTS, "max_tokens": MAX_TOKENS,
               "seconds": round(time.perf_counter() - started, 1)}  # fmt: skip
    (RESULTS / "tools.json").write_text(json.dumps(result, indent=1) + "\n")
    log(f"tools: wrote {RESULTS / 'tools.json'}")


if __name__ == "__main__":
    main()
