"""Quality on a real model: the task set against the local llama-server (SmolLM2-135M-Instruct).

For each route whose adapter exists (chat, responses, anthropic) every one of our strategies
(`StructuredOutput(T, mode=...)`: native, tool, json_object, prompted) runs every task; on the
chat route instructor runs them too in its comparable modes (JSON_SCHEMA, MD_JSON, TOOLS). All
calls use temperature 0, seed 7, max 160 output tokens and at most 2 re-asks (3 attempts).

Per configuration: share of tasks that returned a valid typed value, share exactly correct
(`Task.is_exact`), attempts per task, total tokens per task (all attempts) and wall seconds per
task. `IN_FLIGHT` tasks of one configuration run at once (the server has as many slots), so the
seconds are latency under that load, the same for every configuration. `--quick` runs five tasks
on the chat route with our `native` strategy and instructor's JSON_SCHEMA only.

Per route, two more rows ask with the default strategy (no `mode=`, what a user gets): on the
route's profiled adapter (`so_middleware.local.chat_client`), and on a generic adapter built
from an SDK client with only a `base_url`, no profile passed, so capability discovery has to
identify llama-server. Those rows alone, merged into `bench/results/quality.json` (the other
rows kept, the new ones marked with when they were measured):

    SO_MIDDLEWARE_THREADS=1 .venv-bench/bin/python bench/quality.py --defaults [--discovery-off] [--routes anthropic]

`--discovery-off` adds the generic adapter with `discover=False`, the generic protocol profile.

`--outline` runs each local route (chat and responses with `native`, Messages with the default,
`prompted`) with the schema's outline off, in the system message (the profile's
`schema_in_instructions`; on Messages the bench gives it as the caller's instructions, the same
place) and after the user's text, every task or the first `--tasks N`, each configuration
`--repeat N` times on the same server (how many tasks kept the same outcome in every repeat is
recorded: at temperature 0 with a fixed seed they all did), and writes
`bench/results/quality_outline.json` with the outline's mean length in the server's tokens:

    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/quality.py --outline --repeat 2 [--variants off,system,user] \
        [--tasks 16] [--routes chat,responses,anthropic] [--in-flight 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from _common import MODEL_ALIAS, RESULTS, log, python_for
from tasks import QUICK, TASKS, Task

STRATEGIES = ("native", "tool", "json_object", "prompted")
INSTRUCTOR_MODES = ("JSON_SCHEMA", "MD_JSON", "TOOLS")
SEED = 7
MAX_TOKENS = 160
IN_FLIGHT = 4
THREADS = 1  # one llama.cpp thread: two spin-waiting threads collapse when another process takes a core
MAX_RETRIES = 2
DEFAULT = "default (auto)"  # the strategy / mode cell of the rows that pass no `mode=`
GENERIC = "so_middleware, generic adapter, no profile"
GENERIC_OFF = "so_middleware, generic adapter, discover=False"


@dataclass
class Outcome:
    """One task's result under one configuration."""

    task: str
    valid: bool
    exact: bool
    attempts: int
    tokens: int
    seconds: float
    error: str | None = None
    value: Any = None


@dataclass
class Config:
    library: str
    route: str
    mode: str
    outcomes: list[Outcome] = field(default_factory=list)
    profile: str | None = None  # the adapter's capability profile after the run, when recorded

    def summary(self) -> dict[str, Any]:
        n = len(self.outcomes) or 1
        errors: dict[str, int] = {}
        for outcome in self.outcomes:
            if outcome.error:
                errors[outcome.error] = errors.get(outcome.error, 0) + 1
        return {
            "library": self.library,
            "route": self.route,
            "mode": self.mode,
            "tasks": len(self.outcomes),
            "valid_share": sum(o.valid for o in self.outcomes) / n,
            "exact_share": sum(o.exact for o in self.outcomes) / n,
            "attempts_per_task": sum(o.attempts for o in self.outcomes) / n,
            "tokens_per_task": sum(o.tokens for o in self.outcomes) / n,
            "seconds_per_task": sum(o.seconds for o in self.outcomes) / n,
            "errors": errors,
            **({"profile": self.profile} if self.profile else {}),
        }


