"""A subprocess started after a blocking call must not hang in its child before `exec`."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_subprocess_with_preexec_fn_after_a_sync_call_starts() -> None:
    """Before: the forked child collected the parent's blocking portal, whose closing waits for the
    parent's loop thread, which a child does not have: the child hung (LocalModelServer's start
    uses a preexec_fn). Run in a fresh interpreter so the portal is surely started first."""
    code = textwrap.dedent(
        """
        import gc, subprocess
        from so_middleware.core import run_sync

        async def one():
            return 1

        assert run_sync(one) == 1
        child = subprocess.Popen(["true"], preexec_fn=gc.collect)
        print(child.wait(timeout=20))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
