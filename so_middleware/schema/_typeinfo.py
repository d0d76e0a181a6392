"""Facts about a requested output type: its readable name, whether it is plain text, a cache key.

Nothing here builds schemas; it only looks at the Python type.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Hashable
from typing import Any

from pydantic import BaseModel
from typing_extensions import is_typeddict

from ..core import UserError

__all__ = [
    "cache_key",
    "check_satisfiable",
    "check_supported",
    "is_plain_text_type",
    "is_raw_schema",
    "readable_name",
    "sanitize_wire_name",
]

_SETS = (set, frozenset, collections.abc.Set, collections.abc.MutableSet)
# Containers pydantic validates into mutable, unhashable values.
_UNHASHABLE = (
    list,
    dict,
    set,
    bytearray,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Mapping,
    collections.abc.MutableMapping,
    collections.abc.MutableSet,
)
# Values that JSON cannot carry, or that pydantic validates into one-shot iterators: no answer
# makes a usable value of these (`type[int]` would fail every attempt, and be re-asked).
_NOT_FROM_JSON = {
    type: "a class",
    collections.abc.Callable: "a callable",
    collections.abc.Iterator: "a one-shot iterator",
    collections.abc.Iterable: "a one-shot iterator",
    collections.abc.Generator: "a generator",
    collections.abc.AsyncIterator: "an async iterator",
    collections.abc.AsyncIterable: "an async iterator",
    collections.abc.AsyncGenerator: "an async generator",
    collections.abc.Awaitable: "an awaitable",
    collections.abc.Coroutine: "a coroutine",
}
_MAX_TYPE_NODES = 10_000
_WIRE_NAME_INVALID = re.compile(r"[^a-zA-Z0-9_-]+")
_WIRE_NAME_MAX = 64


def is_raw_schema(output_type: Any) -> bool:
    """A raw JSON-schema dict, for types known only at run time."""
    return isinstance(output_type, dict)


def is_plain_text_type(output_type: Any) -> bool:
    """`str` and `None` ask for plain text, not JSON."""
    return output_type is None or output_type is str or output_type is type(None)


def check_supported(output_type: Any) -> None:
    """Reject what no JSON schema can describe, before pydantic gives a vaguer error."""
    if output_type is object or output_type is Any:
        raise UserError(
            f"Output type {readable_name(output_type)!r} is not supported: it accepts any value, "
            "so there is no schema to ask a model for. Use a concrete type."
        )
    if isinstance(output_type, typing.TypeVar) and output_type.__bound__ is None and not output_type.__constraints__:
        raise UserError(
            f"Output type {output_type.__name__!r} is a bare TypeVar: it accepts any value, so there is no "
            "schema to ask a model for. Pass the concrete type (e.g. Box[int], not Box[T])."
        )
    if isinstance(output_type, str | typing.ForwardRef):
        raise UserError(f"Output type {output_type!r} is a forward reference; pass the type itself, not its name.")
    if inspect.isfunction(output_type) or inspect.ismethod(output_type) or inspect.isbuiltin(output_type):
        raise UserError(
            f"Output type {readable_name(output_type)!r} is a function, not a type. "
            "Pass a type such as a pydantic model, a dataclass or list[int]."
        )
    if not (
        isinstance(output_type, type)
        or typing.get_origin(output_type) is not None
        or isinstance(output_type, typing.TypeVar | types.UnionType)
        or type(output_type).__module__ in {"typing", "typing_extensions"}
    ):
        raise UserError(f"Output type {output_type!r} is not a type (got an instance of {type(output_type).__name__}).")


def _is_hashable(item: Any) -> bool:
    """Whether the values pydantic makes for `item` can go in a set."""
    origin = typing.get_origin(item)
    args = typing.get_args(item)
    if origin is typing.Annotated:
        return _is_hashable(args[0])
    if origin is typing.Union or origin is types.UnionType:
        return any(_is_hashable(arg) for arg in args)
    if origin is tuple:
        return all(_is_hashable(arg) for arg in args if arg is not Ellipsis)
    shape = origin if origin is not None else item
    if shape in _UNHASHABLE or is_typeddict(shape):
        return False
    return not (isinstance(shape, type) and getattr(shape, "__hash__", None) is None)


def _inner_types(item: Any, path: str) -> list[tuple[Any, str]]:
    """The types inside `item`, each with the field path it sits at."""

    def at(name: str) -> str:
        return f"{path}.{name}" if path else name

    if isinstance(item, type) and issubclass(item, BaseModel):
        return [(info.annotation, at(name)) for name, info in item.model_fields.items()]
    if isinstance(item, type) and (dataclasses.is_dataclass(item) or is_typeddict(item)):
        try:
            return [(hint, at(name)) for name, hint in typing.get_type_hints(item).items()]
        except Exception:
            return []
    args = [arg for arg in typing.get_args(item) if arg is not Ellipsis and not isinstance(arg, str | int | bytes)]
    return [(arg, path) for arg in args]


def check_satisfiable(output_type: Any) -> None:
    """Refuse a type no JSON answer can satisfy: a set whose items cannot be hashed (`set[list[int]]`),
    a class, a callable or an iterator (`type[int]`, `Callable[[], int]`, `Iterator[int]`)."""
    stack: list[tuple[Any, str]] = [(output_type, "")]
    seen: set[int] = set()
    while stack and len(seen) < _MAX_TYPE_NODES:
        item, path = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        _check_from_json(output_type, item, path)
        if typing.get_origin(item) in _SETS and typing.get_args(item) and not _is_hashable(typing.get_args(item)[0]):
            where = f"field {path!r} is" if path else "it is"
            raise UserError(
                f"Output type {readable_name(output_type)!r} can never be satisfied: {where} "
                f"{readable_name(item)}, whose {readable_name(typing.get_args(item)[0])} items are not hashable, "
                "so no answer can become the set. Use a list, or a frozen (hashable) item type."
            )
        stack.extend(_inner_types(item, path))


def _check_from_json(output_type: Any, item: Any, path: str) -> None:
    shape = typing.get_origin(item) or item  # typing.Type[int] and type[int] alike: `type`
    if not isinstance(shape, typing.Hashable) or shape not in _NOT_FROM_JSON:
        return
    where = f"field {path!r} is" if path else "it is"
    raise UserError(
        f"Output type {readable_name(output_type)!r} cannot come from a model's answer: {where} "
        f"{readable_name(item)}, {_NOT_FROM_JSON[shape]}, which no JSON value becomes. "
        "Use a JSON-shaped type (a model, a dataclass, list[...], a str naming the class)."
    )


def cache_key(output_type: Any) -> Hashable:
    """A key under which compiled schemas for this type can be cached.

    Most types hash; raw schema dicts are keyed by their canonical JSON, and any other unhashable
    type by identity (the cache keeps the type alive, so the id cannot be reused meanwhile).
    """
    if is_raw_schema(output_type):
        try:
            return ("raw", json.dumps(output_type, sort_keys=True, default=repr))
        except (TypeError, ValueError, RecursionError):
            return ("id", id(output_type))
    try:
        hash(output_type)
    except TypeError:
        return ("id", id(output_type))
    return ("type", output_type)


def readable_name(output_type: Any) -> str:
    """`int`, `list[int]`, `dict[str, int]`, `Person`, `int | None`, `Literal['a', 'b']`.

    Example: `readable_name(dict[str, list[int]]) == "dict[str, list[int]]"`.
    """
    if output_type is None or output_type is type(None):
        return "None"
    if is_raw_schema(output_type):
        title = output_type.get("title")
        return title if isinstance(title, str) and title else "json_schema"
    if output_type is Ellipsis:
        return "..."
    origin = typing.get_origin(output_type)
    args = typing.get_args(output_type)
    if origin is typing.Annotated:
        return readable_name(args[0])
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(arg) for arg in args) + "]"
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(readable_name(arg) for arg in args)
    if origin is not None:
        base = getattr(origin, "__name__", None) or str(origin).replace("typing.", "")
        if not args:
            return str(base)
        if args == ((),):
            return f"{base}[()]"
        return f"{base}[" + ", ".join(readable_name(arg) for arg in args) + "]"
    if isinstance(output_type, type):
        return output_type.__name__
    if isinstance(output_type, typing.TypeVar):
        return output_type.__name__
    return str(output_type).replace("typing.", "")


def sanitize_wire_name(name: str) -> str:
    """Fit a schema name to `^[a-zA-Z0-9_-]{1,64}$`, the rule providers enforce.

    Example: `sanitize_wire_name("list[Box[int]]") == "list_Box_int"`.
    """
    cleaned = _WIRE_NAME_INVALID.sub("_", name).strip("_")
    return cleaned[:_WIRE_NAME_MAX].rstrip("_") or "response"
