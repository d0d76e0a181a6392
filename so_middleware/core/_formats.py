"""The response format: one neutral value, rendered for each wire protocol.

A `ResponseFormat` is what a caller (or the structured-output layer) asks for. Each adapter renders
it with one of the `to_*` methods; `responses_format_to_chat` and `chat_format_to_responses`
translate the two OpenAI spellings into each other (the adapters and the gateway alike: one table,
`_nested` and `_flat`). Name, strict, description and schema are carried unchanged, never
re-interpreted; an unknown `type` is forwarded as given (read into a `ResponseFormat`, with a warning).

| neutral                | Chat Completions `response_format`                         | Responses `text.format`                    | Anthropic `output_config.format` |
|------------------------|-------------------------------------------------------------|--------------------------------------------|----------------------------------|
| `text`                 | nothing sent                                                | nothing sent                               | nothing sent                     |
| `json_object`          | `{"type": "json_object"}`                                   | `{"type": "json_object"}`                  | not supported: `None`            |
| `json_schema`          | `{"type": "json_schema", "json_schema": {name, schema, strict, description}}` | `{"type": "json_schema", name, schema, strict, description}` | `{"type": "json_schema", "schema": ...}` |
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._exceptions import UserError

__all__ = ["ResponseFormat", "chat_format_to_responses", "responses_format_to_chat"]

_KNOWN_TYPES = ("text", "json_object", "json_schema")


@dataclass(frozen=True)
class ResponseFormat:
    """A provider-neutral response format.

    Example:
        ResponseFormat.json_schema({"type": "object", ...}, name="Person", strict=True)
        ResponseFormat.from_wire({"type": "json_object"})
    """

    type: str = "text"
    name: str | None = None
    schema: Mapping[str, Any] | None = None
    strict: bool | None = None
    description: str | None = None
    # The caller's original dict, for unknown types that are forwarded unchanged.
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name, kind in (("name", str), ("description", str), ("strict", bool)):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise UserError(f"the response format's {name} must be a {kind.__name__}, not {value!r:.40}")

    @classmethod
    def text(cls) -> ResponseFormat:
        """Free text: no format is sent."""
        return cls("text")

    @classmethod
    def json_object(cls) -> ResponseFormat:
        """Any JSON object (JSON mode)."""
        return cls("json_object")

    @classmethod
    def json_schema(
        cls,
        schema: Mapping[str, Any],
        *,
        name: str = "response",
        strict: bool | None = None,
        description: str | None = None,
    ) -> ResponseFormat:
        """JSON that follows `schema`."""
        if not isinstance(schema, Mapping):
            raise UserError(f"a json_schema response format needs a schema dict, not {type(schema).__name__}")
        return cls("json_schema", name=name, schema=schema, strict=strict, description=description)

    @property
    def is_text(self) -> bool:
        """True when nothing needs to be sent."""
        return self.type == "text"

    # ------------------------------------------------------------ reading wire shapes

    @classmethod
    def from_wire(cls, value: ResponseFormat | Mapping[str, Any] | None) -> ResponseFormat | None:
        """Read a Chat Completions `response_format` or a Responses `text.format` dict.

        The two differ only for json_schema: nested under `json_schema` (Chat Completions) or flat
        (Responses). Both are accepted.
        """
        if value is None or isinstance(value, ResponseFormat):
            return value
        if not isinstance(value, Mapping):
            raise UserError(f"response_format must be a dict or a ResponseFormat, not {type(value).__name__}")
        kind = value.get("type")
        if not isinstance(kind, str):
            raise UserError(f"response_format needs a string 'type', got {value!r:.200}")
        if kind not in _KNOWN_TYPES:
            warnings.warn(f"unknown response format type {kind!r} is forwarded unchanged", UserWarning, stacklevel=3)
            return cls(kind, raw=value)
        if kind != "json_schema":
            return cls(kind)
        body = _flat(value, "response_format")  # either spelling
        if not isinstance(body.get("schema"), Mapping):
            raise UserError("a json_schema response format needs a 'schema' object")
        return cls(
            "json_schema",
            name=body.get("name"),
            schema=body["schema"],
            strict=body.get("strict"),
            description=body.get("description"),
        )

    # ------------------------------------------------------------ rendering

    def to_chat_completions(self) -> dict[str, Any] | None:
        """Chat Completions `response_format` (None: send nothing): `to_responses()` in the Chat
        Completions spelling. A format given as a dict (`raw`) is sent as given."""
        flat = self.to_responses()
        return flat if flat is None or self.raw is not None else _nested(flat)

    def to_responses(self) -> dict[str, Any] | None:
        """Responses API `text.format` (flat; None: send nothing)."""
        if self.raw is not None:
            return dict(self.raw)
        if self.type == "text":
            return None
        if self.type == "json_object":
            return {"type": "json_object"}
        return {"type": "json_schema", **self._schema_fields()}

    def to_anthropic(self) -> dict[str, Any] | None:
        """Anthropic `output_config.format` (None: send nothing, or not expressible there)."""
        if self.raw is not None:
            return dict(self.raw)
        if self.type != "json_schema" or self.schema is None:
            return None
        return {"type": "json_schema", "schema": copy_json(dict(self.schema))}

    def _schema_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"name": self.name or "response", "schema": copy_json(dict(self.schema or {}))}
        if self.strict is not None:
            fields["strict"] = self.strict
        if self.description is not None:
            fields["description"] = self.description
        return fields


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists, tuples of scalars); several times faster than
    `copy.deepcopy`, which a schema is copied with on every call."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(copy_json(item) for item in value)
    return value


def responses_format_to_chat(text_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Translate a Responses `text.format` into a Chat Completions `response_format`, as is.

    The one spelling difference is a json_schema's fields, nested under `json_schema`; every key,
    unknown ones included, keeps its value (a copy, the caller's own) and its order, and an unknown
    type is forwarded unchanged. `text` or no format gives None (send nothing); a format without a
    string `type` is a `UserError`. Example:
        responses_format_to_chat({"type": "json_schema", "name": "p", "schema": s, "strict": True})
        == {"type": "json_schema", "json_schema": {"name": "p", "schema": s, "strict": True}}
    """
    if text_format is None or _kind(text_format, "text.format") == "text":
        return None
    return _nested(copy_json(dict(text_format)))


