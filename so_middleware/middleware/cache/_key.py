"""The default cache key: a SHA-256 of a canonical JSON description of a request.

Nothing is cut: a request too deep to describe (Python's recursion limit) has no key, and is not
cached, rather than share a key with another request. Types key by what they validate
(`_fingerprint`), not by their name or JSON schema alone.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any

from ...core import ChatOptions, Feature, MessageInput, OptionsInput, as_messages
from ...schema import OutputSchema
from ._fingerprint import describe_object, type_fingerprint

__all__ = ["digest", "request_key"]


def request_key(messages: MessageInput, options: OptionsInput = None, output_type: Any = None) -> str | None:
    """The SHA-256 of a canonical JSON of a request (the default `key=`); see `so_middleware.middleware.cache`.

    None when the request nests too deeply to be described whole: such a call is not cached.

    Example: `request_key("Hi", {"temperature": 0}) == request_key(["Hi"], ChatOptions(temperature=0))`.
    """
    try:
        request = {
            "messages": _describe(as_messages(messages)),
            "options": _describe(ChatOptions.coerce(options)),
            "output_type": None if output_type is None else _describe_type(output_type),
        }
        return digest(request)
    except RecursionError:
        return None


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _describe(value: Any) -> Any:
    """Plain JSON data for `value`; a feature gives its class, plain attributes and output schema."""
    if isinstance(value, Enum):
        return _describe(value.value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if isinstance(value, Mapping):
        return {str(k): _describe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_describe(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_describe(item) for item in value), key=digest)
    if _is_type(value):
        return {"validates": type_fingerprint(value)}
    if dataclasses.is_dataclass(value):
        fields = (f.name for f in dataclasses.fields(value) if f.name != "raw_representation")
        return {"__type__": _name(type(value)), **{f: _describe(getattr(value, f)) for f in fields}}
    if not isinstance(value, Feature):  # an object we know nothing of: by its pickle, or by identity
        return describe_object(value)
    # A feature: its settings, never what it carries back (`feature.response`)
    described: dict[str, Any] = {"__type__": _name(type(value))}
    schema = getattr(value, "output_schema", None)
    if isinstance(schema, OutputSchema):
        described["output_schema"] = _schema_of(schema)
    attributes = dict(getattr(value, "__dict__", {}))
    for group in [a for a in attributes.values() if dataclasses.is_dataclass(a) and not isinstance(a, type)]:
        attributes.update(dataclasses.asdict(group))  # settings held together key as their fields (same keys as before)
    for name, attribute in sorted(attributes.items()):
        if not name.startswith("_") and attribute is not None and (_is_plain(attribute) or _is_type(attribute)):
            described[name] = _describe(attribute)
    return described


def _is_type(value: Any) -> bool:
    return isinstance(value, type) or typing.get_origin(value) is not None


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str, Enum)):
        return True
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value)


def _describe_type(output_type: Any) -> Any:
    try:
        return _schema_of(OutputSchema(output_type, strict=False))
    except Exception:  # a type only the layer below understands: what it is still keys it
        return {"validates": type_fingerprint(output_type)}


def _schema_of(schema: OutputSchema) -> Any:
    """The schema sent and everything that validates the answer (validators, constraints, classes)."""
    try:
        sent: Any = {"name": schema.name(), "schema": schema.json_schema("json-schema")}
    except Exception:
        sent = None  # plain text: no schema is sent
    return {"sent": sent, "validates": type_fingerprint(schema.output_type)}


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
