"""What the loop-breaking re-ask rescues, and what watching for loops costs, on the real local model.

Runs every task of `tasks.py` on each route of the local llama-server (SmolLM2-135M) whose
profile has loop-breaking fields (Chat Completions, Responses, Messages) with the default strategy,
`max_tokens=300`, temperature 0, seed 7 (not on Messages, which has no seed), at most 2 re-asks,
plain and streamed, in two configurations of the same layer:

- `on`: the route's llama-server profile as shipped (`so_middleware.local.chat_client`): an answer
  cut off in a loop (a stream: one that used its budget with its tail repeating and its document
  open) is re-asked once with the profile's loop-breaking fields (`loop_breaking`);
- `off`: the same profile with `loop_breaking=()` and no loop watch on the stream: a loop ends
  the run at once, as a cut-off did before.

A task is *rescued* when `on` returns a valid value after an attempt that looped; the cost on
answers that needed no rescue is the tokens and seconds of the tasks answered without a loop in
both configurations, `on` against `off`. Results: bench/results/loop_rescue.json, one entry
per route (a run of some routes keeps the others' entries), each with the date it was measured.

    .venv/bin/python bench/loop_rescue.py [--routes chat,responses,anthropic]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from tasks import TASKS, Task

SEED = 7
MAX_TOKENS = 300
MAX_RETRIES = 2
RESULTS = Path(__file__).parent / "results" / "loop_rescue.json"


class _NoWatch:
    """The stream's loop watch, switched off (the `off` configuration)."""

    def __init__(self, *args: Any) -> None:
        pass

    def add(self, delta: str) -> None:
        return None


async def _one(client: Any, task: Task, stream: bool, route: str) -> dict[str, Any]:
    from so_middleware import OutputError, StructuredOutput

    feature = StructuredOutput(task.output_type, max_retries=MAX_RETRIES)
    options: dict[str, Any] = {"temperature": 0, "max_tokens": MAX_TOKENS, "features": [feature]}
    if route != "anthropic":  # the Messages API has no seed
        options["seed"] = SEED
    start = time.perf_counter()
    try:
        if stream:
            response = await client.get_response(task.prompt(), options=options, stream=True).get_final_response()
        else:
            response = await client.get_response(task.prompt(), options=options)
        attempts, error, valid = response.attempts, None, True
        exact = task.is_exact(response.value)
    except OutputError as caught:
        attempts, error, valid, exact = caught.attempts, type(caught).__name__, False, False
    except Exception as caught:  # an API error from the server: reported, not hidden
        attempts, error, valid, exact = [], type(caught).__name__, False, False
    seconds = time.perf_counter() - start
    return {
        "task": task.name,
        "valid": valid,
        "exact": exact,
        "error": error,
        "looped": any("looped" in str(a.error or "") for a in attempts),
        # what a looped attempt cost where its usage is unknown (a stream closed before its end)
        "looped_chars": sum(len(a.text) for a in attempts if "looped" in str(a.error or "")),
        "attempts": len(attempts),
        "tokens": sum((a.usage.total_tokens or 0) for a in attempts if a.usage is not None),
        "seconds": seconds,
    }


def _sdk(server: Any, route: str) -> Any:
    if route == "anthropic":
        import anthropic

        return anthropic.AsyncAnthropic(base_url=server.root_url, api_key="local", max_retries=2, timeout=300)
    import openai

    return openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=2, timeout=300)


def _client(server: Any, sdk: Any, route: str, *, on: bool) -> Any:
    """The route's adapter with its llama-server profile bound to the server, as `chat_client`
    builds it; `on=False` drops the profile's loop-breaking fields."""
    from so_middleware import with_structured_output
    from so_middleware.anthropic import LLAMA_SERVER_MESSAGES, AnthropicChatClient
    from so_middleware.openai import LLAMA_SERVER_CHAT, LLAMA_SERVER_RESPONSES, OpenAIChatClient, OpenAIResponsesClient

    adapter, shipped = {
        "chat": (OpenAIChatClient, LLAMA_SERVER_CHAT),
        "responses": (OpenAIResponsesClient, LLAMA_SERVER_RESPONSES),
        "anthropic": (AnthropicChatClient, LLAMA_SERVER_MESSAGES),
    }[route]
    profile = shipped.replace(default_max_tokens=server.max_tokens)
    profile = profile if on else profile.replace(loop_breaking=())
    return with_structured_output(adapter(sdk, server.model, capabilities=profile))


