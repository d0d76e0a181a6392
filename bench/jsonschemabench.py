"""JSONSchemaBench on the embedded model: schemas nobody here wrote, three ways of asking, one run.

JSONSchemaBench (github.com/guidance-ai/jsonschemabench, `data/<set>/*.json`: 9,558 schemas from
GitHub, SchemaStore, Kubernetes, Snowplow, the Washington Post and Glaive, in 10 sets) is the
yardstick the constrained-decoding engines publish against. Part one needs no model: every schema
of the collection is given to `StructuredOutput(schema=...)` and counted as accepted or refused
(with the reason's first words); each refused schema is also given to llama-server alone, to
record whether the engine would have taken it. Part two takes a fixed, seeded sample (`--per-set` schemas from
each set, seed 7) through the Chat Completions route of the embedded llama-server
(SmolLM2-135M-Instruct), three ways, each task run by every configuration before the next:

- `engine alone`: the raw OpenAI SDK with `response_format` json_schema (llama.cpp's grammar);
- `so_middleware`: `with_structured_output` on the local Chat client, `StructuredOutput(schema=...)`
  with the automatic strategy and strictness, at most one re-ask;
- `prompting alone`: the raw SDK, the schema in the prompt, no constraint.

Every configuration gets the same user message (a request for one example document, with the
schema's JSON when it is under 3,000 characters). Per configuration: schemas accepted (no error
before a call), answers valid against the original schema (checked by one independent validator,
jsonschema-rs with its backtracking regex engine, for every configuration alike), typed errors
(ours) or HTTP errors (theirs), seconds (every call, ended by a value or an error) and tokens per
schema. temperature 0, seed 7, 256
output tokens.

    git clone --depth 1 https://github.com/guidance-ai/jsonschemabench /tmp/jsonschemabench
    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/jsonschemabench.py --data /tmp/jsonschemabench/data

writes `bench/results/jsonschemabench.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import time
from pathlib import Path
from typing import Any

from _common import MODEL_ALIAS, RESULTS, log

SEED = 7
MAX_TOKENS = 256
PROMPT_SCHEMA_LIMIT = 3000
CONFIGS = ("engine alone", "so_middleware", "prompting alone")


def load(data: Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Every readable schema of the collection, by set, sorted by file name."""
    sets: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for folder in sorted(path for path in data.iterdir() if path.is_dir()):
        found: list[tuple[str, dict[str, Any]]] = []
        for path in sorted(folder.glob("*.json")):
            try:
                schema = json.loads(path.read_text())
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue
            if isinstance(schema, dict):
                found.append((path.name, schema))
        sets[folder.name] = found
    return sets


def acceptance(sets: dict[str, list[tuple[str, dict[str, Any]]]]) -> dict[str, Any]:
    """Part one: which schemas `StructuredOutput` accepts, per set, and why the others are refused."""
    from so_middleware import StructuredOutput, UserError

    per_set: dict[str, dict[str, int]] = {}
    reasons: collections.Counter[str] = collections.Counter()
    refused: list[str] = []
    for name, schemas in sets.items():
        counts = {"schemas": len(schemas), "accepted": 0}
        for file, schema in schemas:
            try:
                StructuredOutput(schema=schema)
                counts["accepted"] += 1
            except UserError as error:
                reasons[_reason(str(error))] += 1
                refused.append(f"{name}/{file}")
        per_set[name] = counts
    total = sum(counts["schemas"] for counts in per_set.values())
    accepted = sum(counts["accepted"] for counts in per_set.values())
    return {"schemas": total, "accepted": accepted, "per_set": per_set, "refusals": dict(reasons), "refused": refused}


def _reason(message: str) -> str:
    for marker, reason in (
        ("lookaround", "pattern with lookaround"),
        ("backreference", "pattern with a backreference"),
        ("not a local reference", "remote $ref"),
        ("cycle", "$ref cycle that never reaches a property or item"),
        ("own $id", "sub-schema with its own base URI"),
        ("own id", "sub-schema with its own base URI"),
    ):
        if marker in message:
            return reason
    return message[:80]


