"""tests/ mirrors the package: each test folder names a package folder (but the few that test
across it), and a layer's unit tests call no higher layer's public factory (`with_retries`,
`with_structured_output`, ...): such cases run in tests/integration."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

from test_structure import ALLOWED, layer_of

import so_middleware

PACKAGE = Path(so_middleware.__file__).parent
TESTS = Path(__file__).parent
# Test folders that mirror no package folder: cases across the layers, real clients driven
# unmodified, the type checkers' samples, the docs' promises.
ACROSS = {"integration", "clients", "typing", "docs"}
# The package's public factories (`so_middleware.__all__`'s functions), by the layer defining each.
FACTORIES = {
    id(member): (name, layer_of(member.__module__))
    for name in so_middleware.__all__
    if inspect.isfunction(member := getattr(so_middleware, name))
}


def unmirrored(test_folders: list[str], package_folders: set[str]) -> list[str]:
    """The test folders (relative to tests/) that name no package folder (relative to it)."""
    return [folder for folder in test_folders if folder.split("/")[0] not in ACROSS and folder not in package_folders]


def higher_factories(source: str, layer: str, resolve: Any = importlib.import_module) -> list[str]:
    """The public factories `source` (a test module of `layer`'s folder) imports from a layer
    `layer` may not import: `name (layer):line`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "so_middleware":
            module = resolve(node.module)
            for alias in node.names:
                hit = FACTORIES.get(id(getattr(module, alias.name, None)))
                if hit is not None and hit[1] not in ALLOWED[layer]:
                    found.append(f"{hit[0]} ({hit[1]}):{node.lineno}")
    return found


def test_each_test_folder_names_a_package_folder() -> None:
    package_folders = {
        str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*") if path.is_dir() and path.name != "__pycache__"
    }
    test_folders = sorted(
        str(path.relative_to(TESTS)) for path in TESTS.rglob("*") if path.is_dir() and any(path.glob("test_*.py"))
    )
    assert unmirrored(test_folders, package_folders) == []


def test_unit_tests_call_no_higher_layers_factory() -> None:
    problems = []
    for path in sorted(TESTS.rglob("test_*.py")):
        layer = path.relative_to(TESTS).parts[0]
        if layer in ALLOWED and layer not in ACROSS:
            problems += [f"{path.relative_to(TESTS)}: {hit}" for hit in higher_factories(path.read_text(), layer)]
    assert problems == []


def test_a_misplaced_folder_or_a_higher_factory_is_caught() -> None:
    """Positive control: a folder named after no package folder, a core test building the retry
    layer, a provider test the structured-output layer (from its own module too); a middleware
    test may use another middleware layer, a provider test the core's `run_sync`."""
    assert unmirrored(["core", "stategies", "middleware/retries", "integration/x"], {"core", "middleware/retries"}) == [
        "stategies"
    ]
    assert higher_factories("from so_middleware import with_retries, run_sync\n", "core") == [
        "with_retries (middleware):1"
    ]
    structured = "from so_middleware.middleware.structured_output import with_structured_output\n"
    assert higher_factories(structured, "providers") == ["with_structured_output (middleware):1"]
    assert higher_factories("from so_middleware import run_sync\n", "providers") == []
    assert higher_factories("from so_middleware import with_cache, with_retries\n", "middleware") == []
