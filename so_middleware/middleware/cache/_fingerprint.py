"""Fingerprints for cache keys: what an output type validates, and what a function does.

A type is described by its pydantic core schema (every check, constraint and validator function
pydantic will run), with definition refs renumbered (pydantic's carry an `id()`) and the
JSON-schema-only `metadata` left out. A function is described by its code (not its line numbers),
defaults, closure values and the module-level values it reads; a class by its importable name.
What cannot be described stably (a class pickle cannot find by name, an object pickle refuses)
gets a token unique to this process and this object: such a key never matches another process's
key, and never another object's, so it can miss but never collide.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import inspect
import itertools
import pickle
import sys
import threading
import types
import uuid
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter

__all__ = ["describe_object", "type_fingerprint"]

_PROCESS = uuid.uuid4().hex
_COUNTER = itertools.count()
_TOKENS: dict[int, tuple[Callable[[], Any], str]] = {}  # id -> (a reference to the object, its token)
_LOCK = threading.Lock()
_FINGERPRINTS: dict[Any, tuple[Any, Any]] = {}  # type -> (the type; its fingerprint)
_MAX_FINGERPRINTS = 256
_USER_DATA = frozenset({"default", "expected", "members", "cls"})


def identity(value: Any) -> str:
    """A token for `value` unique in this process (and unlike any other process's)."""
    key = id(value)
    with _LOCK:
        entry = _TOKENS.get(key)
        if entry is not None and entry[0]() is value:
            return entry[1]
        try:  # the entry goes with the object, before its id can be reused
            ref: Callable[[], Any] = weakref.ref(value, lambda _: _TOKENS.pop(key, None))
        except TypeError:  # no weak references: kept alive, so its id is never reused
            ref = functools.partial(lambda kept: kept, value)
        token = f"{_PROCESS}:{next(_COUNTER)}"
        _TOKENS[key] = (ref, token)
        return token


def type_fingerprint(output_type: Any) -> Any:
    """JSON data that differs whenever validating against `output_type` could differ."""
    try:
        cached = _FINGERPRINTS.get(output_type)
    except TypeError:  # unhashable, so maybe changed since: described afresh
        return _fingerprint(output_type)
    if cached is not None:  # an equal type (`list[P]` spelt again) validates the same way
        return cached[1]
    fingerprint = _fingerprint(output_type)
    with _LOCK:
        if len(_FINGERPRINTS) >= _MAX_FINGERPRINTS:
            _FINGERPRINTS.pop(next(iter(_FINGERPRINTS)))
        _FINGERPRINTS[output_type] = (output_type, fingerprint)
    return fingerprint


def _fingerprint(output_type: Any) -> Any:
    try:
        core_schema = TypeAdapter(output_type).core_schema
    except Exception:  # not a type pydantic knows (a raw schema dict, a type only a layer below reads)
        return describe_object(output_type)
    return {"core_schema": _Describer().core(core_schema)}


def describe_object(value: Any) -> Any:
    """JSON data for `value` as far as it can be described stably; an identity token beyond."""
    return _Describer().walk(value)


class _Describer:
    """One walk: definition refs are numbered in the order they appear; functions seen once."""

    def __init__(self) -> None:
        self.refs: dict[str, str] = {}
        self.functions: set[int] = set()

    def walk(self, value: Any) -> Any:
        if isinstance(value, enum.Enum):  # before int and str: an IntEnum member is not the int
            return {"enum": self.walk(type(value)), "value": self.walk(value.value)}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (bytes, bytearray)):
            return {"sha256": hashlib.sha256(value).hexdigest()}
        if isinstance(value, Mapping):
            return {str(key): self.walk(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.walk(item) for item in value]
        if isinstance(value, (set, frozenset)):
            return sorted((self.walk(item) for item in value), key=repr)
        if isinstance(value, type):
            return self.cls(value)
        if isinstance(value, types.ModuleType):
            return {"module": value.__name__}
        if isinstance(value, types.CodeType):
            return self.code(value)
        if callable(value) and (inspect.isroutine(value) or isinstance(value, functools.partial)):
            return self.function(value)
        return self.pickled(value)

    def core(self, value: Any) -> Any:
        """A pydantic core schema: `metadata` (JSON schema hints) left out, refs numbered."""
        if isinstance(value, (list, tuple)):
            return [self.core(item) for item in value]
        if not isinstance(value, Mapping):
            return self.walk(value)
        described: dict[str, Any] = {}
        for key, item in value.items():
            if key == "metadata":
                continue
            if key in ("ref", "schema_ref") and isinstance(item, str) and "type" in value:
                described[key] = self.refs.setdefault(item, f"#{len(self.refs)}")  # "module.Name:<id()>"
            else:  # user data (defaults, literals, enum members) is walked as it is
                described[str(key)] = self.walk(item) if key in _USER_DATA else self.core(item)
        return described

    def cls(self, cls: type) -> Any:
        module, qualname = getattr(cls, "__module__", ""), getattr(cls, "__qualname__", "")
        found: Any = sys.modules.get(module)
        for part in qualname.split("."):
            found = getattr(found, part, None)
        if found is not cls:  # a local or redefined class: two of them may share a name
            return {"class": f"{module}.{qualname}", "identity": identity(cls)}
        hooks = {name: getattr(cls, name) for name in ("__post_init__", "model_post_init") if hasattr(cls, name)}
        return {"class": f"{module}.{qualname}", **{name: self.walk(hook) for name, hook in hooks.items()}}

    def function(self, function: Callable[..., Any]) -> Any:
        if isinstance(function, functools.partial):
            return {
                "partial": self.walk(function.func),
                "args": self.walk(function.args),
                "kw": self.walk(function.keywords),
            }
        bound = getattr(function, "__self__", None)
        if inspect.ismethod(function) or (bound is not None and not isinstance(bound, types.ModuleType)):
            return {
                "method": self.walk(getattr(function, "__func__", None) or function.__name__),
                "self": self.walk(bound),
            }
        name = f"{getattr(function, '__module__', None)}.{getattr(function, '__qualname__', repr(function))}"
        code = getattr(function, "__code__", None)
        if code is None or id(function) in self.functions:  # a builtin, or a function already described
            return {"function": name}
        self.functions.add(id(function))
        closure = [self.walk(_contents(cell)) for cell in getattr(function, "__closure__", None) or ()]
        defaults = [self.walk(function.__defaults__), self.walk(function.__kwdefaults__)]
        namespace = getattr(function, "__globals__", {})
        read = {name: self.read(namespace[name], function) for name in sorted(_names(code)) if name in namespace}
        return {"function": name, "code": self.code(code), "defaults": defaults, "closure": closure, "globals": read}

    def read(self, value: Any, reader: Callable[..., Any]) -> Any:
        """A global a function reads; functions of other modules (libraries) by their name only."""
        if inspect.isfunction(value) and value.__module__ != getattr(reader, "__module__", None):
            return {"function": f"{value.__module__}.{value.__qualname__}"}
        return self.walk(value)

    def code(self, code: types.CodeType) -> Any:
        parts = [code.co_code, code.co_names, code.co_flags, code.co_argcount, code.co_kwonlyargcount]
        table = getattr(code, "co_exceptiontable", b"")
        constants = [self.walk(constant) for constant in code.co_consts]
        text = repr(parts) + repr(table)
        return {"sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), "consts": constants}

    def pickled(self, value: Any) -> Any:
        try:
            data = pickle.dumps(value, protocol=5)
        except Exception:  # nothing stable to read: this object alone has this key
            return {"object": f"{type(value).__module__}.{type(value).__qualname__}", "identity": identity(value)}
        return {
            "object": f"{type(value).__module__}.{type(value).__qualname__}",
            "pickle": hashlib.sha256(data).hexdigest(),
        }


def _contents(cell: types.CellType) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not filled yet
        return None


def _names(code: types.CodeType) -> set[str]:
    """The global names `code` and the code nested in it may read."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names(constant)
    return names
