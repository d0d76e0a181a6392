"""Starting llama-server so that it dies with this process, whichever thread asks for it.

On Linux the child asks the kernel (`prctl(PR_SET_PDEATHSIG)`) for SIGKILL when its parent dies,
even by SIGKILL: an orphaned llama-server has nothing to save, and its own SIGTERM handling (a
graceful shutdown) can hang. The kernel ties that signal to the *thread* that forked the child,
not the process: a server started from a short-lived worker thread would be stopped when that
thread ends. So every child is forked by one dedicated thread that lives as long as the process.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import IO

__all__ = ["exit_cause", "spawn"]

_PR_SET_PDEATHSIG = 1
_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def spawn(command: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    """Start `command` in its own session, output to `log`, from the long-lived spawner thread."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            # One worker, never shut down before interpreter exit: the thread outlives every caller.
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="so-middleware-spawner")
    return _spawner.submit(_popen, command, log).result()


# What a death by signal usually means for llama-server, and what to do about it.
_REBUILD = "so-middleware setup-local --rebuild"
_SIGNAL_CAUSES = {
    signal.SIGILL: (
        "the binary uses processor instructions this machine lacks: it was built for another CPU "
        f"(-march=native, llama.cpp's default). Build it for any CPU of this architecture: {_REBUILD}"
    ),
    signal.SIGKILL: "most often the kernel's out-of-memory killer: free memory or lower context_size",
    signal.SIGSEGV: f"it crashed; a build that does not match this machine can do that: {_REBUILD}",
    signal.SIGBUS: f"it crashed (bus error); the model file may be truncated or the build broken: {_REBUILD}",
    signal.SIGABRT: "it aborted on an internal check; its log below says which",
}


def exit_cause(returncode: int | None) -> str:
    """`"; killed by SIGILL: <cause and fix>"` for a process that died by a signal, else `""`."""
    if returncode is None or returncode >= 0:
        return ""
    try:
        number = signal.Signals(-returncode)
    except ValueError:
        return f"; killed by signal {-returncode}"
    cause = _SIGNAL_CAUSES.get(number)
    return f"; killed by {number.name}" + (f": {cause}" if cause else "")


def _forget_spawner() -> None:
    global _spawner, _spawner_lock
    _spawner, _spawner_lock = None, threading.Lock()  # a forked child has none of the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_spawner)


def _popen(command: list[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=_die_with_parent(),
    )  # fmt: skip


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook asking for SIGKILL when the forking thread (the spawner) dies."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    parent = os.getpid()

    def hook() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return hook
