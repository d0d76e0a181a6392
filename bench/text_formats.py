"""Regex and grammar outputs on the embedded model: enforced by llama.cpp, or checked and re-asked.

    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/text_formats.py            # 12 prompts per kind
    SO_MIDDLEWARE_THREADS=1 .venv/bin/python bench/text_formats.py --n 4      # a quick look

N prompts per kind, drawn with a fixed seed from the families below, on the Chat route of the
embedded llama-server (SmolLM2-135M-Instruct, one slot), temperature 0, at most 48 output tokens,
`max_retries=2`, plain calls. Two kinds: `Regex(...)` (a code, a date, a colour, a time, a phone
number) and `Grammar(...)` (a yes/no with a reason, a sum, a small SELECT). Two contenders:

- native: the shipped profile (`text_constraint="llama.cpp"`): the regex as a GBNF grammar, the
  grammar as GBNF, in the request's `grammar` field;
- validation only: the same profile with `text_constraint=None`: the pattern or grammar in the
  instructions, the answer checked (`re.fullmatch`; lark for the grammar, given in its Lark
  spelling, which says the same as the GBNF one) and re-asked.

Valid: the run ended in a value (every value is checked, on both rows). Requests: model calls,
re-asks included. Writes `bench/results/text_formats.json` and prints the Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from collections import Counter
from typing import Any

import openai
from _common import log, machine, write_json

from so_middleware import Grammar, OutputError, Regex, with_structured_output
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER_CHAT, OpenAIChatClient

SEED = 7
MAX_TOKENS = 48

PLACES = ["Paris", "Lima", "Oslo", "Cairo", "Tokyo", "Quito", "Perth", "Dakar", "Hanoi", "Bergen"]

# (prompt template, pattern)
REGEXES = [
    ("Make up a flight code for a flight to {place}.", r"[A-Z]{3}-[0-9]{4}"),
    ("On what date (YYYY-MM-DD) could someone visit {place}?", r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
    ("Give a hex colour (like #a1b2c3) for the flag of {place}.", r"#[0-9a-f]{6}"),
    ("At what time (HH:MM) does the first train leave {place}?", r"[0-2][0-9]:[0-5][0-9]"),
    ("Make up a phone number, (555) 123-4567 style, for a hotel in {place}.", r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}"),
]

# (prompt template, GBNF, the same grammar in Lark)
GRAMMARS = [
    (
        "Is {place} a capital city? Answer yes or no, and say why.",
        'root ::= ("yes" | "no") ", because " [a-z ]{1,40}',
        'start: ANSWER ", because " REASON\nANSWER: "yes" | "no"\nREASON: /[a-z ]{1,40}/',
    ),
    (
        "Write a sum of two or three small numbers about {place}, like 3 + 4.",
        'root ::= num (" + " num){1,2}\nnum ::= [0-9]{1,3}',
        'start: NUM (" + " NUM) (" + " NUM)?\nNUM: /[0-9]{1,3}/',
    ),
    (
        "Write a SQL query that selects the population of {place} from a table of cities.",
        'root ::= "SELECT " ident " FROM " ident " WHERE " ident " = \'" [A-Za-z ]{1,20} "\'"\nident ::= [a-z_]{1,20}',
        'start: "SELECT " IDENT " FROM " IDENT " WHERE " IDENT " = \'" NAME "\'"\n'
        "IDENT: /[a-z_]{1,20}/\nNAME: /[A-Za-z ]{1,20}/",
    ),
]


def prompts(kind: str, n: int) -> list[tuple[str, Any, Any]]:
    """`n` seeded (prompt, native output type, validation-only output type) of `kind`."""
    rng = random.Random(f"{SEED}-{kind}")
    chosen = []
    for index in range(n):
        place = rng.choice(PLACES)
        if kind == "regex":
            template, pattern = REGEXES[index % len(REGEXES)]
            chosen.append((template.format(place=place), Regex(pattern), Regex(pattern)))
        else:
            template, gbnf, lark = GRAMMARS[index % len(GRAMMARS)]
            chosen.append((template.format(place=place), Grammar(gbnf=gbnf), Grammar(lark=lark)))
    return chosen


async def run_row(server: LocalModelServer, kind: str, contender: str, n: int) -> dict[str, Any]:
    sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="local")
    profile = LLAMA_SERVER_CHAT.replace(default_max_tokens=server.max_tokens)
    if contender == "validation only":
        profile = profile.replace(text_constraint=None)
    adapter = OpenAIChatClient(sdk, server.model, capabilities=profile)
    client = with_structured_output(adapter, max_retries=2)
    valid = requests = 0
    errors: Counter[str] = Counter()
    samples: list[dict[str, Any]] = []
    started = time.perf_counter()
    for prompt, native, checked in prompts(kind, n):
        output_type = native if contender == "native" else checked
        try:
            response = await client.get_response(
                prompt, output_type=output_type, options={"max_tokens": MAX_TOKENS, "temperature": 0}
            )
            valid += 1
            requests += len(response.attempts)
            samples.append({"prompt": prompt, "value": response.value, "requests": len(response.attempts)})
        except OutputError as error:
            errors[type(error).__name__] += 1
            requests += max(1, len(error.attempts))
            samples.append({"prompt": prompt, "error": str(error)[:200], "requests": len(error.attempts)})
    seconds = time.perf_counter() - started
    await sdk.close()
    log(f"{kind} {contender}: {valid}/{n} valid, {requests} requests, {seconds:.1f} s")
    return {
        "kind": kind,
        "contender": contender,
        "prompts": n,
        "valid": valid,
        "requests": requests,
        "seconds": round(seconds, 1),
        "errors": dict(errors),
        "samples": samples,
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| output | contender | valid | requests | errors | seconds |",
        "|---|---|---:|---:|---|---:|",
    ]
    for row in rows:
        errors = ", ".join(f"{name} × {count}" for name, count in row["errors"].items()) or "none"
        lines.append(
            f"| {row['kind']} | {row['contender']} | {row['valid']} / {row['prompts']} | {row['requests']} "
            f"| {errors} | {row['seconds']} |"
        )
    return "\n".join(lines)


async def main_async(n: int) -> None:
    rows = []
    with LocalModelServer(parallel=1) as server:
        for kind in ("regex", "grammar"):
            for contender in ("native", "validation only"):
                rows.append(await run_row(server, kind, contender, n))
    data = {
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": machine(),
        "load_average_end": list(os.getloadavg()),
        "rows": rows,
    }
    write_json("text_formats.json", data)
    print(table(rows))
    print(json.dumps({"load_average_end": data["load_average_end"]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=12, help="prompts per kind")
    asyncio.run(main_async(parser.parse_args().n))


if __name__ == "__main__":
    main()