def available_routes() -> tuple[list[str], dict[str, str]]:
    """The routes whose adapters can be built here, and why the others cannot."""
    routes, missing = [], {}
    for route, module, name in (
        ("chat", "so_middleware.openai", "OpenAIChatClient"),
        ("responses", "so_middleware.openai", "OpenAIResponsesClient"),
        ("anthropic", "so_middleware.anthropic", "AnthropicChatClient"),
    ):
        try:
            getattr(__import__(module, fromlist=[name]), name)
        except (ImportError, AttributeError) as error:
            missing[route] = f"{module}.{name} not available ({type(error).__name__})"
            continue
        routes.append(route)
    return routes, missing


def _route_client(server: Any, route: str) -> Any:
    """The route's adapter on `server`: the `chat_client` helper when present, else built here."""
    try:
        from so_middleware.local._clients import chat_client
    except ImportError:
        chat_client = None
    if chat_client is not None:
        return chat_client(server, route, max_retries=0, timeout=300)
    import openai

    from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient

    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)
    if route == "chat":
        return OpenAIChatClient(sdk, server.model, capabilities=LLAMA_SERVER)
    if route == "responses":
        from so_middleware.openai import OpenAIResponsesClient

        return OpenAIResponsesClient(sdk, server.model, capabilities=LLAMA_SERVER)
    import anthropic

    from so_middleware.anthropic import AnthropicChatClient

    return AnthropicChatClient(
        anthropic.AsyncAnthropic(base_url=server.root_url, api_key="local", max_retries=0), server.model
    )


def _generic_client(server: Any, route: str, *, discover: bool = True) -> Any:
    """The route's adapter built from an SDK client with only a `base_url`: no profile passed."""
    if route == "anthropic":
        import anthropic

        from so_middleware.anthropic import AnthropicChatClient

        sdk: Any = anthropic.AsyncAnthropic(base_url=server.root_url, api_key="local", max_retries=0, timeout=300)
        return AnthropicChatClient(sdk, server.model, discover=discover)
    import openai

    from so_middleware.openai import OpenAIChatClient, OpenAIResponsesClient

    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)
    adapter = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    return adapter(sdk, server.model, discover=discover)


def _default_configs(server: Any, route: str, *, discovery_off: bool) -> list[tuple[Config, Any, Any]]:
    """The default-strategy rows of a route: (config, a fresh layer with nothing learned, its adapter)."""
    from so_middleware import with_structured_output

    rows = [
        (Config("so_middleware", route, DEFAULT), _route_client(server, route)),
        (Config(GENERIC, route, DEFAULT), _generic_client(server, route)),
    ]
    if discovery_off:
        rows.append((Config(GENERIC_OFF, route, DEFAULT), _generic_client(server, route, discover=False)))
    return [(config, with_structured_output(adapter), adapter) for config, adapter in rows]


async def _run_default(config: Config, layer: Any, adapter: Any, tasks: list[Task]) -> None:
    """Every task with the default strategy; the config records the profile the adapter ended with."""
    await _all_tasks(config, lambda task: _ours(layer, task, DEFAULT), tasks)
    found = getattr(adapter, "server_info", None)
    config.profile = adapter.capabilities.name + (f" (discovered: {found.kind})" if found else "")


