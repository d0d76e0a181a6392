"""The agents' fixtures: a real PostgreSQL server, the gateway tests' own fixture (started the same way)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_GATEWAY_TESTS = Path(__file__).resolve().parent.parent / "gateway"
if str(_GATEWAY_TESTS) not in sys.path:
    sys.path.insert(0, str(_GATEWAY_TESTS))  # its conftest imports its `fakes`
_spec = importlib.util.spec_from_file_location("gateway_test_fixtures", _GATEWAY_TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_gateway_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_gateway_fixtures)

postgres_url = _gateway_fixtures.postgres_url
