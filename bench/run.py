"""The benchmark suite's one entry point: runs every benchmark, writes the results and BENCHMARKS.md.

    python bench/run.py            # the full run (about 35 minutes on 2 cores); writes BENCHMARKS.md
    python bench/run.py --quick    # a smoke run; results under bench/results/quick/, BENCHMARKS.md untouched
    python bench/run.py --only overhead streaming   # some sections (BENCHMARKS.md keeps the others)
    python bench/run.py --record   # record the llama-server fixtures again first
    python bench/run.py --report   # only regenerate BENCHMARKS.md and the plot from bench/results/*.json

Sections: overhead (per-call cost over a mock transport), streaming (partial parsing of large
answers), concurrency (200 calls in flight against a loopback server), quality (the task set
against the real local model), gateway (the Responses gateway over a loopback fake backend,
streaming, against calling that backend directly), local_threads (extraction latency of the embedded
llama-server by thread count, idle and next to a busy process), tool_emulation (forced tool calls on
the embedded model before and after tool emulation, and the `tool` strategy). Each writes `bench/results/<section>.json`; BENCHMARKS.md and the
plot are generated from those files, never edited by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
from _common import CHAT_FIXTURE, MODEL_ALIAS, RESULTS, ROOT, STREAM_FIXTURE, log
from quality import DEFAULT, outline_section

SECTIONS = ("overhead", "streaming", "concurrency", "quality", "gateway", "local_threads", "tool_emulation")
PLOT = "streaming_cpu.png"


def ensure_fixtures(force: bool) -> None:
    """Record the llama-server bodies the mock transports replay, unless they exist already."""
    if not force and CHAT_FIXTURE.exists() and STREAM_FIXTURE.exists():
        return
    import overhead

    from so_middleware.local import LocalModelServer

    log("recording fixtures from the local llama-server")
    with LocalModelServer(extra_args=["--alias", MODEL_ALIAS]) as server:
        overhead.record_fixtures(server.base_url)


def run_section(name: str, *, quick: bool) -> dict[str, Any]:
    module = __import__(name)
    started = time.perf_counter()
    result: dict[str, Any] = module.run(quick=quick)
    result["section_seconds"] = time.perf_counter() - started
    return result


# ---------------------------------------------------------------------------- the plot


def plot_streaming(streaming: dict[str, Any], path: Path) -> None:
    """CPU seconds against document size, log-log, one line per library; capped points marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    figure, axes = plt.subplots(figsize=(8, 5.5), dpi=110)
    markers = ["o", "s", "^", "D", "v"]
    for (contender, rows), marker in zip(streaming["rows"].items(), markers, strict=False):
        measured = [(r["size"] / 1024, r["cpu_s"]) for r in rows if "cpu_s" in r]
        capped = [(r["size"] / 1024, r["budget_s"]) for r in rows if r.get("over_budget") and not r.get("skipped")]
        slope = streaming["slopes"][contender]["slope_measured"]
        label = contender + (f" (slope {slope:.2f})" if slope is not None else "")
        line = None
        if measured:
            (line,) = axes.plot(*zip(*measured, strict=True), marker=marker, linewidth=2, label=label)
        if capped:
            color = line.get_color() if line is not None else None
            points = measured[-1:] + capped
            axes.plot(*zip(*points, strict=True), linestyle=":", color=color, linewidth=2)
            axes.plot(
                *zip(*capped, strict=True),
                marker="^",
                markersize=12,
                linestyle="none",
                color=color,
                label=f"{contender}: over the {capped[0][1]:.0f} s budget",
            )
    sizes = [s / 1024 for s in streaming["sizes"]]
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xticks(sizes)
    axes.set_xticklabels([f"{int(s)} KB" if s < 1024 else f"{s / 1024:g} MB" for s in sizes])
    axes.minorticks_off()
    axes.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g} s"))
    axes.set_xlabel(f"JSON document size, streamed in {streaming['chunk_bytes']}-byte SSE chunks")
    axes.set_ylabel("CPU seconds for the whole stream (process_time)")
    axes.set_title("Streaming partial parsing: CPU time against size (log-log)")
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


