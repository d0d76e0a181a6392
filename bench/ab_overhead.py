"""Per-call overhead of two checkouts side by side: structured output alone and the full chain, each
as a ratio to the raw SDK `create` measured in the same process.

Usage (from the repository root; BASE is another checkout, e.g. `git worktree add /tmp/base 8b09cb0`):

    .venv/bin/python bench/ab_overhead.py --base /tmp/base [/tmp/base2 ...] [--pairs 3] [--calls 300]
    .venv/bin/python bench/ab_overhead.py --base /tmp/base --instructions

Each pair runs one process per checkout, one after the other (the order turns between pairs),
with the checkout first on `PYTHONPATH`. A process answers every call from an in-process
`httpx2.MockTransport` serving the one recorded body of `bench/overhead.py`, and measures CPU time
per call of the raw `create`, `with_structured_output` alone and the full chain (telemetry with a
recording OpenTelemetry SDK, retries, structured output) in `--rounds` rounds of `--calls` calls
each: in a round each contender runs once, the order turning between rounds, after a
`gc.collect()` (no block pays for the garbage of the one before). A ratio is taken within each
round (its contender's block over the raw block of the same round), and a process reports the
median of its rounds' ratios and their range: what a noisy machine cannot shift much. The pairs
show the spread between processes.

With `--instructions` (valgrind installed), each checkout's contenders are counted instead: machine
instructions per call, by callgrind, collected only around 50 calls after 30 uncounted ones (one
process per contender). The load of the machine cannot move that count; it takes about a minute a
contender.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ROWS = ("raw", "structured", "chain")


# A bench script run for another checkout: that checkout's so_middleware imported first (from
# PYTHONPATH), before `_common` puts this checkout's folder at the head of `sys.path`.
_IN_CHECKOUT = (
    "import runpy, sys; sys.argv = sys.argv[1:]; sys.path[0] = sys.argv[0].rpartition('/')[0]; "
    "import so_middleware; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def in_checkout(tree: Path | None, python: str, script: str, *args: str) -> tuple[list[str], dict[str, str] | None]:
    """The command and environment that run `script` with `args` over `tree`'s so_middleware (this
    checkout's when `tree` is None)."""
    if tree is None:
        return [python, script, *args], None
    return [python, "-c", _IN_CHECKOUT, script, *args], {**os.environ, "PYTHONPATH": str(tree)}


def _contenders() -> dict[str, Callable[[], Awaitable[Any]]]:
    sys.path.insert(0, str(HERE))
    import overhead  # the same contenders as the overhead table

    contenders = overhead._contenders(False)
    return {
        "raw": contenders["raw SDK `create`"],
        "structured": contenders["so_middleware structured output only"],
        "chain": contenders["so_middleware full chain (telemetry+retries+SO)"],
    }


def _child(calls: int, rounds: int) -> dict[str, Any]:
    picked = _contenders()
    timings = asyncio.run(_measure(picked, rounds=rounds, calls=calls, warmup=50))
    found: dict[str, Any] = {"raw_us": statistics.median(timings["raw"]) * 1e6}
    for name in ("structured", "chain"):
        ratios = [spent / raw for spent, raw in zip(timings[name], timings["raw"], strict=True)]
        found[f"{name}_ratio"] = statistics.median(ratios)
        found[f"{name}_range"] = (min(ratios), max(ratios))
    return found


async def _measure(
    contenders: dict[str, Callable[[], Awaitable[Any]]], *, rounds: int, calls: int, warmup: int
) -> dict[str, list[float]]:
    """CPU seconds per call of each contender in each round (the same index: the same round)."""
    for call in contenders.values():
        for _ in range(warmup):
            await call()
    names = list(contenders)
    timings: dict[str, list[float]] = {name: [] for name in names}
    for turn in range(rounds):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:  # each goes first in turn
            call = contenders[name]
            gc.collect()
            start = time.process_time()  # CPU time: what the call costs, robust to a loaded machine
            for _ in range(calls):
                await call()
            timings[name].append((time.process_time() - start) / calls)
    return timings


