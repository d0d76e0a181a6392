"""`python -m so_middleware.cli`: the `so-middleware` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