# ---------------------------------------------------------------------------- the report


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _kb(size: int) -> str:
    return f"{size // 1024} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:g} MB"


def overhead_tables(data: dict[str, Any]) -> list[str]:
    lines = [
        f"CPU time (`time.process_time`, robust to the load of a shared machine) per call: median of "
        f"{data['runs']} runs × {data['calls_per_run']} sequential calls per contender (after "
        f"{data['warmup_calls']} warm-up calls), runs interleaved across contenders. The non-streaming body is "
        f"{data['chat_body_bytes']} bytes; the stream has {data['stream_events']} SSE events. Type: "
        "`Person(name, age, city)`.",
        "",
    ]
    for mode, rows in data["modes"].items():
        lines += [
            f"**{mode}**",
            "",
            "| contender | environment | µs per call | calls/s | overhead vs raw SDK (µs) | ratio to raw SDK |",
            "|---|---|---:|---:|---:|---:|",
        ]
        environments = data.get("environments", {})
        for row in rows:
            env = environments.get(row.get("environment", "test"), "")
            lines.append(
                f"| {row['contender']} | {env} | {_f(row['median_us_per_call'], 0)} | {_f(row['calls_per_s'], 0)} | "
                f"{_f(row['overhead_us_vs_raw'], 0)} | {_f(row['ratio_to_raw'])}× |"
            )
        lines.append("")
    return lines


def streaming_tables(data: dict[str, Any]) -> list[str]:
    documents = data.get("documents") or {"orders": {"rows": data["rows"], "slopes": data["slopes"]}}
    lines: list[str] = []
    for kind, table in documents.items():
        title = "list of orders (`Orders`)" if kind == "orders" else "one long string (`Notes.notes`)"
        lines += [f"**{title}**", "", *streaming_table({**data, **table}), ""]
        floor = table["rows"].get("raw SDK stream (floor)", [])
        ours = table["rows"].get("so_middleware", [])
        ratios = [
            f"{_kb(o['size'])} {o['cpu_s'] / f['cpu_s']:.2f}×"
            for o, f in zip(ours, floor, strict=False)
            if "cpu_s" in o and "cpu_s" in f
        ]
        if ratios:
            lines += ["so_middleware's CPU over the raw SDK's: " + ", ".join(ratios) + ".", ""]
    return lines


def streaming_table(data: dict[str, Any]) -> list[str]:
    sizes = data["sizes"]
    environments = data.get("environments", {})
    head = "| contender | " + " | ".join(_kb(s) for s in sizes) + " | growth exponent (log-log slope) |"
    lines = [head, "|---|" + "---:|" * len(sizes) + "---|"]
    for contender, rows in data["rows"].items():
        cells = []
        for row in rows:
            if "cpu_s" in row:
                runs = len(row["runs_s"])
                cells.append(f"{row['cpu_s']:.2f} s" + ("" if runs == data["max_runs"] else f" ({runs} run)"))
            elif row.get("skipped"):
                cells.append(f"not run (> {row['budget_s']:.0f} s at a smaller size)")
            elif row.get("over_budget"):
                reached = row.get("reached_chars")
                where = (
                    f", stopped at {100 * reached / row['document_chars']:.0f}% of the document"
                    if reached and reached > 0 and row.get("document_chars")
                    else ""
                )
                cells.append(f"> {row['budget_s']:.0f} s{where}")
            else:
                cells.append(f"error: {row.get('error')}")
        slope = data["slopes"][contender]
        text = _f(slope["slope_measured"])
        if slope["slope_at_least"] is not None:
            text += f" over the measured sizes; ≥ {slope['slope_at_least']:.2f} up to the capped size"
        label = contender + (f" ({environments[contender]})" if contender in environments else "")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {text} |")
    return lines