def _counted_child(name: str) -> None:
    from _common import count_under_callgrind

    count_under_callgrind(_contenders()[name])


def _instructions(tree: Path, name: str) -> float:
    """Machine instructions per call of contender `name` over `tree`'s so_middleware."""
    from _common import callgrind_count

    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    count, printed = callgrind_count([sys.executable, str(Path(__file__).resolve()), "--child-counted", name], env=env)
    origin = printed.strip().splitlines()[-1] if printed.strip() else ""
    if not origin.startswith(str(tree)):
        raise SystemExit(f"{tree}: so_middleware was imported from {origin}, not from the checkout")
    return count


def _count_instructions(trees: dict[str, Path]) -> None:
    from _common import COUNTED_CALLS

    print(f"machine instructions per call (callgrind, {COUNTED_CALLS} calls counted)\n")
    print("| checkout | raw `create` | structured output alone ÷ raw | full chain ÷ raw |")
    print("|---|---|---|---|")
    for label, tree in trees.items():
        counts = {name: _instructions(tree, name) for name in ("raw", "structured", "chain")}
        raw = counts["raw"]
        print(
            f"| {label} | {raw:,.0f} | {counts['structured'] / raw:.3f}× ({counts['structured']:,.0f}) "
            f"| {counts['chain'] / raw:.3f}× ({counts['chain']:,.0f}) |",
            flush=True,
        )


def _run(tree: Path, calls: int, rounds: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--calls", str(calls), "--rounds", str(rounds)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr.strip()[-800:]}")
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    origin = found.pop("package")
    if not str(origin).startswith(str(tree)):
        raise SystemExit(f"{tree}: so_middleware was imported from {origin}, not from the checkout")
    return found


def _commit(tree: Path) -> str:
    """The short commit a checkout is at, to name its rows."""
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or tree.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, nargs="+", help="the checkouts to compare against")
    parser.add_argument("--head", type=Path, default=ROOT, help="the checkout measured (this one by default)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=300, help="calls of each contender in a round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds in each process")
    parser.add_argument("--instructions", action="store_true", help="count instructions per call (valgrind)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-counted", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_counted:
        import so_middleware

        _counted_child(args.child_counted)
        print(Path(so_middleware.__file__).resolve().parent)
        return
    if args.child:
        import so_middleware

        print(
            json.dumps(
                {**_child(args.calls, args.rounds), "package": str(Path(so_middleware.__file__).resolve().parent)}
            )
        )
        return
    if args.base is None:
        parser.error("--base is required")
    trees = {"head": args.head.resolve()}
    for tree in args.base:
        trees[f"base {_commit(tree)}" if len(args.base) > 1 else "base"] = tree.resolve()
    if args.instructions:
        _count_instructions(trees)
        return
    print(f"{args.rounds} rounds of {args.calls} calls a process; each ratio the median of its rounds' (their range)\n")
    print("| pair | checkout | raw `create` µs | structured output alone ÷ raw | full chain ÷ raw |")
    print("|---|---|---|---|---|")
    names = list(trees)
    for pair in range(1, args.pairs + 1):
        turn = (pair - 1) % len(names)  # each checkout goes first in turn (pair 1: the bases first)
        order = names[1:] + names[:1]
        order = order[turn:] + order[:turn]
        for name in order:
            found = _run(trees[name], args.calls, args.rounds)
            cells = [
                f"{found[f'{row}_ratio']:.2f}× ({_span(found[f'{row}_range'])})" for row in ("structured", "chain")
            ]
            print(f"| {pair} | {name} | {found['raw_us']:.0f} | {' | '.join(cells)} |", flush=True)


def _span(values: list[float]) -> str:
    low, high = values
    return f"{low:.2f}–{high:.2f}"


if __name__ == "__main__":
    main()
