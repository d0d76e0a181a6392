"""The `so-middleware` console script's entry point, kept outside the package so that it runs before
the package is imported: Ctrl-C (or SIGTERM) while `so_middleware` is still importing, which takes a
noticeable part of a second, ends with one line and exit code 130, not a traceback.

Example: `so-middleware chat "Say hello"` runs `main()`, which runs `so_middleware.cli.main()`.
"""

from __future__ import annotations

import signal
import sys


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    """Import the command line and run it; an interruption while importing is exit code 130."""
    for number in (signal.SIGINT, signal.SIGTERM):  # as the command does once it runs: the same end for both
        signal.signal(number, _interrupt)
    try:
        from so_middleware.cli import main as command
    except KeyboardInterrupt:
        print("[so-middleware] interrupted", file=sys.stderr, flush=True)
        return 130
    return command()


if __name__ == "__main__":
    sys.exit(main())
