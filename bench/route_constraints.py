"""Which engine constraint each llama-server route honours: a fact measured, not assumed.

Every route (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`) is asked for a haiku with
one constraint in the body at a time: llama-server's own `json_schema` and `grammar` fields,
`response_format` (OpenAI's JSON-schema format), each route's own wire format where it has one
(`text.format` on Responses, `output_config.format` on Messages), and nothing (the control). The
constraint allows exactly one answer, `{"answer": "zebra-quartz"}`, which the model would
never write by itself: the constraint was honoured when that answer comes back, ignored when
prose does. Each cell is asked plain and streamed; temperature 0, 40 output tokens.

    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/route_constraints.py

writes `bench/results/route_constraints.json`.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from _common import MODEL_ALIAS, RESULTS, log

PROMPT = "Write a short haiku about the sea."
EXPECTED = {"answer": "zebra-quartz"}
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["zebra-quartz"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
GRAMMAR = 'root ::= "{\\"answer\\": \\"zebra-quartz\\"}"'
MAX_TOKENS = 40

# The body fields tried on every route; a route's own wire format is added per route below.
FIELDS: dict[str, dict[str, Any]] = {
    "none": {},
    "json_schema": {"json_schema": SCHEMA},
    "grammar": {"grammar": GRAMMAR},
    "response_format": {
        "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}
    },
}
WIRE_FORMAT: dict[str, tuple[str, dict[str, Any]]] = {
    "responses": ("text.format", {"text": {"format": {"type": "json_schema", "name": "answer", "schema": SCHEMA}}}),
    "messages": ("output_config.format", {"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}}),
}


def _body(route: str, extra: dict[str, Any], stream: bool) -> tuple[str, dict[str, Any]]:
    base: dict[str, Any] = {"model": MODEL_ALIAS, "temperature": 0, "stream": stream, **extra}
    if route == "chat":
        return "/v1/chat/completions", {
            **base,
            "messages": [{"role": "user", "content": PROMPT}],
            "max_tokens": MAX_TOKENS,
        }
    if route == "responses":
        return "/v1/responses", {**base, "input": PROMPT, "max_output_tokens": MAX_TOKENS}
    return "/v1/messages", {**base, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": MAX_TOKENS}


def _text_of(route: str, reply: dict[str, Any]) -> str:
    if route == "chat":
        return str(reply["choices"][0]["message"].get("content") or "")
    if route == "responses":
        return "".join(
            part.get("text", "") for item in reply.get("output", []) for part in item.get("content", []) or []
        )
    return "".join(block.get("text", "") for block in reply.get("content", []))


def _streamed_text(route: str, lines: list[str]) -> str:
    """The text of an SSE stream: each route's text deltas, joined."""
    text = []
    for line in lines:
        if not line.startswith("data:") or line.strip() == "data: [DONE]":
            continue
        event = json.loads(line[5:])
        if route == "chat":
            for choice in event.get("choices", []):
                text.append((choice.get("delta") or {}).get("content") or "")
        elif route == "responses" and event.get("type") == "response.output_text.delta":
            text.append(event.get("delta", ""))
        elif route == "messages" and event.get("type") == "content_block_delta":
            text.append((event.get("delta") or {}).get("text", ""))
    return "".join(text)


def ask(root: str, route: str, extra: dict[str, Any], stream: bool) -> dict[str, Any]:
    """One request: the answer's text, or the server's error status and message."""
    path, body = _body(route, extra, stream)
    request = urllib.request.Request(
        root + path, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            raw = reply.read().decode()
    except urllib.error.HTTPError as error:
        return {"status": error.code, "error": error.read().decode()[:300]}
    text = _streamed_text(route, raw.splitlines()) if stream else _text_of(route, json.loads(raw))
    try:
        honoured = json.loads(text) == EXPECTED
    except ValueError:
        honoured = False
    return {"status": 200, "honoured": honoured, "text": text[:200]}


def main() -> None:
    from so_middleware.local import LocalModelServer

    cells = []
    with LocalModelServer(threads=1, parallel=1, extra_args=["--alias", MODEL_ALIAS]) as server:
        for route in ("chat", "responses", "messages"):
            fields = dict(FIELDS)
            if route in WIRE_FORMAT:
                name, extra = WIRE_FORMAT[route]
                fields[name] = extra
            for name, extra in fields.items():
                for stream in (False, True):
                    result = ask(server.root_url, route, extra, stream)
                    log(f"route_constraints: {route:9} {name:20} stream={stream!s:5} {result}")
                    cells.append({"route": route, "field": name, "stream": stream, **result})
    table: dict[str, dict[str, str]] = {}
    for cell in cells:
        verdict = "error" if cell["status"] != 200 else "honoured" if cell["honoured"] else "ignored"
        row = table.setdefault(cell["route"], {})
        key = cell["field"]
        row[key] = verdict if row.get(key, verdict) == verdict else f"{row[key]} (plain) / {verdict} (streamed)"
    result = {
        "model": MODEL_ALIAS,
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "expected_answer": EXPECTED,
        "table": table,
        "cells": cells,
    }
    (RESULTS / "route_constraints.json").write_text(json.dumps(result, indent=2) + "\n")
    log("wrote bench/results/route_constraints.json")


if __name__ == "__main__":
    main()
