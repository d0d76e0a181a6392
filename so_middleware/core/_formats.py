"""The response format: one neutral value; each protocol's module in `wire/` writes it.

A `ResponseFormat` is what a caller (or the structured-output layer) asks for. It is read from
either OpenAI spelling (`from_wire`) and carries name, strict, description and schema unchanged;
an unknown `type` is kept as given (`raw`, with a warning). How each protocol spells it is the
wire's business: `wire.chat.response_format_to_wire`, `wire.responses.text_format_to_wire`,
`wire.messages.output_format_to_wire`.

`raw` is a format in the Responses spelling (a json_schema's fields flat beside `type`), forwarded
as is: each protocol writes it in its own spelling, never another protocol's.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._exceptions import UserError

__all__ = ["ResponseFormat", "copy_json", "flat_format"]

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
    # A format forwarded unchanged, in the Responses spelling (flat): an unknown type as the
    # caller gave it, or a gateway client's `text.format`.
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
        if type(schema) is not dict and not isinstance(schema, Mapping):  # a dict: no ABC check
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
        body = flat_format(value, "response_format")  # either spelling
        if not isinstance(body.get("schema"), Mapping):
            raise UserError("a json_schema response format needs a 'schema' object")
        return cls(
            "json_schema",
            name=body.get("name"),
            schema=body["schema"],
            strict=body.get("strict"),
            description=body.get("description"),
        )


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists, tuples of scalars); several times faster than
    `copy.deepcopy`, which a schema is copied with on every call."""
    # a scalar is kept without a call of its own (most of a schema's values are strings), and loops
    # make no comprehension frame per container: schemas are mostly small dicts
    if isinstance(value, dict):
        copied = {}
        for key, item in value.items():
            copied[key] = item if type(item) in _JSON_SCALARS else copy_json(item)
        return copied
    if isinstance(value, (list, tuple)):
        items = []
        for item in value:
            items.append(item if type(item) in _JSON_SCALARS else copy_json(item))
        return items if type(value) is list else type(value)(items)
    return value


_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))


def flat_format(nested: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A format in either OpenAI spelling, flat (a Chat Completions json_schema's fields lifted out
    of `json_schema`; one already flat is kept as it is)."""
    if nested.get("type") != "json_schema" or "json_schema" not in nested:
        return dict(nested)
    fields = nested["json_schema"]
    if not isinstance(fields, Mapping):
        raise UserError(f"{where}.json_schema must be an object, got {fields!r:.200}")
    flat: dict[str, Any] = {}
    for key, value in nested.items():
        flat.update(fields if key == "json_schema" else {key: value})
    return flat
