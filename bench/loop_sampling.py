"""Which loop-breaking sampling field each llama-server route honours: a fact measured, not assumed.

Every route (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`) is asked prompts that make
SmolLM2-135M repeat itself at temperature 0 (a fixed seed, 200 output tokens), once with no
sampling field and once with each of: OpenAI's `frequency_penalty` and `presence_penalty`, and
llama.cpp's own `repeat_penalty` and DRY sampler (`dry_multiplier`), and `temperature` 0.8, each
in the request body as the adapters send `extra_body`. At temperature 0 the answer is the same on every run (the
control is asked twice to show it), so a field the route honours changes the answer and a field
it drops leaves it byte for byte the same. Each answer is also checked for a loop the way the
structured-output layer checks one (`_loops.loop_in`). A field is *honoured* on a route when it
changed the answer of every prompt, *ignored* when it changed none.

The prompts are the shape a structured run sends: the prompted strategy's instructions as the
system message, a repeat-prone user message, and (second pair) the JSON prefill it continues.

    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/loop_sampling.py

writes `bench/results/loop_sampling_<date>.json`.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from _common import MODEL_ALIAS, RESULTS, log
from route_constraints import _text_of

MAX_TOKENS = 200
SEED = 7
INSTRUCTIONS = (
    "Respond with only a JSON object shaped like this, filled in with values taken from the "
    'conversation (no prose, no code fences):\n{"tags": ["<string>", ...]}'
)
PROMPTS: dict[str, tuple[str, str]] = {  # name -> (user message, assistant prefill)
    "tags": ("List every tag: " + ", ".join(["a"] * 23), ""),
    "tags_prefilled": ("List every tag: " + ", ".join(["a"] * 23), '{"tags": ["'),
    "numbers": ("Count: " + ", ".join(["1"] * 30), ""),
    "numbers_prefilled": ("Count: " + ", ".join(["1"] * 30), '{"tags": ["'),
}
FIELDS: dict[str, dict[str, Any]] = {
    "none": {},
    "none_again": {},
    "frequency_penalty": {"frequency_penalty": 0.5},
    "presence_penalty": {"presence_penalty": 0.5},
    "repeat_penalty": {"repeat_penalty": 1.3},
    "dry_multiplier": {"dry_multiplier": 0.8},
    "temperature": {"temperature": 0.8},  # the one sampling field every route passes on
}


def _body(route: str, user: str, prefill: str, extra: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    base: dict[str, Any] = {"model": MODEL_ALIAS, "temperature": 0, "seed": SEED, **extra}
    if route == "chat":
        messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": user}]
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
        return "/v1/chat/completions", {**base, "messages": messages, "max_tokens": MAX_TOKENS}
    if route == "responses":
        items: list[dict[str, Any]] = [{"role": "user", "content": user}]
        if prefill:
            items.append({"type": "message", "role": "assistant", "content": prefill})
        return "/v1/responses", {**base, "instructions": INSTRUCTIONS, "input": items, "max_output_tokens": MAX_TOKENS}
    turns: list[dict[str, Any]] = [{"role": "user", "content": user}]
    if prefill:
        turns.append({"role": "assistant", "content": prefill})
    return "/v1/messages", {**base, "system": INSTRUCTIONS, "messages": turns, "max_tokens": MAX_TOKENS}


def ask(root: str, route: str, user: str, prefill: str, extra: dict[str, Any]) -> dict[str, Any]:
    """One plain request: the answer's text and whether it ends in a loop, or the server's error."""
    from so_middleware.middleware.structured_output._loops import MIN_CUT_SPAN, loop_in

    path, body = _body(route, user, prefill, extra)
    request = urllib.request.Request(
        root + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as reply:
            raw = json.loads(reply.read().decode())
    except urllib.error.HTTPError as error:
        return {"status": error.code, "error": error.read().decode()[:300]}
    text = _text_of(route, raw)
    loop = loop_in(text, min_span=MIN_CUT_SPAN)
    return {"status": 200, "looped": loop is not None, "text": text}


def _verdict(changed: list[bool]) -> str:
    if all(changed):
        return "honoured"
    return "ignored" if not any(changed) else f"changed {sum(changed)} of {len(changed)} answers"


def main() -> None:
    from so_middleware.local import LocalModelServer

    cells: list[dict[str, Any]] = []
    with LocalModelServer(threads=1, parallel=1, extra_args=["--alias", MODEL_ALIAS]) as server:
        for route in ("chat", "responses", "messages"):
            for prompt, (user, prefill) in PROMPTS.items():
                for field, extra in FIELDS.items():
                    result = ask(server.root_url, route, user, prefill, extra)
                    shown = {k: v if k != "text" else v[:60] for k, v in result.items()}
                    log(f"loop_sampling: {route:9} {prompt:18} {field:18} {shown}")
                    cells.append({"route": route, "prompt": prompt, "field": field, **result})
    table: dict[str, dict[str, Any]] = {}
    for route in ("chat", "responses", "messages"):
        row: dict[str, Any] = {}
        control = {c["prompt"]: c for c in cells if c["route"] == route and c["field"] == "none"}
        again = [c for c in cells if c["route"] == route and c["field"] == "none_again"]
        row["deterministic"] = all(c.get("text") == control[c["prompt"]].get("text") for c in again)
        row["control_loops"] = sum(bool(c.get("looped")) for c in control.values())
        for field in FIELDS:
            if field.startswith("none"):
                continue
            mine = [c for c in cells if c["route"] == route and c["field"] == field]
            if any(c["status"] != 200 for c in mine):
                row[field] = "error"
                continue
            changed = [c["text"] != control[c["prompt"]]["text"] for c in mine]
            row[field] = {
                "verdict": _verdict(changed),
                "loops_left": sum(bool(c["looped"]) for c in mine),
                "loops_broken": sum(bool(control[c["prompt"]]["looped"]) and not c["looped"] for c in mine),
            }
        table[route] = row
    result = {
        "model": MODEL_ALIAS,
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "max_tokens": MAX_TOKENS,
        "seed": SEED,
        "fields": FIELDS,
        "table": table,
        "cells": cells,
    }
    path = RESULTS / f"loop_sampling_{time.strftime('%Y-%m-%d', time.gmtime())}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {path.relative_to(RESULTS.parent.parent)}")


if __name__ == "__main__":
    main()