async def _ours(client: Any, task: Task, mode: str, *, instructions: str | None = None, suffix: str = "") -> Outcome:
    """One task through our layer; `instructions` go to the system message, `suffix` after the prompt."""
    from so_middleware import OutputError, StructuredOutput

    chosen = {} if mode == DEFAULT else {"mode": mode}
    feature = StructuredOutput(task.output_type, max_retries=MAX_RETRIES, **chosen)
    options = {"temperature": 0, "seed": SEED, "max_tokens": MAX_TOKENS, "features": [feature]}
    if instructions:
        options["instructions"] = instructions
    start = time.perf_counter()
    try:
        response = await client.get_response(task.prompt() + suffix, options=options)
    except OutputError as error:
        usage = error.usage.total_tokens if error.usage and error.usage.total_tokens else 0
        return Outcome(
            task.name, False, False, len(error.attempts) or 1, usage, time.perf_counter() - start, type(error).__name__
        )
    except Exception as error:  # an API error from the server: reported, not hidden
        return Outcome(task.name, False, False, 1, 0, time.perf_counter() - start, type(error).__name__)
    seconds = time.perf_counter() - start
    value = response.value
    tokens = response.usage.total_tokens if response.usage and response.usage.total_tokens else 0
    valid = isinstance(value, task.output_type)
    return Outcome(
        task.name,
        valid,
        task.is_exact(value),
        len(response.attempts) or 1,
        tokens,
        seconds,
        None if valid else "wrong type",
        value.model_dump(mode="json") if valid else None,
    )


async def _instructor(patched: Any, task: Task, route: str = "chat") -> Outcome:
    from instructor.v2.core.hooks import Hooks

    counted = {"attempts": 0, "tokens": 0}
    hooks = Hooks()

    def on_kwargs(*args: Any, **kwargs: Any) -> None:
        counted["attempts"] += 1

    def on_response(response: Any) -> None:
        usage = getattr(response, "usage", None)
        total = getattr(usage, "total_tokens", None)
        if total is None:  # Messages: input and output counted apart
            total = (getattr(usage, "input_tokens", 0) or 0) + (getattr(usage, "output_tokens", 0) or 0)
        counted["tokens"] += total or 0

    hooks.on("completion:kwargs", on_kwargs)
    hooks.on("completion:response", on_response)
    sampling: dict[str, Any] = {  # only chat has `seed`; Responses names the bound `max_output_tokens`
        "chat": {"temperature": 0, "seed": SEED, "max_tokens": MAX_TOKENS},
        "responses": {"temperature": 0, "max_output_tokens": MAX_TOKENS},
        "anthropic": {"temperature": 0, "max_tokens": MAX_TOKENS},
    }[route]
    start = time.perf_counter()
    try:
        value = await patched.create(
            model=MODEL_ALIAS,
            messages=[{"role": "user", "content": task.prompt()}],
            response_model=task.output_type,
            max_retries=MAX_RETRIES,
            hooks=hooks,
            **sampling,
        )
    except Exception as error:
        return Outcome(
            task.name,
            False,
            False,
            max(counted["attempts"], 1),
            counted["tokens"],
            time.perf_counter() - start,
            type(error).__name__,
        )
    seconds = time.perf_counter() - start
    valid = isinstance(value, task.output_type)
    return Outcome(
        task.name,
        valid,
        task.is_exact(value),
        max(counted["attempts"], 1),
        counted["tokens"],
        seconds,
        None if valid else "wrong type",
        value.model_dump(mode="json") if valid else None,
    )


async def _all_tasks(config: Config, one: Any, tasks: list[Task], in_flight: int = IN_FLIGHT) -> None:
    """Every task under one configuration, `in_flight` at once; outcomes in task order."""
    slots = asyncio.Semaphore(in_flight)

    async def guarded(task: Task) -> Outcome:
        async with slots:
            outcome: Outcome = await one(task)
            return outcome

    config.outcomes.extend(await asyncio.gather(*(guarded(task) for task in tasks)))


# instructor's modes per route, the ones it offers for an OpenAI or Anthropic client
INSTRUCTOR_ROUTE_MODES = {
    "chat": INSTRUCTOR_MODES,
    "responses": ("RESPONSES_TOOLS",),
    "anthropic": ("ANTHROPIC_TOOLS", "ANTHROPIC_JSON"),
}