def _watching(on: bool) -> None:
    import so_middleware.middleware.structured_output._call as call_module
    from so_middleware.schema import LoopWatch

    call_module.LoopWatch = LoopWatch if on else _NoWatch  # type: ignore[misc,assignment]


async def _both(server: Any, route: str, *, stream: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Each task under `on` then `off` (or the other way round, every other task): a drift in
    the machine's load falls on both configurations alike."""
    sdk = _sdk(server, route)
    clients = {True: _client(server, sdk, route, on=True), False: _client(server, sdk, route, on=False)}
    rows: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    try:
        for index, task in enumerate(TASKS):
            for on in (True, False) if index % 2 else (False, True):
                _watching(on)
                rows[on].append(await _one(clients[on], task, stream, route))
    finally:
        await sdk.close()
    return rows[True], rows[False]


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows) or 1
    return {
        "tasks": len(rows),
        "valid_share": sum(r["valid"] for r in rows) / n,
        "exact_share": sum(r["exact"] for r in rows) / n,
        "looped": sum(r["looped"] for r in rows),
        "errors": {e: sum(r["error"] == e for r in rows) for e in {r["error"] for r in rows} if e},
    }


def _compare(on: list[dict[str, Any]], off: list[dict[str, Any]]) -> dict[str, Any]:
    rescued = [a["task"] for a in on if a["looped"] and a["valid"]]
    # the tasks answered in both configurations (an API error has no attempt) without a loop
    calm = [(a, b) for a, b in zip(on, off, strict=True) if a["attempts"] and b["attempts"]]
    calm = [(a, b) for a, b in calm if not a["looped"] and not b["looped"]]
    n = len(calm) or 1
    return {
        "looped_off": [b["task"] for b in off if b["looped"]],
        "rescued": rescued,
        "rescue_rate": len(rescued) / (sum(b["looped"] for b in off) or 1),
        "looped_chars_on": sum(a["looped_chars"] for a in on),
        "seconds_looped_tasks_on": sum(a["seconds"] for a in on if a["looped"]),
        "no_rescue_needed_tasks": len(calm),
        "tokens_per_task_on": sum(a["tokens"] for a, _ in calm) / n,
        "tokens_per_task_off": sum(b["tokens"] for _, b in calm) / n,
        "seconds_per_task_on": sum(a["seconds"] for a, _ in calm) / n,
        "seconds_per_task_off": sum(b["seconds"] for _, b in calm) / n,
    }


async def _route(server: Any, route: str) -> dict[str, Any]:
    """One route's entry: plain and streamed, `on` against `off`, with when it was measured."""
    result: dict[str, Any] = {
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_before": [round(value, 2) for value in os.getloadavg()],
    }
    for stream in (False, True):
        on, off = await _both(server, route, stream=stream)
        result["stream" if stream else "plain"] = {
            "on": _summary(on),
            "off": _summary(off),
            "compare": _compare(on, off),
            "rows": {"on": on, "off": off},
        }
        print(route, json.dumps(result["stream" if stream else "plain"]["compare"], indent=1), flush=True)
    result["load_average_after"] = [round(value, 2) for value in os.getloadavg()]
    return result


def main() -> None:
    from so_middleware.local import LocalModelServer

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--routes", default="chat,responses,anthropic", help="comma-separated routes")
    routes = parser.parse_args().routes.split(",")
    saved = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results: dict[str, Any] = {"routes": dict(saved.get("routes", {}))}
    results["run"] = {"python": sys.version.split()[0], "machine": platform.machine(), "max_tokens": MAX_TOKENS}
    with LocalModelServer(threads=1, parallel=1) as server:
        for route in routes:
            results["routes"][route] = asyncio.run(_route(server, route))
            RESULTS.write_text(json.dumps(results, indent=1) + "\n")  # route by route
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