def targets_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """Issue 13's targets against this run's side-by-side ratios (met or not, and by how much)."""
    rows: list[tuple[str, float | None, str, float]] = []  # (what, measured, "≤"/"≥", target)
    for mode, rows_of_mode in results.get("overhead", {}).get("modes", {}).items():
        ratios = {row["contender"]: row["ratio_to_raw"] for row in rows_of_mode}
        rows.append((f"full chain / raw SDK, {mode}", ratios.get(CHAIN), "≤", 1.10))
        rows.append((f"structured output only / raw SDK, {mode}", ratios.get(SO_ONLY), "≤", 1.05))
    for row in results.get("concurrency", {}).get("rows", []):
        which = {
            "so_middleware full chain": "full chain",
            "so_middleware structured output only": "structured output only",
        }
        if row["contender"] in which:
            name = which[row["contender"]]
            rows.append(
                (f"200 concurrent calls, {name}: throughput / raw SDK", row.get("throughput_ratio_to_raw"), "≥", 0.95)
            )
            rows.append(
                (
                    f"200 concurrent calls, {name}: tracemalloc peak / raw SDK",
                    row.get("tracemalloc_ratio_to_raw"),
                    "≤",
                    1.2,
                )
            )
    streaming = results.get("streaming", {})
    for kind, table in (streaming.get("documents") or {}).items():
        floor = {r["size"]: r.get("cpu_s") for r in table["rows"].get("raw SDK stream (floor)", [])}
        for row in table["rows"].get("so_middleware", []):
            if row["size"] <= 1024 * 1024 and row.get("cpu_s") and floor.get(row["size"]):
                rows.append((f"typed stream CPU / raw SDK stream, {kind}, {_kb(row['size'])}",
                             row["cpu_s"] / floor[row["size"]], "≤", 0.8))  # fmt: skip
        rows.append(
            (f"typed stream growth exponent, {kind}", table["slopes"]["so_middleware"]["slope_measured"], "≤", 1.02)
        )
    lines = ["| target | measured | goal | met |", "|---|---:|---:|---|"]
    for what, measured, sign, goal in rows:
        if measured is None:
            lines.append(f"| {what} | – | {sign} {goal:g} | not measured |")
            continue
        met = measured <= goal if sign == "≤" else measured >= goal
        verdict = "yes" if met else f"no, by {abs(measured - goal):.2f}"
        lines.append(f"| {what} | {measured:.2f} | {sign} {goal:g} | {verdict} |")
    return lines


CHAIN = "so_middleware full chain (telemetry+retries+SO)"
SO_ONLY = "so_middleware structured output only"


