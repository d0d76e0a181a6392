"""Parsing the package's own source, for the tests that read it."""

from __future__ import annotations

import ast
import gc


def parse(source: str) -> ast.Module:
    """`ast.parse` with the garbage collector paused.

    CPython 3.11 counts the AST conversion's depth once per interpreter. A finalizer that runs in the
    middle of a conversion (a collection triggered by its allocations) and parses something itself
    leaves the count off, and the outer call fails with "AST constructor recursion depth mismatch".
    With no collection during the call, no other Python code runs inside it.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        if paused:
            gc.enable()
