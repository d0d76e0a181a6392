"""`run_interruptibly`: SIGINT and SIGTERM cancel the run inside its loop, never raise in the middle
of a task. Each case runs in a child process, so the signals reach a main thread that is not pytest's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Eight tasks switch cancel scopes and spend most of their time inside one; another process signals this one at a
# random point, as a terminal's Ctrl-C does (a timer thread here could wait for the GIL behind the busy tasks for
# seconds). What each task saw is recorded, and the process's own handlers are checked after.
SCRIPT = textwrap.dedent(
    """
    import os, random, signal, subprocess, sys
    import anyio
    from so_middleware.core import run_interruptibly

    def own(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, own)
    signal.signal(signal.SIGTERM, own)
    number = getattr(signal, sys.argv[1])
    for _ in range(int(sys.argv[2])):
        seen, unwound = [], []

        async def worker():
            try:
                while True:
                    with anyio.move_on_after(0.001):
                        await anyio.sleep(0)
                    with anyio.CancelScope():
                        sum(range(20_000))  # most of the time is spent here, inside a task's scope
                        await anyio.sleep(0)
            except BaseException as error:
                seen.append(type(error).__name__)
                raise

        async def run():
            try:
                async with anyio.create_task_group() as group:
                    for _ in range(8):
                        group.start_soon(worker)
            finally:
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(0.01)  # a shielded clean-up still finishes
                unwound.append(True)

        delay = random.uniform(0.05, 0.15)
        sender = subprocess.Popen(["sh", "-c", f"sleep {delay:.3f}; kill -{sys.argv[1][3:]} {os.getpid()}"])
        try:
            run_interruptibly(run())
        except KeyboardInterrupt:
            print("interrupted", sorted(set(seen)), len(seen), unwound)
        sender.wait()
    print("handlers", signal.getsignal(signal.SIGINT) is own, signal.getsignal(signal.SIGTERM) is own)
    """
)


def run_script(signal_name: str, rounds: int) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, signal_name, str(rounds)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_sigint_cancels_every_task_and_raises_keyboard_interrupt_once_the_run_has_unwound() -> None:
    lines = run_script("SIGINT", 20)
    assert lines[:-1] == ["interrupted ['CancelledError'] 8 [True]"] * 20
    assert lines[-1] == "handlers True True"  # the process's own handlers are back


def test_sigterm_ends_the_run_the_same_way() -> None:
    lines = run_script("SIGTERM", 5)
    assert lines[:-1] == ["interrupted ['CancelledError'] 8 [True]"] * 5
    assert lines[-1] == "handlers True True"


def test_off_the_main_thread_it_runs_as_asyncio_run_and_leaves_the_handlers_alone() -> None:
    import asyncio
    import signal
    import threading

    from so_middleware.core import run_interruptibly

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    results: list[object] = []

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    thread = threading.Thread(target=lambda: results.append(run_interruptibly(answer())))
    thread.start()
    thread.join(timeout=10)
    assert results == [42]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
