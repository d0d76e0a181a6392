"""One name per concept: the response record's keys and the schema dialect, each defined once."""

from __future__ import annotations

import ast
from pathlib import Path

from python_source import parse

import so_middleware
from so_middleware import core, schema
from so_middleware.core import RECORD_KEYS

PACKAGE = Path(so_middleware.__file__).parent
REGISTRY = PACKAGE / "core" / "_record_keys.py"


def spelled_out(source: str, values: set[str]) -> list[int]:
    """Lines where one of `values` is written as a string literal (docstrings and f-strings aside)."""
    tree = parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in values and id(node) not in docstrings
    ]


def test_each_record_key_is_spelled_out_only_in_the_registry() -> None:
    values = set(RECORD_KEYS)
    found = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != REGISTRY and (lines := spelled_out(path.read_text(), values))
    }
    assert found == {}


def test_a_spelled_out_key_is_caught() -> None:
    """Positive control: the agents' response read the retries key as a bare string."""
    source = 'def retries(r):\n    return r.additional_properties.get("so_middleware.retries", [])\n'
    assert spelled_out(source, set(RECORD_KEYS)) == [2]


def record_key_imports(source: str, module: str) -> list[str]:
    """The record keys `module` imports from anywhere but the core (a re-export that would give
    a key a second home)."""
    keys = {name for name in vars(core) if name.endswith("_KEY") and getattr(core, name) in RECORD_KEYS}
    found = []
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.ImportFrom):
            origin = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name in keys and origin.lstrip(".") not in ("core", "so_middleware.core", "_record_keys"):
                    found.append(f"{module}:{node.lineno} imports {alias.name} from {origin}")
    return found


def test_the_record_keys_are_imported_from_the_core() -> None:
    found = [
        problem
        for path in sorted(PACKAGE.rglob("*.py"))
        for problem in record_key_imports(path.read_text(), str(path.relative_to(PACKAGE)))
    ]
    assert found == []


def test_a_record_key_imported_through_another_module_is_caught() -> None:
    """Positive control: the logging layer took the keys from the telemetry names module."""
    source = "from .._otel_names import RETRIES_KEY, STRUCTURED_OUTPUT_KEY\nfrom ...core import FALLBACK_KEY\n"
    assert record_key_imports(source, "middleware/logging/_records.py") == [
        "middleware/logging/_records.py:1 imports RETRIES_KEY from .._otel_names",
        "middleware/logging/_records.py:1 imports STRUCTURED_OUTPUT_KEY from .._otel_names",
    ]


def test_the_record_keys_are_distinct() -> None:
    assert len(set(RECORD_KEYS)) == len(RECORD_KEYS)
    assert core.STRUCTURED_OUTPUT_KEY == "so_middleware.structured_output"  # the documented key
    assert core.RETRIES_KEY == "so_middleware.retries"


def literal_definitions(value: str) -> list[str]:
    """Where a `Literal[...]` holding `value` is written in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(parse(path.read_text())):
            literal = isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal")
            if literal and f"'{value}'" in ast.unparse(node):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_the_schema_dialect_literal_is_defined_once() -> None:
    assert len(literal_definitions("openai-strict")) == 1
    assert schema.SchemaProfile is core.SchemaProfile