def _message(schema: dict[str, Any]) -> str:
    text = json.dumps(schema)
    ask = "Write one example JSON document for an application that uses this schema."
    return f"{ask}\n\nThe schema:\n{text}" if len(text) <= PROMPT_SCHEMA_LIMIT else ask


def _judge(schema: dict[str, Any]) -> Any:
    """One validator for every configuration; None when the schema cannot be judged."""
    import jsonschema_rs

    try:
        return jsonschema_rs.validator_for(schema, pattern_options=jsonschema_rs.FancyRegexOptions(), offline=True)
    except Exception:  # a schema the judge itself cannot read
        return None


def _valid(judge: Any, text: str | None) -> bool:
    if judge is None or text is None:
        return False
    try:
        return bool(judge.is_valid(json.loads(text)))
    except (ValueError, RecursionError):
        return False


async def _raw(sdk: Any, model: str, schema: dict[str, Any], *, constrained: bool) -> dict[str, Any]:
    import openai

    extra: dict[str, Any] = {}
    if constrained:
        extra["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
    start = time.perf_counter()
    try:
        completion = await sdk.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": _message(schema)}],
            temperature=0,
            seed=SEED,
            max_tokens=MAX_TOKENS,
            **extra,
        )
    except openai.APIStatusError as error:
        return {"accepted": False, "text": None, "error": f"HTTP {error.status_code}", "tokens": 0}
    except openai.APIError as error:
        seconds = time.perf_counter() - start
        return {"accepted": True, "text": None, "error": type(error).__name__, "tokens": 0, "seconds": seconds}
    seconds = time.perf_counter() - start
    text = completion.choices[0].message.content if completion.choices else None
    tokens = completion.usage.total_tokens if completion.usage else 0
    return {"accepted": True, "text": text, "error": None, "tokens": tokens, "seconds": seconds}


async def _ours(layer: Any, schema: dict[str, Any]) -> dict[str, Any]:
    import openai

    from so_middleware import OutputError, SOMiddlewareError, StructuredOutput, UserError

    start = time.perf_counter()
    try:
        feature = StructuredOutput(schema=schema, max_retries=1)
    except UserError as error:
        return {"accepted": False, "text": None, "error": f"UserError: {_reason(str(error))}", "tokens": 0}
    options = {"temperature": 0, "seed": SEED, "max_tokens": MAX_TOKENS, "features": [feature]}
    try:
        response = await layer.get_response(_message(schema), options=options)
    except OutputError as error:
        tokens = error.usage.total_tokens if error.usage and error.usage.total_tokens else 0
        seconds = time.perf_counter() - start
        return {"accepted": True, "text": None, "error": type(error).__name__, "tokens": tokens, "seconds": seconds}
    except SOMiddlewareError as error:
        seconds = time.perf_counter() - start
        return {"accepted": True, "text": None, "error": type(error).__name__, "tokens": 0, "seconds": seconds}
    except openai.APIStatusError as error:  # the engine refused what we sent
        seconds = time.perf_counter() - start
        return {"accepted": True, "text": None, "error": f"HTTP {error.status_code}", "tokens": 0, "seconds": seconds}
    seconds = time.perf_counter() - start
    tokens = response.usage.total_tokens if response.usage and response.usage.total_tokens else 0
    return {"accepted": True, "text": json.dumps(response.value), "error": None, "tokens": tokens, "seconds": seconds}


def sample_refused(sets: dict[str, list[tuple[str, dict[str, Any]]]], names: list[str]) -> list[tuple[str, Any]]:
    """The schemas named `set/file` in `names`."""
    wanted = set(names)
    return [
        (f"{name}/{file}", schema)
        for name, schemas in sets.items()
        for file, schema in schemas
        if f"{name}/{file}" in wanted
    ]


