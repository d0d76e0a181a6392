"""Tool calls on the embedded model, before and after tool emulation: forced, and left to the model.

    .venv/bin/python bench/tool_emulation.py            # every prompt and task
    .venv/bin/python bench/tool_emulation.py --quick    # a few of each
    .venv/bin/python bench/tool_emulation.py --auto     # part 3 only, kept beside the saved parts 1 and 2
    python bench/run.py --only tool_emulation           # the suite's section

The embedded llama-server (SmolLM2-135M-Instruct, a chat template without tools) drops `tools`
and `tool_choice`. Two measures, on one server, temperature 0:

1. A fixed set of tool-call prompts (`PROMPTS`), each sent with six function tools and a
   `tool_choice` that requires a call (`"required"` or the tool named), plain and streamed:
   "before" is the Chat Completions adapter with the profile's emulation turned off (what was
   sent before: the tools as they are), "after" the shipped profile (the call asked for by JSON
   schema), and "gateway" the same request through `so-middleware gateway` with the unmodified
   OpenAI SDK (`responses.create`). A call is valid when it names an offered tool (the one
   forced, when one is) and its arguments parse and follow that tool's parameters; the table
   also counts the tool the prompt is about.
2. The library's `tool` strategy on the quality task set (`bench/tasks.py`): `with_structured_output(
   ..., mode="tool")`, before (the profile says tools are unsupported: refused before any call)
   and after; `mode="native"` on the same tasks is the reference.
3. `tool_choice: "auto"`: the `PROMPTS` (each needs a tool) and as many `CHATTER` prompts (none
   needs one), the six tools offered. Counted: a valid call (of any offered tool) for the first,
   a message without a call for the second. Rows: the tools sent as they are (emulation off),
   the shipped emulation (the schema offers `{"answer": ...}` beside the calls) through the
   adapter and through the gateway, plain and streamed; and the two shapes of the answer variant
   side by side on the same raw Chat Completions request (`{"answer": <text>}`, shipped, against
   `{"name": "answer", "content": <text>}`), to show which one the small model follows better.

Writes `bench/results/tool_emulation.json` and prints the Markdown section.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jsonschema_rs
import openai

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tasks as task_set  # noqa: E402

from so_middleware import ForcedTool, FunctionTool, with_structured_output  # noqa: E402
from so_middleware.gateway import GatewayConfig, create_app  # noqa: E402
from so_middleware.gateway._server import AppServer  # noqa: E402
from so_middleware.local import LocalModelServer  # noqa: E402
from so_middleware.openai import LLAMA_SERVER_CHAT, OpenAIChatClient  # noqa: E402
from so_middleware.providers.openai._tool_schema import call_schema  # noqa: E402


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


STRING, NUMBER = {"type": "string"}, {"type": "number"}
TOOLS = [
    FunctionTool("get_weather", _object(city=STRING), "The current weather in a city"),
    FunctionTool("get_time", _object(timezone=STRING), "The current time in a time zone"),
    FunctionTool("convert_currency", _object(amount=NUMBER, source=STRING, target=STRING), "Convert money"),
    FunctionTool("send_email", _object(to=STRING, subject=STRING), "Send an email"),
    FunctionTool("search_web", _object(query=STRING), "Search the web"),
    FunctionTool("add_event", _object(title=STRING, date=STRING), "Add an event to the calendar"),
]
# (prompt, the tool it is about, tool_choice: "required" or that tool named)
PROMPTS: list[tuple[str, str, str]] = [
    ("What is the weather in Oslo?", "get_weather", "required"),
    ("Is it raining in Paris right now?", "get_weather", "named"),
    ("What time is it in Tokyo?", "get_time", "required"),
    ("Tell me the current time in Europe/Berlin.", "get_time", "named"),
    ("How much is 100 US dollars in euros?", "convert_currency", "required"),
    ("Convert 250 GBP to JPY.", "convert_currency", "named"),
    ("Email bob@example.com that the meeting moved to Friday.", "send_email", "required"),
    ("Send alice@example.com a note titled 'Lunch'.", "send_email", "named"),
    ("Search the web for the tallest building in the world.", "search_web", "required"),
    ("Look up who wrote Pride and Prejudice.", "search_web", "named"),
    ("Put 'Dentist' on my calendar for 2026-03-04.", "add_event", "required"),
    ("Add a team lunch on 2026-05-01 to my calendar.", "add_event", "named"),
]
# Prompts no offered tool helps with: with "auto" the right outcome is a message.
CHATTER = [
    "Say hello to me.",
    "What is 2 plus 2?",
    "Write a haiku about autumn.",
    "Tell me a joke.",
    "What colour is a banana?",
    "Give me a synonym for happy.",
    "How many legs does a spider have?",
    "What is the opposite of cold?",
    "Thank you, that is all.",
    "Spell the word cat backwards.",
    "Name a primary colour.",
    "Is a whale a mammal?",
]
MAX_TOKENS = 160
GREEDY = {"temperature": 0, "seed": 1}


def valid_call(name: str | None, arguments: str | None, allowed: set[str]) -> bool:
    """A call naming an allowed tool whose arguments parse and follow its parameters."""
    if name not in allowed or arguments is None:
        return False
    try:
        value = json.loads(arguments)
    except ValueError:
        return False
    tool = next(t for t in TOOLS if t.name == name)
    return bool(jsonschema_rs.validator_for(dict(tool.parameters)).is_valid(value))


def choice_of(about: str, kind: str) -> Any:
    return "required" if kind == "required" else ForcedTool(about)


async def adapter_call(client: OpenAIChatClient, prompt: str, about: str, kind: str, stream: bool) -> dict[str, Any]:
    options = {"tools": TOOLS, "tool_choice": choice_of(about, kind), "max_tokens": MAX_TOKENS, **GREEDY}
    allowed = {t.name for t in TOOLS} if kind == "required" else {about}
    try:
        if stream:
            updates = client.get_response(prompt, options=options, stream=True)
            async for _ in updates:
                pass
            response = await updates.get_final_response()
        else:
            response = await client.get_response(prompt, options=options)
    except Exception as error:  # a typed error is an outcome: counted by its name
        return {"valid": False, "about": False, "error": type(error).__name__}
    calls = response.messages[-1].function_calls if response.messages else []
    first = calls[0] if calls else None
    name, arguments = (first.name, first.arguments) if first else (None, None)
    return {"valid": valid_call(name, arguments, allowed), "about": name == about, "error": None}


def gateway_call(client: openai.OpenAI, prompt: str, about: str, kind: str, stream: bool) -> dict[str, Any]:
    tools = [{"type": "function", "name": t.name, "description": t.description, "parameters": dict(t.parameters)}
             for t in TOOLS]  # fmt: skip
    choice: Any = "required" if kind == "required" else {"type": "function", "name": about}
    allowed = {t.name for t in TOOLS} if kind == "required" else {about}
    request = {"model": "smollm2", "input": prompt, "tools": tools, "tool_choice": choice,
               "max_output_tokens": MAX_TOKENS, "temperature": 0}  # fmt: skip
    try:
        if stream:
            with client.responses.create(**request, stream=True) as events:
                ended = ("response.completed", "response.incomplete", "response.failed")
                response = next(e for e in events if e.type in ended).response
        else:
            response = client.responses.create(**request)
    except openai.APIStatusError as error:
        return {"valid": False, "about": False, "error": f"HTTP {error.status_code}"}
    calls = [item for item in response.output if item.type == "function_call"]
    name, arguments = (calls[0].name, calls[0].arguments) if calls else (None, None)
    return {"valid": valid_call(name, arguments, allowed), "about": name == about, "error": None}


def outcome_of(name: str | None, arguments: str | None, text: str, needs_tool: bool) -> dict[str, Any]:
    """A call or a message, and whether it is the right one for a prompt that needs a tool or none."""
    valid = valid_call(name, arguments, {t.name for t in TOOLS})
    right = valid if needs_tool else (name is None and bool(text.strip()))
    return {"needs_tool": needs_tool, "right": right, "call": name is not None, "error": None}


async def auto_adapter(client: OpenAIChatClient, prompt: str, needs_tool: bool, stream: bool) -> dict[str, Any]:
    options = {"tools": TOOLS, "tool_choice": "auto", "max_tokens": MAX_TOKENS, **GREEDY}
    try:
        if stream:
            updates = client.get_response(prompt, options=options, stream=True)
            async for _ in updates:
                pass
            response = await updates.get_final_response()
        else:
            response = await client.get_response(prompt, options=options)
    except Exception as error:  # a typed error is an outcome: counted by its name
        return {"needs_tool": needs_tool, "right": False, "call": False, "error": type(error).__name__}
    calls = response.messages[-1].function_calls if response.messages else []
    name, arguments = (calls[0].name, calls[0].arguments) if calls else (None, None)
    return outcome_of(name, arguments, response.text, needs_tool)


def auto_gateway(client: openai.OpenAI, prompt: str, needs_tool: bool, stream: bool) -> dict[str, Any]:
    tools = [{"type": "function", "name": t.name, "description": t.description, "parameters": dict(t.parameters)}
             for t in TOOLS]  # fmt: skip
    request = {"model": "smollm2", "input": prompt, "tools": tools, "tool_choice": "auto",
               "max_output_tokens": MAX_TOKENS, "temperature": 0}  # fmt: skip
    try:
        if stream:
            with client.responses.create(**request, stream=True) as events:
                ended = ("response.completed", "response.incomplete", "response.failed")
                response = next(e for e in events if e.type in ended).response
        else:
            response = client.responses.create(**request)
    except openai.APIStatusError as error:
        return {"needs_tool": needs_tool, "right": False, "call": False, "error": f"HTTP {error.status_code}"}
    calls = [item for item in response.output if item.type == "function_call"]
    name, arguments = (calls[0].name, calls[0].arguments) if calls else (None, None)
    return outcome_of(name, arguments, response.output_text, needs_tool)


# The answer variant's two shapes: its own key (shipped), or a reserved name beside the tools'.
SHAPES = {
    '{"answer": <text>} (shipped)': ({"answer": {"type": "string"}}, '{"answer": ...}', "answer"),
    '{"name": "answer", "content": <text>}': (
        {"name": {"const": "answer"}, "content": {"type": "string"}},
        '{"name": "answer", "content": ...}',
        "content",
    ),
}


async def auto_shape(sdk: openai.AsyncOpenAI, model: str, shape: str, prompt: str, needs_tool: bool) -> dict[str, Any]:
    """One raw Chat Completions request whose schema offers the calls and the answer in `shape`."""
    properties, spelled, key = SHAPES[shape]
    variants = call_schema(TOOLS)["anyOf"] + [
        {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
    ]
    listed = "\n".join(f"- {tool.name}: {tool.description}" for tool in TOOLS)
    guide = (f"When one of these functions is needed, answer with a JSON call of it, its arguments following its "
             f"parameters; otherwise answer with {spelled} holding your reply:\n{listed}")  # fmt: skip
    completion = await sdk.chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": guide}, {"role": "user", "content": prompt}],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "function_call", "schema": {"anyOf": variants}},
        },
        max_tokens=MAX_TOKENS,
        **GREEDY,
    )
    try:
        value = json.loads(completion.choices[0].message.content or "")
    except ValueError:
        return {"needs_tool": needs_tool, "right": False, "call": False, "error": "not JSON (cut)"}
    if key in value and value.get("name", "answer") == "answer":
        return outcome_of(None, None, str(value[key]), needs_tool)
    return outcome_of(value.get("name"), json.dumps(value.get("arguments")), "", needs_tool)


def auto_summary(label: str, stream: bool, outcomes: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    errors: dict[str, int] = {}
    for outcome in outcomes:
        if outcome["error"]:
            errors[outcome["error"]] = errors.get(outcome["error"], 0) + 1
    tool, chatter = [o for o in outcomes if o["needs_tool"]], [o for o in outcomes if not o["needs_tool"]]
    return {"contender": label, "stream": stream, "need_a_tool": len(tool), "valid_calls": sum(o["right"] for o in tool),
            "need_none": len(chatter), "messages": sum(o["right"] for o in chatter),
            "calls_where_none_needed": sum(o["call"] for o in chatter), "errors": errors,
            "seconds": round(seconds, 1)}  # fmt: skip


async def auto_rows(server: LocalModelServer, sdk: openai.AsyncOpenAI, quick: bool) -> list[dict[str, Any]]:
    cases = [(p, True) for p, _, _ in (PROMPTS[:4] if quick else PROMPTS)]
    cases += [(p, False) for p in (CHATTER[:4] if quick else CHATTER)]
    rows = []
    for label, profile, streams in (
        ("tools sent as they are (emulation off)", LLAMA_SERVER_CHAT.replace(tool_emulation=False), (False,)),
        ("emulated, adapter", LLAMA_SERVER_CHAT, (False, True)),
    ):
        client = OpenAIChatClient(sdk, server.model, capabilities=profile)
        for stream in streams:
            started = time.perf_counter()
            outcomes = [await auto_adapter(client, prompt, needs, stream) for prompt, needs in cases]
            rows.append(auto_summary(label, stream, outcomes, time.perf_counter() - started))
    with AppServer(create_app(GatewayConfig(backend_url=server.base_url))) as gateway:
        client = openai.OpenAI(base_url=gateway.base_url, api_key="none", max_retries=2, timeout=120)
        for stream in (False, True):
            started = time.perf_counter()
            outcomes = [await asyncio.to_thread(auto_gateway, client, p, needs, stream) for p, needs in cases]
            rows.append(auto_summary("emulated, gateway, OpenAI SDK", stream, outcomes, time.perf_counter() - started))
    for shape in SHAPES:
        started = time.perf_counter()
        outcomes = [await auto_shape(sdk, server.model, shape, prompt, needs) for prompt, needs in cases]
        rows.append(
            auto_summary(f"answer variant {shape}, raw request", False, outcomes, time.perf_counter() - started)
        )
    return rows


def summary(label: str, stream: bool, outcomes: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    errors: dict[str, int] = {}
    for outcome in outcomes:
        if outcome["error"]:
            errors[outcome["error"]] = errors.get(outcome["error"], 0) + 1
    return {
        "contender": label,
        "stream": stream,
        "requests": len(outcomes),
        "valid_calls": sum(o["valid"] for o in outcomes),
        "tool_it_is_about": sum(o["about"] for o in outcomes),
        "errors": errors,
        "seconds": round(seconds, 1),
    }


async def strategy_rows(sdk: openai.AsyncOpenAI, model: str, chosen: list[task_set.Task]) -> list[dict[str, Any]]:
    contenders = [
        ('mode="tool", before (tools=False, no emulation)', "tool", LLAMA_SERVER_CHAT.replace(tool_emulation=False)),
        ('mode="tool", after (emulated)', "tool", LLAMA_SERVER_CHAT),
        ('mode="native" (reference)', "native", LLAMA_SERVER_CHAT),
    ]
    rows = []
    for label, mode, profile in contenders:
        client = with_structured_output(OpenAIChatClient(sdk, model, capabilities=profile), mode=mode, max_retries=2)
        valid = correct = 0
        errors: dict[str, int] = {}
        started = time.perf_counter()
        for task in chosen:
            try:
                response = await client.get_response(
                    task.prompt(), output_type=task.output_type, options={"max_tokens": 200, **GREEDY}
                )
            except Exception as error:  # a typed error is an outcome: counted by its name
                errors[type(error).__name__] = errors.get(type(error).__name__, 0) + 1
                continue
            valid += 1
            value = response.value.model_dump(mode="json")
            correct += task_set.normalize(value) == task_set.normalize(task.expected)
        rows.append({"contender": label, "tasks": len(chosen), "valid": valid, "exactly_correct": correct,
                     "errors": errors, "seconds": round(time.perf_counter() - started, 1)})  # fmt: skip
    return rows


async def measure(server: LocalModelServer, quick: bool, auto_only: bool = False) -> dict[str, Any]:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=2, timeout=120)
    if auto_only:
        auto = await auto_rows(server, sdk, quick)
        await sdk.close()
        return {"auto": auto}
    prompts = PROMPTS[:4] if quick else PROMPTS
    chosen = task_set.TASKS[:4] if quick else task_set.TASKS
    rows = []
    for label, profile in (("before: tools sent as they are", LLAMA_SERVER_CHAT.replace(tool_emulation=False)),
                           ("after: emulated by JSON schema", LLAMA_SERVER_CHAT)):  # fmt: skip
        client = OpenAIChatClient(sdk, server.model, capabilities=profile)
        for stream in (False, True):
            started = time.perf_counter()
            outcomes = [await adapter_call(client, p, about, kind, stream) for p, about, kind in prompts]
            rows.append(summary(label, stream, outcomes, time.perf_counter() - started))
    with AppServer(create_app(GatewayConfig(backend_url=server.base_url))) as gateway:
        client = openai.OpenAI(base_url=gateway.base_url, api_key="none", max_retries=2, timeout=120)
        for stream in (False, True):
            started = time.perf_counter()
            outcomes = [
                await asyncio.to_thread(gateway_call, client, p, about, kind, stream) for p, about, kind in prompts
            ]
            rows.append(
                summary("gateway (no backend given), OpenAI SDK", stream, outcomes, time.perf_counter() - started)
            )
    strategy = await strategy_rows(sdk, server.model, chosen)
    auto = await auto_rows(server, sdk, quick)
    await sdk.close()
    return {"calls": rows, "strategy": strategy, "auto": auto}


def run(quick: bool = False, auto_only: bool = False, saved: dict[str, Any] | None = None) -> dict[str, Any]:
    """Start the embedded server once, measure the parts, save and return the results; with
    `auto_only`, part 3 alone, the other parts kept as `saved` has them."""
    started = time.perf_counter()
    with LocalModelServer(parallel=1) as server:
        measured = asyncio.run(measure(server, quick, auto_only))
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = [round(v, 2) for v in os.getloadavg()]
    auto = {"auto_date": now, "auto_load_average": load, "auto_prompts": len(CHATTER[:4] if quick else CHATTER)}
    if auto_only and saved is not None:
        return {**saved, **measured, **auto, "auto_seconds_total": round(time.perf_counter() - started, 1)}
    return {
        **measured,
        **auto,
        "date": now,
        "model": server.model,
        "prompts": len(PROMPTS[:4] if quick else PROMPTS),
        "tools": len(TOOLS),
        "max_tokens": MAX_TOKENS,
        "load_average": load,
        "seconds_total": round(time.perf_counter() - started, 1),
    }


def section(data: dict[str, Any]) -> list[str]:
    """The BENCHMARKS.md section for these results."""
    lines = [
        "## 7. Forced tool calls on the embedded model",
        "",
        f"`bench/tool_emulation.py`, {data['date']}: the embedded llama-server ({data['model']}, a chat template "
        "without tools, so `tools` and `tool_choice` never reach the model). "
        f"{data['prompts']} tool-call prompts, each with {data['tools']} function tools and a `tool_choice` that "
        f'requires a call (half `"required"`, half the tool named), temperature 0, at most {data["max_tokens"]} '
        "tokens. Before: the tools sent as they are (the profile's emulation off); after: the call asked for by "
        "JSON schema (`response_format` json_schema, grammar-enforced) and answered as a tool call; the gateway "
        "rows are the same requests through `so-middleware gateway` with the OpenAI SDK. Valid: a call of an "
        "offered tool (the one named, when named) whose arguments parse and follow its parameters.",
        "",
        "| contender | streamed | valid calls | the tool the prompt is about | errors | seconds |",
        "|---|---|---:|---:|---|---:|",
    ]
    for row in data["calls"]:
        errors = ", ".join(f"{name} × {count}" for name, count in row["errors"].items()) or "none"
        lines.append(
            f"| {row['contender']} | {'yes' if row['stream'] else 'no'} | {row['valid_calls']} / {row['requests']} "
            f"| {row['tool_it_is_about']} / {row['requests']} | {errors} | {row['seconds']} |"
        )
    lines += [
        "",
        "The library's `tool` strategy on the quality task set (`bench/tasks.py`), `max_retries=2`: before, the "
        'profile says tools are unsupported and `mode="tool"` is refused before any call (`UserError`).',
        "",
        "| contender | valid typed values | exactly correct | errors | seconds |",
        "|---|---:|---:|---|---:|",
    ]
    for row in data["strategy"]:
        errors = ", ".join(f"{name} × {count}" for name, count in row["errors"].items()) or "none"
        lines.append(
            f"| {row['contender']} | {row['valid']} / {row['tasks']} | {row['exactly_correct']} / {row['tasks']} "
            f"| {errors} | {row['seconds']} |"
        )
    lines += ["", f"Load average at the end: {data['load_average']}; the section took {data['seconds_total']:.0f} s."]
    return lines + auto_section(data) if "auto" in data else [*lines, ""]


def auto_section(data: dict[str, Any]) -> list[str]:
    """Part 3: `tool_choice: "auto"`, a call or a message."""
    lines = [
        "",
        '### `tool_choice: "auto"` on the embedded model',
        "",
        f'{data["auto_date"]}: the same {data["tools"]} tools, `tool_choice` "auto", the {data["prompts"]} prompts '
        f"above (each needs a tool) and {data['auto_prompts']} that need none (`CHATTER`), temperature 0, at most "
        f"{data['max_tokens']} tokens. Right: a valid call (of any offered tool) for a prompt that needs one, a "
        "message without a call for one that needs none. Before this emulation, `auto` was refused on this backend "
        "(`UserError`, a 400 through the gateway); the first row is what sending the tools as they are gives. The "
        "last two rows compare the answer variant's shapes on the same raw Chat Completions request.",
        "",
        "| contender | streamed | need a tool: valid call | need none: message | need none: a call | errors | seconds |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    for row in data["auto"]:
        errors = ", ".join(f"{name} × {count}" for name, count in row["errors"].items()) or "none"
        lines.append(
            f"| {row['contender']} | {'yes' if row['stream'] else 'no'} | {row['valid_calls']} / {row['need_a_tool']} "
            f"| {row['messages']} / {row['need_none']} | {row['calls_where_none_needed']} / {row['need_none']} "
            f"| {errors} | {row['seconds']} |"
        )
    return [*lines, "", f"Load average at the end: {data['auto_load_average']}.", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few prompts and tasks")
    parser.add_argument("--auto", action="store_true", help='part 3 only ("auto"), beside the saved parts 1 and 2')
    args = parser.parse_args()
    out = ROOT / "bench" / "results" / ("quick" if args.quick else "")
    saved_path = out / "tool_emulation.json"
    saved = json.loads(saved_path.read_text()) if args.auto and saved_path.exists() else None
    result = run(quick=args.quick, auto_only=args.auto and saved is not None, saved=saved)
    out.mkdir(parents=True, exist_ok=True)
    (out / "tool_emulation.json").write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(section(result)))


if __name__ == "__main__":
    main()
