"""`python -m so_middleware`: the `so-middleware` command."""

import sys


def _main() -> int:
    try:
        from .cli import main  # the command is an app: imported when run, not by the layer walk
    except KeyboardInterrupt:  # Ctrl-C while the command line imports: one line, as once it runs
        print("[so-middleware] interrupted", file=sys.stderr, flush=True)
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(_main())