def _instructor_configs(server: Any, modes: tuple[str, ...], quick: bool, route: str = "chat") -> list[Config]:
    """instructor's rows, run by BENCH_PYTHON (instructor's environment) against the same server."""
    base_url = server.root_url if route == "anthropic" else server.base_url
    command = [python_for("instructor"), __file__, "--instructor", base_url, ",".join(modes), "--route", route]
    done = subprocess.run(command + (["--quick"] if quick else []), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        log(f"quality: instructor's environment failed: {done.stderr.strip()[-500:]}")
        return []
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    return [Config("instructor", route, row["mode"], [Outcome(**o) for o in row["outcomes"]]) for row in rows]


def _run_instructor(base_url: str, modes: list[str], quick: bool, route: str = "chat") -> None:
    """In instructor's environment: every task under each mode; prints the outcomes as JSON."""
    import instructor

    tasks = [t for t in TASKS if t.name in QUICK] if quick else TASKS
    rows = []

    def patched_client(mode: Any) -> Any:
        if route == "anthropic":
            import anthropic

            sdk: Any = anthropic.AsyncAnthropic(base_url=base_url, api_key="local", max_retries=0, timeout=300)
            return instructor.from_anthropic(sdk, mode=mode)
        import openai

        sdk = openai.AsyncOpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=300)
        return instructor.from_openai(sdk, mode=mode)

    async def go() -> None:
        for mode_name in modes:
            mode = getattr(instructor.Mode, mode_name, None)
            if mode is None:
                log(f"quality: instructor has no mode {mode_name}")
                continue
            patched = patched_client(mode)
            config = Config("instructor", route, mode_name)
            log(f"quality: instructor {route} {mode_name}, {len(tasks)} tasks")
            await _all_tasks(config, lambda task, patched=patched: _instructor(patched, task, route), tasks)
            rows.append({"mode": mode_name, "outcomes": [o.__dict__ for o in config.outcomes]})

    asyncio.run(go())
    print(json.dumps(rows, default=str))


def run(*, quick: bool) -> dict[str, Any]:
    """Start the local server and run every configuration; returns the JSON-ready result."""
    from so_middleware import with_structured_output
    from so_middleware.local import LocalModelServer

    tasks = [t for t in TASKS if t.name in QUICK] if quick else TASKS
    routes, missing = available_routes()
    if quick:
        routes = routes[:1]
    configs: list[Config] = []

    strategies = ("native",) if quick else STRATEGIES
    instructor_modes = ("JSON_SCHEMA",) if quick else INSTRUCTOR_MODES

    async def all_tasks(config: Config, one: Any) -> None:
        await _all_tasks(config, one, tasks)

    async def go(server: Any) -> None:
        warm = with_structured_output(_route_client(server, "chat"))
        for task in tasks[:IN_FLIGHT]:  # untimed: the server's first requests are slower
            await _ours(warm, task, "native")
        for route in routes:
            client = with_structured_output(_route_client(server, route))
            for mode in strategies:
                config = Config("so_middleware", route, mode)
                log(f"quality: so_middleware {route} {mode}, {len(tasks)} tasks")
                await all_tasks(config, lambda task, mode=mode, client=client: _ours(client, task, mode))
                configs.append(config)
            for config, layer, adapter in [] if quick else _default_configs(server, route, discovery_off=False):
                log(f"quality: {config.library} {route} {DEFAULT}, {len(tasks)} tasks")
                await _run_default(config, layer, adapter, tasks)
                configs.append(config)
            if route == "chat":  # instructor pins an older openai: its rows run in its own environment
                configs.extend(await asyncio.to_thread(_instructor_configs, server, instructor_modes, quick))

    started = time.perf_counter()
    with LocalModelServer(threads=THREADS, parallel=IN_FLIGHT, extra_args=["--alias", MODEL_ALIAS]) as server:
        asyncio.run(go(server))
    return {
        "model": MODEL_ALIAS,
        "tasks": len(tasks),
        "task_categories": sorted({t.category for t in tasks}),
        "routes": routes,
        "routes_missing": missing,
        "settings": {
            "temperature": 0,
            "seed": SEED,
            "max_tokens": MAX_TOKENS,
            "max_retries": MAX_RETRIES,
            "in_flight": IN_FLIGHT,
            "server_threads": THREADS,
        },
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds_total": time.perf_counter() - started,
        "summary": [c.summary() for c in configs],
        "outcomes": {f"{c.library}/{c.route}/{c.mode}": [o.__dict__ for o in c.outcomes] for c in configs},
    }


