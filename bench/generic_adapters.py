"""Generic adapters, no profile: the Responses and Messages adapters built from an SDK client
with only a `base_url` (so capability discovery identifies llama-server and takes its profile;
with `--no-discover`, the generic protocol profile), wrapped in `with_structured_output` with
default settings, run over the quality task set one task after another on one layer per route
(so what a run learns serves the next). The quality section of `bench/run.py` has the same
comparison with the profiled adapters, tasks in flight (`bench/quality.py --defaults`).

Prints, per route: valid and exactly-correct values, model calls in all, calls of the first task
and the mean of the others, and the strategies used. Runs against whichever so_middleware is on
the import path:

    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/generic_adapters.py [--no-discover]
    SO_MIDDLEWARE_THREADS=1 PYTHONPATH=/path/to/other/checkout .venv/bin/python bench/generic_adapters.py
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tasks import TASKS

MAX_TOKENS = 160
SEED = 7


async def route_outcomes(server: Any, route: str, discover: bool) -> dict[str, Any]:
    import anthropic
    import openai

    from so_middleware import OutputError, with_structured_output
    from so_middleware.anthropic import AnthropicChatClient
    from so_middleware.openai import OpenAIResponsesClient

    if route == "responses":
        sdk: Any = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0)
        adapter: Any = OpenAIResponsesClient(sdk, server.model, discover=discover)
    else:
        sdk = anthropic.AsyncAnthropic(base_url=server.root_url, api_key="local", max_retries=0)
        adapter = AnthropicChatClient(sdk, server.model, discover=discover)
    client = with_structured_output(adapter)
    valid = exact = 0
    calls: list[int] = []
    strategies: collections.Counter[str] = collections.Counter()
    options = {"temperature": 0, "seed": SEED, "max_tokens": MAX_TOKENS}
    for task in TASKS:
        try:
            response = await client.get_response(task.prompt(), output_type=task.output_type, options=options)
            attempts = response.attempts
            valid += isinstance(response.value, task.output_type)
            exact += task.is_exact(response.value)
        except OutputError as error:
            attempts = error.attempts
        calls.append(len(attempts))
        strategies.update(str(a.strategy) for a in attempts)
    await sdk.close()
    return {
        "route": route,
        "profile": adapter.capabilities.name,
        "tasks": len(TASKS),
        "valid": valid,
        "exact": exact,
        "calls": sum(calls),
        "first_task_calls": calls[0],
        "later_mean_calls": round(sum(calls[1:]) / max(1, len(calls) - 1), 2),
        "strategies": dict(strategies),
    }


async def main() -> None:
    from so_middleware.local import LocalModelServer

    discover = "--no-discover" not in sys.argv[1:]
    with LocalModelServer(parallel=1) as server:
        for route in ("responses", "anthropic"):
            print(json.dumps(await route_outcomes(server, route, discover)), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
