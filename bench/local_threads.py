"""Extraction latency of the embedded llama-server by thread count, idle and next to busy processes.

    .venv/bin/python bench/local_threads.py                       # threads 1, 2, all; 0 and 1 busy process
    .venv/bin/python bench/local_threads.py --threads 1 2 --busy 0 1 --calls 8 --poll 50 0
    python bench/run.py --only local_threads                      # the suite's section: threads 1 and 2,
                                                                  # 0 and 1 busy process, poll 50 and 0, 6 calls

Each configuration starts its own server (one slot), warms it up with one call, then times
`--calls` extractions of `examples/people.py:Person` on the Chat Completions route (a different
sentence each time, so no prompt is served from the cache). A busy process is
`python -c 'while 1: pass'`, started before the server and killed after it. A call that takes
longer than `--call-timeout` counts as that long and ends the configuration early (the others
would take as long). The load average before and after each configuration is recorded: other
work on the machine changes the figures, so they are reported with it.

Writes `bench/results/local_threads.json` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from examples.people import Person  # noqa: E402
from so_middleware import with_structured_output  # noqa: E402
from so_middleware.local import LocalModelServer, chat_client  # noqa: E402

NAMES = ["John Smith", "Ada Lovelace", "Grace Hopper", "Alan Turing", "Mary Jackson", "Tim Berners-Lee"]
JOBS = ["engineer", "teacher", "nurse", "pilot", "baker", "writer"]


def sentence(index: int) -> str:
    return f"{NAMES[index % len(NAMES)]} is a {30 + index}-year-old {JOBS[index % len(JOBS)]} from Leeds."


def load() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def measure(threads: int, poll: int | None, busy: int, calls: int, call_timeout: float) -> dict[str, Any]:
    """Time `calls` extractions on a fresh server with `threads` threads next to `busy` busy processes."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(busy)]
    load_before = load()
    latencies: list[float] = []
    timed_out = False
    extra = ["--poll", str(poll)] if poll is not None else []
    try:
        started = time.perf_counter()
        with LocalModelServer(threads=threads, parallel=1, extra_args=extra, startup_timeout=120) as server:
            startup = time.perf_counter() - started
            client = with_structured_output(chat_client(server, "chat", sync=True, timeout=call_timeout, max_retries=0))
            options = {"max_tokens": 64, "temperature": 0}
            client.get_response_sync(sentence(99), output_type=Person, options=options)  # warm-up
            for index in range(calls):
                began = time.perf_counter()
                try:
                    client.get_response_sync(sentence(index), output_type=Person, options=options)
                except Exception as error:  # a timeout: count it as call_timeout and stop here
                    print(f"    call {index}: {type(error).__name__}", file=sys.stderr)
                    latencies.append(call_timeout)
                    timed_out = True
                    break
                latencies.append(time.perf_counter() - began)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    ordered = sorted(latencies)
    return {
        "threads": threads,
        "poll": poll,
        "busy_processes": busy,
        "calls": len(latencies),
        "startup_s": round(startup, 2),
        "median_s": round(statistics.median(ordered), 3),
        "p90_s": round(ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))], 3),
        "max_s": round(ordered[-1], 3),
        "timed_out": timed_out,
        "load_before": load_before,
        "load_after": load(),
    }


def measure_all(
    threads: list[int], busy: list[int], polls: list[int | None], calls: int, call_timeout: float
) -> dict[str, Any]:
    """Every (busy, threads, poll) configuration in turn; the JSON-ready result."""
    os.environ.pop("SO_MIDDLEWARE_THREADS", None)  # every configuration names its threads
    rows = []
    for competing in busy:
        for count in threads:
            for poll in polls:
                print(f"busy={competing} threads={count} poll={poll} ...", file=sys.stderr, flush=True)
                rows.append(measure(count, poll, competing, calls, call_timeout))
                print(f"    {rows[-1]}", file=sys.stderr, flush=True)
    return {"cores": os.cpu_count() or 1, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows}


def run(*, quick: bool) -> dict[str, Any]:
    """The section of `bench/run.py`: one thread against two, idle and next to one busy process."""
    if quick:
        return dict(measure_all([1], [0], [None], 2, 60.0), command="python bench/run.py --quick")
    result = measure_all([1, 2], [0, 1], [50, 0], 6, 60.0)
    return dict(result, command="python bench/run.py --only local_threads")


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| busy processes | threads | poll | calls | median s | p90 s | max s | load before → after (1/5/15 min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        poll = "default" if row["poll"] is None else row["poll"]
        mark = " (timed out)" if row["timed_out"] else ""
        lines.append(
            f"| {row['busy_processes']} | {row['threads']} | {poll} | {row['calls']}{mark} | {row['median_s']} "
            f"| {row['p90_s']} | {row['max_s']} | {row['load_before']} → {row['load_after']} |"
        )
    return "\n".join(lines)


def main() -> None:
    cores = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=sorted({1, 2, cores}))
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1], help="competing busy processes")
    parser.add_argument("--poll", type=int, nargs="+", default=None, help="llama-server --poll levels to try")
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--call-timeout", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "local_threads.json")
    args = parser.parse_args()
    result = measure_all(args.threads, args.busy, args.poll or [None], args.calls, args.call_timeout)
    result["command"] = " ".join([".venv/bin/python", "bench/local_threads.py", *sys.argv[1:]])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result["rows"]))


if __name__ == "__main__":
    main()
