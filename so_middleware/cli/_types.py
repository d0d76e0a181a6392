"""`--type`: loading the output type named on the command line, and refusing it early."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core import UserError


def _load_type(spec: str) -> Any:
    """`package.module:Name` or `path/to/file.py:Name` (a dotted name after the colon is followed),
    or either inside `list[...]` for a list of them.

    The current directory is on the import path, as for `python -m`, so `mymod:Person` finds
    `./mymod.py`."""
    spec = spec.strip()
    if spec.startswith("list[") and spec.endswith("]"):
        return list[_load_type(spec[len("list[") : -1])]  # type: ignore[misc]
    if spec.startswith(("list[", "List[")) or spec.endswith("]"):
        raise UserError(
            f"--type: a list of a type is written list[MODULE:TYPE] (e.g. list[mymod:Person]), got {spec!r}"
        )
    module_part, _, attribute = spec.rpartition(":")
    if not module_part or not attribute:
        raise UserError(f"--type must look like MODULE:TYPE or FILE.py:TYPE, got {spec!r}")
    try:
        module = _import(module_part)
    except UserError:
        raise
    except ModuleNotFoundError as error:
        raise UserError(
            f"--type: cannot import {module_part!r} ({error}); run from the directory that holds it, "
            "or give FILE.py:TYPE"
        ) from error
    except Exception as error:
        raise UserError(f"--type: importing {module_part} failed: {type(error).__name__}: {error}") from error
    value: Any = module
    for name in attribute.split("."):
        if not hasattr(value, name):
            raise UserError(f"--type: {module_part} has no attribute {attribute!r}")
        value = getattr(value, name)
    return value


def _import(module_part: str) -> ModuleType:
    if not module_part.endswith(".py"):
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(module_part)
    path = Path(module_part)
    if not path.is_file():
        raise UserError(f"--type: no such file {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise UserError(f"--type: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _check_type(spec: str, output_type: Any) -> None:
    """Build the structured-output feature now, so an unusable type fails before any server starts."""
    from ..middleware.structured_output import StructuredOutput

    try:
        StructuredOutput(output_type)
    except UserError as error:
        reason, strict_advice, _ = str(error).partition(" Pass strict=False")  # the command has no such option
        advice = " Use a type whose keys are all named (a pydantic model, a dataclass)." if strict_advice else ""
        raise UserError(f"--type {spec}: {reason}{advice}") from error
