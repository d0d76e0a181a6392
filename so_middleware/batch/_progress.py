"""What `extract --input` shows while it runs: a bar on a terminal (tqdm, when installed), else a
line every few seconds; the age of the item in flight longest; and one warning for each item that
runs far longer than the answers so far (a small model that never closes its list is not silent)."""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from ._run import BatchRun
from ._summary import BatchSummary

__all__ = ["SlowItems", "follow"]

Oldest = tuple[str, float] | None  # the id in flight longest, and its age in seconds
Show = Callable[[BatchSummary | None, Oldest], None]


async def follow(
    run: BatchRun[Any], total: int, report: Callable[[str], None], *, tick: float = 2.0, slow: SlowItems | None = None
) -> None:
    """Consume `run`, showing its progress on stderr, every result and every `tick` seconds."""
    show = (_bar(total) if sys.stderr.isatty() else None) or _lines(total, report)
    slow = slow or SlowItems(report)

    async def ticker() -> None:
        while True:
            await asyncio.sleep(tick)
            oldest = run.oldest_in_flight()
            show(run.summary, oldest)
            slow.check(oldest)

    # A bare task, not a task group: a Ctrl-C in the loop stays a KeyboardInterrupt, not a group of one.
    ticking = asyncio.ensure_future(ticker())
    try:
        async for result in run:
            slow.finished(result.seconds)
            show(run.summary, run.oldest_in_flight())
    finally:
        ticking.cancel()
    show(None, None)


class SlowItems:
    """Reports, once per item, an item in flight for longer than `factor` times the median answer
    so far (and at least `floor` seconds): the call is still generating long after a normal answer
    would have ended."""

    def __init__(self, report: Callable[[str], None], *, factor: float = 5.0, floor: float = 60.0) -> None:
        self._report, self._factor, self._floor = report, factor, floor
        self._seconds: list[float] = []
        self._reported: set[str] = set()

    def finished(self, seconds: float) -> None:
        self._seconds.append(seconds)

    def check(self, oldest: Oldest) -> None:
        if oldest is None:
            return
        item_id, age = oldest
        median = statistics.median(self._seconds) if self._seconds else None
        bound = max(self._floor, self._factor * median) if median is not None else self._floor
        if age > bound and item_id not in self._reported:
            self._reported.add(item_id)
            typical = f" (a median answer took {median:.1f}s)" if median is not None else ""
            self._report(
                f"item {item_id} has been in flight for {age:.0f}s{typical}: the model may be repeating itself; "
                "--max-tokens bounds each answer"
            )


def _bar(total: int) -> Show | None:
    try:
        from tqdm import tqdm
    except ImportError:  # the [batch] extra is not installed: plain lines instead
        return None
    bar = tqdm(total=total, unit="item", file=sys.stderr, dynamic_ncols=True, smoothing=0.1)

    def show(summary: BatchSummary | None, oldest: Oldest) -> None:
        if summary is None:
            bar.close()
            return
        bar.update(summary.finished - bar.n)
        postfix: dict[str, object] = {"failed": sum(summary.failed.values())}
        if oldest is not None:
            postfix["oldest"] = f"{oldest[1]:.0f}s"
        bar.set_postfix(postfix, refresh=True)

    return show


def _lines(total: int, report: Callable[[str], None], every: float = 2.0) -> Show:
    started = shown = time.monotonic()

    def show(summary: BatchSummary | None, oldest: Oldest) -> None:
        nonlocal shown
        now = time.monotonic()
        if summary is None or now - shown < every:
            return
        shown = now
        rate = summary.finished / (now - started)
        eta = f"{(total - summary.finished) / rate:.0f}s" if rate else "?"
        longest = f", oldest in flight {oldest[1]:.0f}s ({oldest[0]})" if oldest is not None else ""
        report(
            f"{summary.finished}/{total} items, {sum(summary.failed.values())} failed, {rate:.1f} items/s, "
            f"ETA {eta}{longest}"
        )

    return show