def sample(sets: dict[str, list[tuple[str, dict[str, Any]]]], per_set: int) -> list[tuple[str, dict[str, Any]]]:
    """`per_set` schemas from each set, drawn with a fixed seed."""
    rng = random.Random(SEED)
    chosen: list[tuple[str, dict[str, Any]]] = []
    for name, schemas in sets.items():
        for file, schema in rng.sample(schemas, min(per_set, len(schemas))):
            chosen.append((f"{name}/{file}", schema))
    return chosen


async def _engine_on(server: Any, schemas: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """What llama-server answers (one output token) to each schema we refuse: does the engine take it?"""
    import openai

    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)
    answers: dict[str, str] = {}
    for name, schema in schemas:
        try:
            await sdk.chat.completions.create(
                model=server.model,
                messages=[{"role": "user", "content": "{}"}],
                max_tokens=1,
                response_format={"type": "json_schema", "json_schema": {"name": "output", "schema": schema}},
            )
            answers[name] = "accepted"
        except openai.APIStatusError as error:
            answers[name] = f"HTTP {error.status_code}: {str(error.message)[:120]}"
    return answers


async def _model_run(server: Any, chosen: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    import openai

    from so_middleware import with_structured_output
    from so_middleware.local._clients import chat_client

    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)
    layer = with_structured_output(chat_client(server, "chat", max_retries=0, timeout=300))
    rows: dict[str, list[dict[str, Any]]] = {config: [] for config in CONFIGS}
    for index, (name, schema) in enumerate(chosen, 1):
        judge = _judge(schema)
        for config in CONFIGS:
            if config == "so_middleware":
                outcome = await _ours(layer, schema)
            else:
                outcome = await _raw(sdk, server.model, schema, constrained=config == "engine alone")
            outcome["valid"] = _valid(judge, outcome.pop("text"))
            outcome["schema"] = name
            rows[config].append(outcome)
        log(
            f"jsonschemabench: {index}/{len(chosen)} {name}: "
            + ", ".join(
                f"{config}={'valid' if rows[config][-1]['valid'] else rows[config][-1]['error'] or 'invalid'}"
                for config in CONFIGS
            )
        )
    return {config: _summary(outcomes) for config, outcomes in rows.items()} | {"rows": rows}


def _summary(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    count = len(outcomes) or 1
    return {
        "schemas": len(outcomes),
        "accepted": sum(o["accepted"] for o in outcomes),
        "valid": sum(o["valid"] for o in outcomes),
        "errors": dict(collections.Counter(o["error"] for o in outcomes if o["error"])),
        "seconds_per_schema": round(sum(o.get("seconds", 0.0) for o in outcomes) / count, 2),
        "tokens_per_schema": round(sum(o["tokens"] for o in outcomes) / count, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the collection's data/ folder")
    parser.add_argument("--per-set", type=int, default=4, help="schemas drawn from each set for the model run")
    parser.add_argument("--no-model", action="store_true", help="part one only")
    args = parser.parse_args()
    sets = load(args.data)
    started = time.perf_counter()
    result: dict[str, Any] = {"acceptance": acceptance(sets)}
    log(f"jsonschemabench: accepted {result['acceptance']['accepted']}/{result['acceptance']['schemas']}")
    if not args.no_model:
        from so_middleware.local import LocalModelServer

        chosen = sample(sets, args.per_set)
        refused = dict(sample_refused(sets, result["acceptance"]["refused"]))
        with LocalModelServer(threads=1, parallel=1, extra_args=["--alias", MODEL_ALIAS]) as server:
            result["engine_on_our_refusals"] = asyncio.run(_engine_on(server, list(refused.items())))
            result["model_run"] = asyncio.run(_model_run(server, chosen))
        result["settings"] = {"seed": SEED, "per_set": args.per_set, "max_tokens": MAX_TOKENS, "temperature": 0}
    result["model"] = MODEL_ALIAS
    result["seconds"] = round(time.perf_counter() - started, 1)
    (RESULTS / "jsonschemabench.json").write_text(json.dumps(result, indent=1) + "\n")
    log(f"jsonschemabench: wrote {RESULTS / 'jsonschemabench.json'}")


if __name__ == "__main__":
    main()