def chat_format_to_responses(response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Translate a Chat Completions `response_format` into a Responses `text.format` (the inverse:
    a json_schema's fields lifted out of `json_schema`, every key and its order kept)."""
    if response_format is None or _kind(response_format, "response_format") == "text":
        return None
    return _flat(copy_json(dict(response_format)), "response_format")


def _kind(value: Any, where: str) -> str:
    """A wire format's `type`; a value that is no dict with a string type is a `UserError`."""
    kind = value.get("type") if isinstance(value, Mapping) else None
    if not isinstance(kind, str):
        raise UserError(f"{where}.type must be a string ({where} an object), got {value!r:.200}")
    return kind


# The two OpenAI spellings of a format: a json_schema's fields flat beside `type` (Responses) or
# nested under `json_schema` (Chat Completions); every other type is spelled the same in both.


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The Chat Completions spelling of a Responses format (its values not copied)."""
    if flat.get("type") != "json_schema":
        return dict(flat)
    return {"type": "json_schema", "json_schema": {key: value for key, value in flat.items() if key != "type"}}


def _flat(nested: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The Responses spelling of a Chat Completions format (one already flat is kept as it is)."""
    if nested.get("type") != "json_schema" or "json_schema" not in nested:
        return dict(nested)
    fields = nested["json_schema"]
    if not isinstance(fields, Mapping):
        raise UserError(f"{where}.json_schema must be an object, got {fields!r:.200}")
    flat: dict[str, Any] = {}
    for key, value in nested.items():
        flat.update(fields if key == "json_schema" else {key: value})
    return flat
