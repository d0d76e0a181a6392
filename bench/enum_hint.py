"""How the prompt skeleton's rendering of `Enum`/`Literal` choices fares on the real local model.

Runs the bench's enum tasks (`tasks.py`, category "enum") with `StructuredOutput(T,
mode="prompted")` on the Anthropic Messages route of the local llama-server (SmolLM2-135M), where
prompting is the only strategy, and prints the skeleton each type is prompted with and, per task,
whether the answer was valid and exact, and how many attempts it took. Temperature 0, seed 7,
at most 2 re-asks, as in `quality.py`.

    .venv/bin/python bench/enum_hint.py            # this tree's so_middleware
    PYTHONPATH=/path/to/other/tree .venv/bin/python bench/enum_hint.py   # another version's
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from tasks import TASKS, Task

SEED = 7
MAX_TOKENS = 160
MAX_RETRIES = 2
IN_FLIGHT = 4


async def _run(client: Any, task: Task) -> dict[str, Any]:
    from so_middleware import OutputError, StructuredOutput

    feature = StructuredOutput(task.output_type, mode="prompted", max_retries=MAX_RETRIES)
    options = {"temperature": 0, "seed": SEED, "max_tokens": MAX_TOKENS, "features": [feature]}
    start = time.perf_counter()
    try:
        response = await client.get_response(task.prompt(), options=options)
    except OutputError as error:
        last = error.attempts[-1].text if error.attempts else ""
        return {"task": task.name, "valid": False, "exact": False, "attempts": len(error.attempts), "last": last[:120]}
    value = response.value
    return {
        "task": task.name,
        "valid": True,
        "exact": task.is_exact(value),
        "attempts": len(response.attempts),
        "value": value.model_dump(mode="json"),
        "seconds": round(time.perf_counter() - start, 2),
    }


def main() -> None:
    import anthropic

    from so_middleware import with_structured_output
    from so_middleware.anthropic import AnthropicChatClient
    from so_middleware.local import LocalModelServer
    from so_middleware.schema import OutputSchema, shape_hint

    tasks = [task for task in TASKS if task.category == "enum"]
    for output_type in dict.fromkeys(task.output_type for task in tasks):
        print(f"{output_type.__name__}: {shape_hint(OutputSchema(output_type).json_schema('anthropic'))!r}")

    async def go(server: Any) -> list[dict[str, Any]]:
        sdk = anthropic.AsyncAnthropic(base_url=server.root_url, api_key="local", max_retries=0)
        client = with_structured_output(AnthropicChatClient(sdk, server.model))
        limit = asyncio.Semaphore(IN_FLIGHT)

        async def one(task: Task) -> dict[str, Any]:
            async with limit:
                return await _run(client, task)

        return list(await asyncio.gather(*(one(task) for task in tasks)))

    with LocalModelServer(threads=1, parallel=IN_FLIGHT) as server:
        results = asyncio.run(go(server))
    for result in results:
        print(json.dumps(result))
    valid = sum(r["valid"] for r in results)
    exact = sum(r["exact"] for r in results)
    attempts = sum(r["attempts"] for r in results) / len(results)
    print(f"enum tasks: {len(results)}  valid: {valid}  exact: {exact}  attempts/task: {attempts:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