def run_defaults(*, discovery_off: bool, only: list[str] | None = None, peers: bool = False) -> None:
    """Only the default-strategy rows of every route (or of the `only` ones), merged into
    `bench/results/quality.json`; with `peers`, every peer's rows of those routes too, in the same
    run on the same server (`bench/quality_peers.py`, and instructor's in its environment)."""
    from so_middleware.local import LocalModelServer

    routes, _ = available_routes()
    routes = [route for route in routes if not only or route in only]
    configs: list[Config] = []
    measured = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = [round(value, 2) for value in os.getloadavg()]

    async def go(server: Any) -> None:
        warm = _default_configs(server, "chat", discovery_off=False)[0][1]
        for task in TASKS[:IN_FLIGHT]:  # untimed: the server's first requests are slower
            await _ours(warm, task, "native")
        for route in routes:
            for config, layer, adapter in _default_configs(server, route, discovery_off=discovery_off):
                log(f"quality: {config.library} {route} {DEFAULT}, {len(TASKS)} tasks")
                await _run_default(config, layer, adapter, TASKS)
                log(f"    valid {sum(o.valid for o in config.outcomes)}/{len(TASKS)}, profile {config.profile}")
                configs.append(config)
                save(configs)  # row by row: a run cut short keeps the rows it finished
            if peers:
                await _run_peers(server, route, configs, save)

    def save(configs: list[Config]) -> None:
        run_info = {
            "measured": measured,
            "command": "SO_MIDDLEWARE_THREADS=1 "
            + (f"BENCH_PYTHON={os.path.relpath(python_for('instructor'), RESULTS.parent.parent)} " if peers else "")
            + f"{python} bench/quality.py --defaults"
            + (" --discovery-off" if discovery_off else "")
            + (" --peers" if peers else "")
            + (f" --routes {','.join(only)}" if only else ""),
            "load_average_before": load_before,
            "load_average_after": [round(value, 2) for value in os.getloadavg()],
        }
        merged = merge(saved, configs, run_info)
        (RESULTS / "quality.json").write_text(json.dumps(merged, indent=2, default=str) + "\n")

    saved = json.loads((RESULTS / "quality.json").read_text())
    python = os.path.relpath(sys.executable, RESULTS.parent.parent)
    with LocalModelServer(threads=THREADS, parallel=IN_FLIGHT, extra_args=["--alias", MODEL_ALIAS]) as server:
        asyncio.run(go(server))


async def _run_peers(server: Any, route: str, configs: list[Config], save: Any) -> None:
    """The peers' rows of `route`, appended to `configs` and saved one by one."""
    from quality_peers import _timed, peer_rows

    for config, run in peer_rows(server, [route]):
        log(f"quality: {config.library} {route} {config.mode}, {len(TASKS)} tasks")
        await _all_tasks(config, lambda task, run=run: _timed(task, run), TASKS)
        log(f"    valid {sum(o.valid for o in config.outcomes)}/{len(TASKS)}")
        configs.append(config)
        save(configs)
    modes = INSTRUCTOR_ROUTE_MODES[route]
    for config in await asyncio.to_thread(_instructor_configs, server, modes, False, route):
        log(f"    instructor {route} {config.mode}: valid {sum(o.valid for o in config.outcomes)}/{len(TASKS)}")
        configs.append(config)
        save(configs)


