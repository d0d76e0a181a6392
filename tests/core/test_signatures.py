"""Each call signature is declared in one place, so its copies cannot drift apart."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from python_source import parse

import so_middleware

PACKAGE = Path(so_middleware.__file__).parent


def _definitions(name: str) -> Counter[str]:
    """How many `def name(...)` (overloads included) each module of the package holds."""
    found: Counter[str] = Counter()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                found[str(path.relative_to(PACKAGE))] += 1
    return found


def test_get_response_is_declared_once_on_the_protocol() -> None:
    assert _definitions("get_response") == {"core/_protocol.py": 5}  # four overloads and the implementation
    assert _definitions("get_response_sync") == {"core/_protocol.py": 5}


def test_the_agents_run_is_declared_once_on_the_protocol() -> None:
    runs = _definitions("run")
    assert runs["agents/_protocol.py"] == 5
    assert runs["agents/_agent.py"] == 1  # DelegatingAgent's pass-through of any arguments
    assert "agents/_structured.py" not in runs


def test_the_settings_keywords_are_spelled_as_parameters_once() -> None:
    """`max_retries` and its siblings are `OutputSettings` fields; only `with_structured_output`,
    which also takes the adapter's own options, lists them as parameters."""
    spelled: Counter[str] = Counter()
    for module in ("middleware/structured_output/_feature.py", "middleware/structured_output/__init__.py"):
        for node in ast.walk(parse((PACKAGE / module).read_text())):
            functions = (ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(node, functions) and any(arg.arg == "max_retries" for arg in node.args.kwonlyargs):
                spelled[node.name] += 1
    assert spelled == {"with_structured_output": 1}
