"""The peers' rows of the quality section, run in this venv against the same local server and tasks
as ours (`bench/quality.py`): each library built from an SDK client and a `base_url` only, in the
modes it offers on that route, temperature 0, seed 7, 160 output tokens, at most 2 re-asks where
the library re-asks at all.

| library     | chat                                  | responses                             | anthropic (Messages)                  |
|-------------|---------------------------------------|---------------------------------------|---------------------------------------|
| pydantic-ai | ToolOutput (its default), NativeOutput, PromptedOutput | the same three       | the same three                        |
| LangChain   | json_schema, function_calling, json_mode | the same three, `use_responses_api=True` | function_calling, json_schema (`langchain-anthropic`, when installed) |
| SDK's parse | OpenAI `chat.completions.parse`       | OpenAI `responses.parse`              | Anthropic `messages.parse`            |

instructor's rows need its own environment (`.venv-bench`); `bench/quality.py` runs them there.
The rows are merged into `bench/results/quality.json` like `--defaults`' rows:

    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/quality_peers.py [--routes chat,responses,anthropic]

`bench/quality.py --defaults --peers` runs these rows and instructor's in the same run as ours.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from _common import MODEL_ALIAS, RESULTS, log
from quality import IN_FLIGHT, MAX_RETRIES, MAX_TOKENS, SEED, THREADS, Config, Outcome, _all_tasks, merge
from tasks import TASKS, Task

Run = Callable[[Task], Awaitable[tuple[Any, int, int]]]  # a task -> (value, attempts, tokens)


async def _timed(task: Task, run: Run) -> Outcome:
    start = time.perf_counter()
    try:
        value, attempts, tokens = await run(task)
    except Exception as error:  # every peer's own failure, reported by its type
        return Outcome(task.name, False, False, 1, 0, time.perf_counter() - start, type(error).__name__)
    valid = isinstance(value, task.output_type)
    return Outcome(
        task.name,
        valid,
        valid and task.is_exact(value),
        attempts,
        tokens,
        time.perf_counter() - start,
        None if valid else "wrong type",
        value.model_dump(mode="json") if valid else None,
    )


def _pydantic_ai(server: Any, route: str, output: str) -> Run:
    import anthropic
    import openai
    from pydantic_ai import Agent, NativeOutput, PromptedOutput, ToolOutput

    model: Any
    if route == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        sdk: Any = anthropic.AsyncAnthropic(base_url=server.root_url, api_key="local", max_retries=0, timeout=300)
        model = AnthropicModel(MODEL_ALIAS, provider=AnthropicProvider(anthropic_client=sdk))
    else:
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)
        adapter = OpenAIChatModel if route == "chat" else OpenAIResponsesModel
        model = adapter(MODEL_ALIAS, provider=OpenAIProvider(openai_client=sdk))
    marker = {"ToolOutput": ToolOutput, "NativeOutput": NativeOutput, "PromptedOutput": PromptedOutput}[output]
    settings: Any = {"temperature": 0, "seed": SEED, "max_tokens": MAX_TOKENS}

    async def run(task: Task) -> tuple[Any, int, int]:
        agent: Any = Agent(model, output_type=marker(task.output_type), retries=MAX_RETRIES)
        result = await agent.run(task.prompt(), model_settings=settings)
        usage = result.usage
        return result.output, usage.requests, usage.total_tokens

    return run


def _langchain(server: Any, route: str, method: str) -> Run:
    chat: Any
    if route == "anthropic":
        from langchain_anthropic import ChatAnthropic

        chat = ChatAnthropic(  # type: ignore[call-arg]
            model=MODEL_ALIAS,  # type: ignore[arg-type]
            base_url=server.root_url,
            api_key="local",  # type: ignore[arg-type]
            temperature=0,
            max_tokens=MAX_TOKENS,  # type: ignore[arg-type]
            max_retries=0,
            timeout=300,
        )
    else:
        from langchain_openai import ChatOpenAI

        chat = ChatOpenAI(
            model=MODEL_ALIAS,
            base_url=server.base_url,
            api_key="local",  # type: ignore[arg-type]
            temperature=0,
            seed=SEED if route == "chat" else None,  # the Responses API has no `seed`
            max_tokens=MAX_TOKENS,  # type: ignore[call-arg]
            max_retries=0,
            timeout=300,
            use_responses_api=route == "responses",
        )

    async def run(task: Task) -> tuple[Any, int, int]:
        structured = chat.with_structured_output(task.output_type, method=method, include_raw=True)  # type: ignore[call-overload]
        result = await structured.ainvoke(task.prompt())
        usage = getattr(result["raw"], "usage_metadata", None) or {}
        if result["parsing_error"] is not None:
            raise result["parsing_error"]
        return result["parsed"], 1, usage.get("total_tokens", 0)

    return run


def _sdk_parse(server: Any, route: str) -> Run:
    import openai

    if route == "anthropic":
        return _anthropic_parse(server)

    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)

    async def run(task: Task) -> tuple[Any, int, int]:
        if route == "chat":
            completion = await sdk.chat.completions.parse(
                model=MODEL_ALIAS,
                messages=[{"role": "user", "content": task.prompt()}],
                response_format=task.output_type,
                temperature=0,
                seed=SEED,
                max_tokens=MAX_TOKENS,
            )
            tokens = completion.usage.total_tokens if completion.usage else 0
            return completion.choices[0].message.parsed, 1, tokens
        response = await sdk.responses.parse(
            model=MODEL_ALIAS,
            input=task.prompt(),
            text_format=task.output_type,
            temperature=0,
            max_output_tokens=MAX_TOKENS,
        )
        return response.output_parsed, 1, response.usage.total_tokens if response.usage else 0

    return run


def _anthropic_parse(server: Any) -> Run:
    import anthropic

    sdk = anthropic.AsyncAnthropic(base_url=server.root_url, api_key="local", max_retries=0, timeout=300)

    async def run(task: Task) -> tuple[Any, int, int]:
        message = await sdk.messages.parse(
            model=MODEL_ALIAS,
            messages=[{"role": "user", "content": task.prompt()}],
            output_format=task.output_type,
            max_tokens=MAX_TOKENS,
            extra_body={"temperature": 0},  # the SDK has no keyword for it
        )
        tokens = message.usage.input_tokens + message.usage.output_tokens
        return message.parsed_output, 1, tokens

    return run


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


LANGCHAIN_METHODS = {
    "chat": ("json_schema", "function_calling", "json_mode"),
    "responses": ("json_schema", "function_calling", "json_mode"),
    "anthropic": ("function_calling", "json_schema"),
}
SDK_PARSE = {"chat": "chat.completions.parse", "responses": "responses.parse", "anthropic": "messages.parse"}


def peer_rows(server: Any, routes: list[str]) -> list[tuple[Config, Run]]:
    """Every peer configuration that runs in this venv on `routes`."""
    rows: list[tuple[Config, Run]] = []
    for route in routes:
        for output in ("ToolOutput", "NativeOutput", "PromptedOutput"):
            rows.append((Config("pydantic-ai", route, output), _pydantic_ai(server, route, output)))
        if route != "anthropic" or _installed("langchain_anthropic"):
            for method in LANGCHAIN_METHODS[route]:
                library = "LangChain with_structured_output"
                rows.append((Config(library, route, method), _langchain(server, route, method)))
        sdk = "Anthropic SDK" if route == "anthropic" else "OpenAI SDK"
        rows.append((Config(sdk, route, SDK_PARSE[route]), _sdk_parse(server, route)))
    return rows


def main() -> None:
    from so_middleware.local import LocalModelServer

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--routes", default="chat,responses,anthropic", help="comma-separated routes")
    parser.add_argument(
        "--into", default=str(RESULTS / "quality.json"), help="the results file the rows are merged into"
    )
    args = parser.parse_args()
    into = Path(args.into)
    routes = args.routes.split(",")
    measured = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = [round(value, 2) for value in os.getloadavg()]
    python = os.path.relpath(sys.executable, RESULTS.parent.parent)
    saved = json.loads(into.read_text())
    configs: list[Config] = []

    def save() -> None:
        run_info = {
            "measured": measured,
            "command": f"SO_MIDDLEWARE_THREADS=1 {python} bench/quality_peers.py --routes {args.routes}",
            "load_average_before": load_before,
            "load_average_after": [round(value, 2) for value in os.getloadavg()],
        }
        into.write_text(json.dumps(merge(saved, configs, run_info), indent=2, default=str) + "\n")

    async def go(server: Any) -> None:
        for config, run in peer_rows(server, routes):
            log(f"quality: {config.library} {config.route} {config.mode}, {len(TASKS)} tasks")
            await _all_tasks(config, lambda task, run=run: _timed(task, run), TASKS)
            log(f"    valid {sum(o.valid for o in config.outcomes)}/{len(TASKS)}")
            configs.append(config)
            save()  # row by row: a run cut short keeps the rows it finished

    with LocalModelServer(threads=THREADS, parallel=IN_FLIGHT, extra_args=["--alias", MODEL_ALIAS]) as server:
        asyncio.run(go(server))
    log(f"wrote {into}")


if __name__ == "__main__":
    main()
