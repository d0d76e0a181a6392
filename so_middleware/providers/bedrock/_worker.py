"""A blocking boto3 call run off the event loop, on a thread pool of the loop's own.

`anyio.to_thread.run_sync` (its capacity limiter, cancel scope and worker bookkeeping) cost about
120,000 more machine instructions a hop than `loop.run_in_executor` over a
`concurrent.futures.ThreadPoolExecutor`: a twentieth of a plain Converse call. The pool is the
running loop's (made on its first call, dropped with the loop), so a process forked with a loop of
its own gets threads of its own; it holds at most `WORKERS` threads, as anyio's default limiter
lets 40 calls run at once, and a call past them waits for a free thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WORKERS", "off_loop"]

T = TypeVar("T")

WORKERS = 40
"""The most boto3 calls of one event loop that run at once."""

_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ThreadPoolExecutor] = weakref.WeakKeyDictionary()


async def off_loop(call: Callable[[], T]) -> T:
    """`call()` on a worker thread, awaited without blocking the loop. The caller's context goes
    with it (a tracer's current span), as with `anyio.to_thread`; a cancelled caller stops waiting
    at once, and the call, if it started, runs on with its result dropped (`abandon_on_cancel`).

    Example: `answer = await off_loop(functools.partial(client.converse, **request))`.
    """
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        pool = _pools[loop] = ThreadPoolExecutor(WORKERS, thread_name_prefix="bedrock-converse")
    return await loop.run_in_executor(pool, contextvars.copy_context().run, call)
