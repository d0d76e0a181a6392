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
    assert schema.SchemaProfile is core.SchemaProfile is core.SchemaProfileName
