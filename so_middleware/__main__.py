"""`python -m so_middleware`: the `so-middleware` command."""

import sys

from .cli import main

sys.exit(main())