def merge(saved: dict[str, Any], configs: list[Config], run_info: dict[str, Any]) -> dict[str, Any]:
    """`saved` with the rows of `configs` put in (replacing rows of the same key), each row of a
    route after that route's other rows, and marked with `run_info`."""
    fresh = {(c.library, c.route, c.mode): c for c in configs}
    kept = [row for row in saved["summary"] if (row["library"], row["route"], row["mode"]) not in fresh]
    summary = []
    for route in saved["routes"]:
        summary += [row for row in kept if row["route"] == route]
        summary += [dict(c.summary(), run=run_info) for c in configs if c.route == route]
    outcomes = {k: v for k, v in saved["outcomes"].items() if tuple(k.split("/")) not in fresh}
    outcomes.update({f"{c.library}/{c.route}/{c.mode}": [o.__dict__ for o in c.outcomes] for c in configs})
    order = [f"{row['library']}/{row['route']}/{row['mode']}" for row in summary]
    return dict(saved, summary=summary, outcomes={key: outcomes[key] for key in order})


def _outline_client(server: Any, route: str, outline: bool) -> Any:
    """The route's llama-server adapter with the outline on or off; the rest of its profile kept."""
    if route == "anthropic":  # `prompted` there: the outline, when on, is given by the bench itself
        return _route_client(server, route)
    import openai

    from so_middleware.openai import LLAMA_SERVER_CHAT, LLAMA_SERVER_RESPONSES, OpenAIChatClient, OpenAIResponsesClient

    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)
    profile = (LLAMA_SERVER_CHAT if route == "chat" else LLAMA_SERVER_RESPONSES).replace(
        schema_in_instructions=outline, default_max_tokens=server.max_tokens
    )
    adapter = OpenAIChatClient if route == "chat" else OpenAIResponsesClient
    return adapter(sdk, server.model, capabilities=profile)


# Where the outline goes: nowhere, in the system message (what `schema_in_instructions` does), or
# after the user's text; `fields`: its field lines only, without the first line ("The answer is
# JSON: object", whose word SmolLM2 copied into string fields), in the system message.
OUTLINE_VARIANTS = ("off", "system", "user", "fields")
OUTLINE_MODES = {"chat": "native", "responses": "native", "anthropic": DEFAULT}


def _outline_of(task: Task) -> str:
    from so_middleware.schema import OutputSchema

    return OutputSchema(task.output_type).outline() or ""


def _outline_tokens(server: Any, tasks: list[Task]) -> float:
    """The mean number of prompt tokens the outline adds per task, by the server's own tokenizer."""
    import httpx

    counts = []
    for task in tasks:
        outline = _outline_of(task)
        reply = httpx.post(f"{server.root_url}/tokenize", json={"content": outline}, timeout=30)
        counts.append(len(reply.json()["tokens"]) if outline else 0)
    return sum(counts) / len(counts)


def _outline_run(client: Any, route: str, variant: str) -> Any:
    """One task under a variant: the library's own switch for `system` on the native routes; on
    Messages (`prompted`) the outline is given as the caller's instructions, the same place."""
    mode = OUTLINE_MODES[route]

    async def one(task: Task) -> Outcome:
        if variant == "user":
            return await _ours(client, task, mode, suffix="\n\n" + _outline_of(task) if _outline_of(task) else "")
        if variant == "system" and route == "anthropic":
            return await _ours(client, task, mode, instructions=_outline_of(task) or None)
        if variant == "fields":
            fields = "\n".join(_outline_of(task).splitlines()[1:])
            return await _ours(client, task, mode, instructions=fields or None)
        return await _ours(client, task, mode)

    return one


def _same_in_every_run(runs: list[Config]) -> int:
    """How many tasks had the same outcome (valid, exact, value, error) in every repeat."""
    keys = [[(o.valid, o.exact, json.dumps(o.value, sort_keys=True), o.error) for o in run.outcomes] for run in runs]
    return sum(len(set(column)) == 1 for column in zip(*keys, strict=True))


