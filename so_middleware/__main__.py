"""`python -m so_middleware`: the `so-middleware` command."""

import sys


def _main() -> int:
    from .cli import main  # the command is an app: imported when run, not by the layer walk

    return main()


if __name__ == "__main__":
    sys.exit(_main())