def concurrency_table(data: dict[str, Any]) -> list[str]:
    lines = [
        "| contender | environment | calls/s (median) | vs raw SDK | tracemalloc peak (MiB) | vs raw SDK | "
        "RSS after warm-up (MiB) | RSS peak growth (MiB) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in data["rows"]:
        if "error" in row:
            lines.append(f"| {row['contender']} | {row.get('environment', '')} | error: {row['error']} | | | | | |")
            continue
        lines.append(
            f"| {row['contender']} | {row.get('environment', '')} | {_f(row['calls_per_s'], 0)} | {_f(row['throughput_ratio_to_raw'])}× | "
            f"{_f(row['tracemalloc_peak_kib'] / 1024, 1)} | {_f(row['tracemalloc_ratio_to_raw'])}× | "
            f"{_f(row['rss_after_warmup_kib'] / 1024, 1)} | {_f(row['rss_growth_kib'] / 1024, 1)} |"
        )
    return lines


def gateway_table(data: dict[str, Any]) -> list[str]:
    lines = [
        "| streams in flight | direct p50 / p99 (ms) | gateway p50 / p99 (ms) | added p50 / p99 (ms) | "
        "direct streams/s | gateway streams/s |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in data["rows"]:
        d, g = row["direct"], row["gateway"]
        lines.append(
            f"| {row['concurrent']} | {_f(d['p50_ms'], 1)} / {_f(d['p99_ms'], 1)} | {_f(g['p50_ms'], 1)} / "
            f"{_f(g['p99_ms'], 1)} | {_f(row['added_p50_ms'], 1)} / {_f(row['added_p99_ms'], 1)} | "
            f"{_f(d['streams_per_s'], 0)} | {_f(g['streams_per_s'], 0)} |"
        )
    m = data["memory"]
    lines += ["", f"Measured {data['measured']}, load average {[round(x, 2) for x in data['load_average']]} "
              f"on {data['cpus']} CPUs. Memory per open stream: {_f(m['kib_per_open_stream'], 0)} KiB of gateway RSS ({m['open_streams']} "
              f"streams held open: {_f(m['rss_before_kib'] / 1024, 1)} MiB before, {_f(m['rss_open_kib'] / 1024, 1)} "
              "MiB with them open)."]  # fmt: skip
    return lines


def quality_table(data: dict[str, Any]) -> list[str]:
    lines = [
        "| library | route | strategy / mode | valid typed value | exactly correct | attempts per task | "
        "tokens per task | seconds per task | failures |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in data["summary"]:
        errors = ", ".join(f"{name} ×{count}" for name, count in sorted(row["errors"].items())) or "–"
        lines.append(
            f"| {row['library']}{_run_mark(data, row)} | {row['route']} | {row['mode']} | "
            f"{100 * row['valid_share']:.0f}% | "
            f"{100 * row['exact_share']:.0f}% | {row['attempts_per_task']:.2f} | {row['tokens_per_task']:.0f} | "
            f"{row['seconds_per_task']:.2f} | {errors} |"
        )
    return lines


def _quality_runs(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The separate runs some rows come from (`bench/quality.py --defaults`), in order of appearance."""
    runs: list[dict[str, Any]] = []
    for row in data["summary"]:
        if "run" in row and row["run"] not in runs:
            runs.append(row["run"])
    return runs


def _run_mark(data: dict[str, Any], row: dict[str, Any]) -> str:
    return f" ({_quality_runs(data).index(row['run']) + 1})" if "run" in row else ""


def quality_runs_note(data: dict[str, Any], full_run: str) -> list[str]:
    runs = _quality_runs(data)
    if not runs:
        return []
    lines = [""]
    for number, run in enumerate(runs, 1):
        profiles = "; ".join(
            f"{row['library']} on {row['route']}: `{row['profile']}`"
            for row in data["summary"]
            if row.get("run") == run and "profile" in row
        )
        lines.append(
            f"({number}) measured {run['measured']}, in one run of their own with `{run['command']}` (load average "
            f"{run['load_average_before']} before, {run['load_average_after']} after); the rows without a number "
            f"are from the section's full run of {full_run}."
            + (f" The adapters' profiles after the run: {profiles}." if profiles else "")
        )
    return lines


def quality_before_after(data: dict[str, Any]) -> list[str]:
    """The default strategy per route, `so_middleware` on the route's profiled adapter: the rows
    saved under `default_before` against the current ones."""
    before = data.get("default_before")
    if not before:
        return []
    now = {row["route"]: row for row in data["summary"] if (row["library"], row["mode"]) == ("so_middleware", DEFAULT)}
    lines = [
        "",
        f"The default strategy before and after, `so_middleware` on each route's profiled adapter: before = "
        f"{before['source']}; after = the row above{_run_mark(data, next(iter(now.values()), {}))}. Seconds are "
        "left out: they depend on the shared machine's load (the footnotes give it), the other columns do not.",
        "",
        "| route | valid typed value | exactly correct | attempts per task | tokens per task | failures |",
        "|---|---:|---:|---:|---:|---|",
    ]

    def cells(row: dict[str, Any]) -> list[str]:
        errors = ", ".join(f"{name} ×{count}" for name, count in sorted(row["errors"].items())) or "–"
        return [
            f"{100 * row['valid_share']:.0f}%",
            f"{100 * row['exact_share']:.0f}%",
            f"{row['attempts_per_task']:.2f}",
            f"{row['tokens_per_task']:.0f}",
            errors,
        ]

    for route, old in before["rows"].items():
        if route not in now:
            continue
        pairs = zip(cells(old), cells(now[route]), strict=True)
        lines.append(f"| {route} | " + " | ".join(f"{a} → {b}" for a, b in pairs) + " |")
    return lines


def quality_by_category(data: dict[str, Any]) -> list[str]:
    import tasks as task_set

    category = {t.name: t.category for t in task_set.TASKS}
    categories = data["task_categories"]
    lines = [
        "| library | route | strategy / mode | " + " | ".join(categories) + " |",
        "|---|---|---|" + "---:|" * len(categories),
    ]
    for key, outcomes in data["outcomes"].items():
        library, route, mode = key.split("/")
        row = next((r for r in data["summary"] if (r["library"], r["route"], r["mode"]) == (library, route, mode)), {})
        library += _run_mark(data, row)
        cells = []
        for name in categories:
            mine = [o for o in outcomes if category.get(o["task"]) == name]
            cells.append(f"{sum(o['exact'] for o in mine)}/{len(mine)}")
        lines.append(f"| {library} | {route} | {mode} | " + " | ".join(cells) + " |")
    return lines


def local_threads_section(data: dict[str, Any]) -> list[str]:
    import local_threads

    def median(busy: int, threads: int) -> str:
        rows = [
            r
            for r in data["rows"]
            if (r["busy_processes"], r["threads"]) == (busy, threads) and r["poll"] in (50, None)
        ]
        return f"{rows[0]['median_s']:.1f} s" if rows else "–"

    note = f" Note: {data['note']}." if data.get("note") else ""
    return [
        "## 6. Threads of the embedded llama-server",
        "",
        "`bench/local_threads.py`: extraction latency of the embedded server (SmolLM2-135M-Instruct, one slot, "
        "Chat Completions, `examples/people.py:Person`, max_tokens 64, temperature 0) by thread count and "
        "llama-server `--poll` level (50 is its default; 0 never spins), idle and next to one competing busy "
        "process (`python -c 'while 1: pass'`). Each configuration starts its own server, warms it up with one "
        "call and times the next ones, each on a new sentence; a call over 60 s counts as 60 s and ends the "
        f"configuration. Measured {data['date']} on {data['cores']} CPUs with `{data['command']}`; the load "
        f"average before and after each configuration is in the table.{note}",
        "",
        f"Median with poll 50 (the default): {median(0, 1)} with 1 thread and {median(0, 2)} with 2 on the "
        f"machine as it was; next to one busy process, {median(1, 1)} with 1 thread and {median(1, 2)} with 2. "
        "llama.cpp's threads "
        "spin while they wait for each other, so a thread per core collapses when another process wants a core: "
        "the default is half the usable CPUs (at least 1, at most 4).",
        "",
        local_threads.table(data["rows"]),
        "",
    ]


def write_report(results: dict[str, dict[str, Any]], meta: dict[str, Any], path: Path, plot: str | None) -> None:
    m = meta["machine_start"]
    v = meta["versions"]
    lines = [
        "# Benchmarks",
        "",
        "Generated by `bench/run.py` (`make bench`); do not edit by hand, run it again. Raw results are in "
        "`bench/results/*.json`.",
        "",
        "## Machine and versions",
        "",
        f"- date: {meta['date']}; the run took {meta['total_seconds'] / 60:.1f} minutes"
        + (" (only: " + ", ".join(meta["only"]) + ")" if meta.get("only") else ""),
        f"- CPU: {m['cpu_model']}, `nproc` = {m['nproc']}; memory {m['memory_gib']} GiB; Python {m['python']} "
        f"({m['platform']})",
        f"- load average (1, 5, 15 min) at the start {m['load_average']}, at the end "
        f"{meta['machine_end']['load_average']}: the machine is shared, other processes ran during the run",
        "- packages: " + ", ".join(f"{name} {version}" for name, version in v.items()),
        "",
    ]
    if any(name in results for name in ("overhead", "streaming", "concurrency")):
        lines += [
            "## Performance targets",
            "",
            "Ratios measured side by side in this run (sections 1-3); the machine's load is above.",
            "",
            *targets_table(results),
            "",
        ]
    if "overhead" in results:
        lines += [
            "## 1. Per-call overhead (mock transport, recorded llama-server body)",
            "",
            "Every contender uses `openai.AsyncOpenAI(http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(...)))` "
            "serving the same body, recorded from the real llama-server by `bench/overhead.py` "
            "(`bench/results/fixtures/`). The full chain is `with_telemetry(with_retries(with_structured_output("
            "OpenAIChatClient(sdk, model))))` with an OTel SDK tracer provider (in-memory span exporter) and meter "
            "provider (in-memory reader), so spans and metrics are really recorded. instructor is "
            "`instructor.from_openai(sdk, mode=instructor.Mode.JSON_SCHEMA)`; it pins an older openai SDK, so its "
            "rows run in their own environment (`.venv-bench`) beside a raw-SDK row of that environment, and its "
            "ratio is to that row; every other row runs in the test environment (the current SDKs). "
            "so_middleware's OpenAI adapters send `create`'s request through the SDK client's own `post` (the SDK "
            "still does auth, base URL, headers, its retries, HTTP errors and reading the body into its "
            "`ChatCompletion`), which skips `create`'s request transform (a walk of every nested dict of the request "
            "against the parameter types): that walk is about half of a raw `create` call's CPU time here, which is "
            "why a layer stack can cost less than the raw call (`tests/providers/openai/test_sdk_post.py` checks that the request "
            "sent is the same).",
            "",
        ]
        lines += overhead_tables(results["overhead"])
        # checkouts A/B'd in one run (the benches' `--base`), their tables as they printed them
        side_by_side = RESULTS / "side_by_side.md"
        if side_by_side.exists():
            lines += ["", side_by_side.read_text().strip(), ""]
    if "streaming" in results:
        s = results["streaming"]
        lines += [
            "## 2. Streaming partial parsing",
            "",
            "Two JSON documents, `Orders` (orders with nested address, line items and ~1 KB notes) and `Notes` (a "
            "title and one long `notes` string), each at every size, are cut into "
            f"{s['chunk_bytes']}-byte pieces, each sent as one Chat Completions SSE event (`delta.content`) through "
            "`httpx2.MockTransport`; all contenders read the same bytes. CPU seconds (`time.process_time`) for the whole "
            f"stream, median of up to {s['max_runs']} runs (fewer when a run is long: the count is shown), each "
            "(contender, size) in a fresh process after a warm-up stream. Contenders: raw SDK `create(stream=True)` "
            "concatenating deltas (the floor every library pays); so_middleware's full chain, `get_response(..., "
            "stream=True)` with `StructuredOutput(Orders)` (or `Notes`), reading `update.partial_value` on every update; instructor "
            "`create_partial(response_model=Orders)` (JSON_SCHEMA, in its own environment), taking every partial; the OpenAI SDK's "
            "`chat.completions.stream(response_format=Orders)` helper, taking every event. A contender past the "
            f'{s["cpu_budget_s"]:.0f} s CPU budget is stopped and reported as "> budget".',
            "",
        ]
        lines += streaming_tables(s)
        if plot:
            lines += ["", f"![CPU time against size, log-log]({plot})", ""]
    if "concurrency" in results:
        c = results["concurrency"]
        lines += [
            "## 3. Concurrency",
            "",
            f"{c['concurrent_calls']} structured calls started at once (`asyncio.gather`) against a loopback asyncio "
            "HTTP/1.1 server (its own process on 127.0.0.1) that answers with the recorded llama-server body. Each "
            "contender runs in its own process: calls/s is the median over "
            f"{c['rounds']} rounds after a warm-up round, the processes taking turns round by round (so a slow spell "
            "of the shared machine falls on every contender alike); tracemalloc peak is the Python allocation peak "
            "of a round above the allocations before it, the median of "
            f"{c.get('tracemalloc_rounds', 1)} more rounds, one process at a time; RSS peak growth is VmHWM after "
            "the timed rounds minus VmRSS after the warm-up round.",
            "",
        ]
        lines += concurrency_table(c)
        lines.append("")
    if "quality" in results:
        q = results["quality"]
        st = q["settings"]
        missing = "; ".join(f"{route}: {why}" for route, why in q["routes_missing"].items()) or "none"
        lines += [
            "## 4. Quality on a real model",
            "",
            f"{q['tasks']} extraction tasks (`bench/tasks.py`: {', '.join(q['task_categories'])}) against the local "
            f"llama-server with {q['model']} (135M parameters, Q4_1) on routes: {', '.join(q['routes'])} "
            f"(missing: {missing}). temperature {st['temperature']}, seed {st['seed']}, max_tokens "
            f"{st['max_tokens']}, max_retries {st['max_retries']} (3 attempts at most; instructor 1.17 counts "
            f"retries the same way). {st['in_flight']} tasks of a configuration in flight at once, so seconds "
            'are latency under that load. "Valid" = a value of the requested type came back; "exactly correct" '
            "= equal to the expected value (strings stripped and case-folded, floats to 2 decimals). Tokens are "
            "input + output over all attempts. Failures name the exception of each failed task. The "
            "`default (auto)` rows pass no `mode=`, what a user gets: `so_middleware` on the route's adapter with "
            "its shipped llama-server profile (`so_middleware.local.chat_client`); `generic adapter, no profile` "
            "on an adapter built from an SDK client with only a `base_url`, whose profile capability discovery "
            "finds; `discover=False`, the same adapter kept on the generic protocol profile (as before discovery). "
            "The peers' rows (`bench/quality_peers.py`; instructor's in its own environment, `.venv-bench`) build "
            "each library from an SDK client and a `base_url` only, in every mode it offers on the route.",
            "",
        ]
        lines += quality_table(q)
        lines += quality_runs_note(q, q.get("measured", meta["date"]))
        lines += quality_before_after(q)
        lines += ["", "Exactly correct, by task category:", ""]
        lines += quality_by_category(q)
        lines += outline_section()
        lines += ["", f"The quality section took {q['seconds_total'] / 60:.1f} minutes.", ""]
    if "gateway" in results:
        lines += [
            "## 5. The Responses gateway",
            "",
            "`bench/gateway.py`: streamed requests through `so-middleware gateway` (uvicorn, its own process; "
            "`POST /v1/responses`, `stream: true`, `store: false`) against a loopback fake Chat Completions backend "
            "(asyncio, its own process, one fixed SSE body of 22 chunks), compared with streaming from that backend "
            "directly (`POST /v1/chat/completions`); latency is request start to the last event, after one warm-up "
            "request per client. Memory per open stream: the gateway's RSS growth with streams held open by a "
            "backend that sends one chunk and then waits.",
            "",
        ]
        lines += gateway_table(results["gateway"])
        lines.append("")
    if "local_threads" in results:
        lines += local_threads_section(results["local_threads"])
    if "tool_emulation" in results:
        lines += __import__("tool_emulation").section(results["tool_emulation"])
    path.write_text("\n".join(lines).rstrip() + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run in seconds; writes under bench/results/quick/"
    )
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run only these sections")
    parser.add_argument("--record", action="store_true", help="record the llama-server fixtures again")
    parser.add_argument("--report", action="store_true", help="only write the report and plot from the saved results")
    args = parser.parse_args()

    out = RESULTS / "quick" if args.quick else RESULTS
    if args.report:
        saved = {
            name: json.loads((out / f"{name}.json").read_text()) for name in SECTIONS if (out / f"{name}.json").exists()
        }
        finish(saved, json.loads((out / "meta.json").read_text()), out, quick=args.quick)
        return
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine_start": _common.machine(),
        "versions": _common.versions(),
        "quick": args.quick,
        "only": args.only,
    }
    ensure_fixtures(args.record)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    for name in SECTIONS:
        if args.only and name not in args.only:
            previous = out / f"{name}.json"
            if previous.exists():
                results[name] = json.loads(previous.read_text())
            continue
        log(f"section {name}")
        results[name] = run_section(name, quick=args.quick)
        (out / f"{name}.json").write_text(json.dumps(results[name], indent=2, default=str) + "\n")
    meta["machine_end"] = _common.machine()
    meta["total_seconds"] = time.perf_counter() - started
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    finish(results, meta, out, quick=args.quick)


def finish(results: dict[str, dict[str, Any]], meta: dict[str, Any], out: Path, *, quick: bool) -> None:
    """Draw the plot and write the report from the results."""
    plot = None
    if "streaming" in results:
        plot_streaming(results["streaming"], out / PLOT)
        plot = PLOT if quick else f"bench/results/{PLOT}"
    report = out / "BENCHMARKS.md" if quick else ROOT / "BENCHMARKS.md"
    write_report(results, meta, report, plot)
    log(f"wrote {report.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
