"""Cases that run the adapters, the core or the schema through the middleware layers: their fakes
are the unit tests' own, kept in helper modules beside those tests, so those folders are importable
here."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
for folder in (
    "batch",
    "core",
    "local",
    "providers",
    "providers/anthropic",
    "providers/bedrock",
    "providers/google",
    "providers/mistral",
    "providers/ollama",
    "providers/openai",
    "schema",
):
    if str(TESTS / folder) not in sys.path:
        sys.path.insert(0, str(TESTS / folder))