def run_outline(
    *,
    only: list[str] | None,
    limit: int | None,
    peers: bool = False,
    repeat: int = 1,
    in_flight: int = IN_FLIGHT,
    variants: tuple[str, ...] = OUTLINE_VARIANTS,
) -> None:
    """Each local route with the schema outline off and in each place of `variants`, `repeat`
    times over, in one run on one server; with `peers`, every peer that runs in this environment
    (`bench/quality_peers.py`) beside them. The native routes run `native`; Messages runs what
    the default picks there (`prompted`: llama-server ignores every format on that route).
    """
    from so_middleware import with_structured_output
    from so_middleware.local import LocalModelServer

    routes = [route for route in ("chat", "responses", "anthropic") if not only or route in only]
    tasks = TASKS[:limit] if limit else TASKS
    configs: list[Config] = []
    agreement: dict[str, int] = {}
    outline_tokens: list[float] = []

    async def go(server: Any) -> None:
        outline_tokens.append(_outline_tokens(server, tasks))
        warm = with_structured_output(_outline_client(server, "chat", False))
        for task in tasks[:IN_FLIGHT]:  # untimed: the server's first requests are slower
            await _ours(warm, task, "native")
        for route in routes:
            for variant in variants:
                runs = []
                for index in range(repeat):
                    mode = f"{OUTLINE_MODES[route]}, outline {variant}" + (f", run {index + 1}" if repeat > 1 else "")
                    config = Config("so_middleware", route, mode)
                    layer = with_structured_output(_outline_client(server, route, variant == "system"))
                    log(f"quality: {route} {config.mode}, {len(tasks)} tasks")
                    await _all_tasks(config, _outline_run(layer, route, variant), tasks, in_flight)
                    valid, exact = sum(o.valid for o in config.outcomes), sum(o.exact for o in config.outcomes)
                    log(f"    valid {valid}, exact {exact}")
                    configs.append(config)
                    runs.append(config)
                if repeat > 1:
                    agreement[f"{route}/{variant}"] = _same_in_every_run(runs)
            if peers and route != "anthropic":
                from quality_peers import _timed, peer_rows

                for config, run in peer_rows(server, [route]):
                    log(f"quality: {config.library} {route} {config.mode}, {len(tasks)} tasks")
                    await _all_tasks(config, lambda task, run=run: _timed(task, run), tasks, in_flight)
                    log(
                        f"    valid {sum(o.valid for o in config.outcomes)}, exact {sum(o.exact for o in config.outcomes)}"
                    )
                    configs.append(config)

    started = time.perf_counter()
    load_before = [round(value, 2) for value in os.getloadavg()]
    with LocalModelServer(threads=THREADS, parallel=in_flight, extra_args=["--alias", MODEL_ALIAS]) as server:
        asyncio.run(go(server))
    command = (
        "SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/quality.py --outline"
        + (f" --repeat {repeat}" if repeat > 1 else "")
        + (f" --in-flight {in_flight}" if in_flight != IN_FLIGHT else "")
        + (" --peers" if peers else "")
        + (f" --tasks {limit}" if limit else "")
        + (f" --routes {','.join(only)}" if only else "")
    )
    result = {
        "model": MODEL_ALIAS,
        "tasks": [task.name for task in tasks],
        "command": command,
        "in_flight": in_flight,
        "repeat": repeat,
        "outline_tokens_per_task": outline_tokens[0],
        "same_outcome_in_every_run": agreement,
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds_total": time.perf_counter() - started,
        "load_average_before": load_before,
        "load_average_after": [round(value, 2) for value in os.getloadavg()],
        "summary": [c.summary() for c in configs],
        "outcomes": {f"{c.library}/{c.route}/{c.mode}": [o.__dict__ for o in c.outcomes] for c in configs},
    }
    (RESULTS / "quality_outline.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    for row in result["summary"]:
        print(f"{row['route']:10} {row['mode']:34} valid {row['valid_share']:.0%}  exact {row['exact_share']:.0%}")
    print(f"outline tokens per task {outline_tokens[0]:.1f}; same outcome in every run: {agreement}")


def outline_section() -> list[str]:
    """BENCHMARKS.md's lines for `--outline`'s result (none when it was not run)."""
    path = RESULTS / "quality_outline.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    lines = [
        "",
        "The schema outline (`Capabilities.schema_in_instructions`) on the local routes: off, in the system message "
        "(what the switch does), or after the user's text, "
        f"{len(data['tasks'])} tasks, each configuration {data.get('repeat', 1)} time(s), "
        f"{data.get('in_flight', IN_FLIGHT)} request(s) in flight, in one run of their own, measured "
        f"{data['measured']} with `{data.get('command', 'bench/quality.py --outline')}` "
        f"(load average {data['load_average_before']} before, {data['load_average_after']} after). "
        "The native routes run `native`; Messages runs `prompted` (llama-server ignores every format there). "
        f"The outline adds {data.get('outline_tokens_per_task', 0):.0f} prompt tokens per task on average "
        "(the server's tokenizer).",
        "",
        "| library | route | mode | valid typed value | exactly correct | attempts per task | tokens per task |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for row in data["summary"]:
        lines.append(
            f"| {row['library']} | {row['route']} | {row['mode']} | {row['valid_share']:.0%} | "
            f"{row['exact_share']:.0%} | {row['attempts_per_task']:.2f} | {row['tokens_per_task']:.0f} |"
        )
    if data.get("same_outcome_in_every_run"):
        same = ", ".join(f"{key} {count}" for key, count in data["same_outcome_in_every_run"].items())
        lines += ["", f"Tasks with the same outcome (value or error) in every repeat, of {len(data['tasks'])}: {same}."]
    if data.get("notes"):  # what other runs of the same command showed, written down with the result
        lines += ["", *data["notes"]]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--defaults", action="store_true", help="only the default-strategy rows, merged in")
    parser.add_argument("--discovery-off", action="store_true", help="with --defaults: add discover=False rows")
    parser.add_argument(
        "--routes", help="with --defaults or --outline: only these routes, comma-separated (chat,responses,anthropic)"
    )
    parser.add_argument(
        "--peers", action="store_true", help="with --defaults or --outline: every peer's rows too, in the same run"
    )
    parser.add_argument("--outline", action="store_true", help="native with the schema outline on and off")
    parser.add_argument("--tasks", type=int, help="with --outline: only the first N tasks")
    parser.add_argument("--repeat", type=int, default=1, help="with --outline: run each configuration N times")
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT, help="with --outline: requests at once (and slots)")
    parser.add_argument("--variants", help="with --outline: comma-separated, of off,system,user")
    parser.add_argument("--instructor", nargs=2, metavar=("BASE_URL", "MODES"), help=argparse.SUPPRESS)
    parser.add_argument("--route", default="chat", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.instructor:  # run by `run()` in instructor's environment
        _run_instructor(args.instructor[0], args.instructor[1].split(","), args.quick, args.route)
        return
    if args.outline:
        run_outline(
            only=args.routes.split(",") if args.routes else None,
            limit=args.tasks,
            peers=args.peers,
            repeat=args.repeat,
            in_flight=args.in_flight,
            variants=tuple(args.variants.split(",")) if args.variants else OUTLINE_VARIANTS,
        )
        return
    if not args.defaults:
        parser.error("run the whole section with `python bench/run.py --only quality`; here only --defaults")
    only = args.routes.split(",") if args.routes else None
    run_defaults(discovery_off=args.discovery_off, only=only, peers=args.peers)
    log("wrote bench/results/quality.json; `python bench/run.py --report` writes BENCHMARKS.md")


if __name__ == "__main__":
    main()
