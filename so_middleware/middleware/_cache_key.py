"""The default cache key: a SHA-256 of a canonical JSON description of a request."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from enum import Enum
from typing import Any

from ..core import ChatOptions, MessageInput, OptionsInput, as_messages
from ..schema import OutputSchema

__all__ = ["digest", "request_key"]


def request_key(messages: MessageInput, options: OptionsInput = None, output_type: Any = None) -> str:
    """The SHA-256 of a canonical JSON of a request (the default `key=`); see `so_middleware.middleware.cache`.

    Example: `request_key("Hi", {"temperature": 0}) == request_key(["Hi"], ChatOptions(temperature=0))`.
    """
    request = {
        "messages": _describe(as_messages(messages)),
        "options": _describe(ChatOptions.coerce(options)),
        "output_type": None if output_type is None else _describe_type(output_type),
    }
    return digest(request)


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _describe(value: Any, depth: int = 0) -> Any:
    """Plain JSON data for `value`; objects give their class, plain attributes and output schema."""
    if isinstance(value, Enum):
        return _describe(value.value, depth)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if depth > 20:
        return _name(type(value))
    if isinstance(value, Mapping):
        return {str(k): _describe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_describe(item, depth + 1) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_describe(item, depth + 1) for item in value), key=digest)
    if isinstance(value, type):
        return _name(value)
    if dataclasses.is_dataclass(value):
        fields = (f.name for f in dataclasses.fields(value) if f.name != "raw_representation")
        return {"__type__": _name(type(value)), **{f: _describe(getattr(value, f), depth + 1) for f in fields}}
    described: dict[str, Any] = {"__type__": _name(type(value))}
    schema = getattr(value, "output_schema", None)
    if isinstance(schema, OutputSchema):
        described["output_schema"] = _schema_of(schema)
    for name, attribute in sorted(getattr(value, "__dict__", {}).items()):
        if not name.startswith("_") and attribute is not None and _is_plain(attribute):
            described[name] = _describe(attribute, depth + 1)
    return described


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, Enum)):
        return True
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value)


def _describe_type(output_type: Any) -> Any:
    try:
        return _schema_of(OutputSchema(output_type, strict=False))
    except Exception:  # a type only the layer below understands: its name still keys it
        return repr(output_type)


def _schema_of(schema: OutputSchema) -> Any:
    try:
        return {"name": schema.name(), "schema": schema.json_schema("json-schema")}
    except Exception:
        return repr(schema.output_type)


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
