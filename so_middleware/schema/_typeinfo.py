"""Facts about a requested output type: its readable name, whether it is plain text, a cache key.

Nothing here builds schemas; it only looks at the Python type.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Hashable
from typing import Any

from ..core import UserError

__all__ = [
    "cache_key",
    "check_supported",
    "is_plain_text_type",
    "is_raw_schema",
    "readable_name",
    "sanitize_wire_name",
]

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
