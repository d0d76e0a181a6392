"""Whether an SDK's function is still its own: a plain function defined in the SDK's package, not a
wrapper put on it (by an instrumentation such as OpenTelemetry's or Sentry's, or a test double).
Adapters that skip part of an SDK's work do so only while the SDK's own function would have run,
so a wrapper keeps seeing every call."""

from __future__ import annotations

import contextlib
import os
import types
from typing import Any

__all__ = ["is_packages_own", "owns_attribute", "package_dir"]

_CONTEXTLIB_FILE = contextlib.asynccontextmanager.__code__.co_filename  # where its decorated functions live
_ABSENT: Any = object()


def package_dir(module: types.ModuleType) -> str:
    """The folder of a package's `__init__` module, with a trailing separator."""
    return os.path.dirname(os.path.abspath(str(module.__file__))) + os.sep


def is_packages_own(function: Any, package: str) -> bool:
    """A plain function defined in the folder `package`, or made of one by `contextlib`'s
    decorators (`type`, not `isinstance`: a wrapt proxy passes for the function it wraps)."""
    if type(function) is not types.FunctionType:
        return False
    if function.__code__.co_filename == _CONTEXTLIB_FILE:
        function = getattr(function, "__wrapped__", None)
        if type(function) is not types.FunctionType:
            return False
    return function.__code__.co_filename.startswith(package)


def owns_attribute(target: Any, name: str, package: str) -> bool:
    """Whether `target.<name>` is the package's own function, looked up as `inspect.getattr_static`
    does (a patch on the object, then its classes), without that function's cost on every call."""
    found = getattr(target, "__dict__", {}).get(name, _ABSENT)
    if found is _ABSENT:
        found = next((klass.__dict__[name] for klass in type(target).__mro__ if name in klass.__dict__), None)
    return is_packages_own(found, package)
