"""What every protocol's wire shares: a body as JSON bytes, the model a call goes to, data as a data
URI, a function tool's fields, a forced tool choice, the warning for a format a server will not
enforce."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ..core import (
    Capabilities,
    ChatOptions,
    DataContent,
    ForcedTool,
    FunctionTool,
    ResponseFormat,
    UserError,
    copy_json,
    warn_at_callers_line,
)

__all__ = [
    "JSONView",
    "WireError",
    "chosen_model",
    "data_uri",
    "dumps",
    "field_of",
    "flat_format_to_wire",
    "function_fields",
    "loads",
    "tool_choice_to_wire",
    "tools_to_wire",
    "view_of",
    "warn_if_not_enforced",
]


def _orjson_dumps() -> Callable[[Any], bytes] | None:
    """orjson's `dumps`, several times cheaper on a request or response body, where it is installed
    (the gateway's extra has it)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - exercised where orjson is not installed
        return None
    return orjson.dumps


_fast_dumps = _orjson_dumps()


def _orjson_loads() -> tuple[Callable[[bytes], Any], type[Exception]] | None:
    """orjson's `loads` and its error, where it is installed."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - exercised where orjson is not installed
        return None
    return orjson.loads, orjson.JSONDecodeError


_fast_loads = _orjson_loads()


def _standard_dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def dumps(value: Any) -> bytes:
    """`value` as compact JSON bytes: orjson where installed; what it refuses (a lone surrogate, an
    int past 64 bits) the standard library writes, escaped.

    Example:
        body = dumps({"model": "m", "messages": []})  # b'{"model":"m","messages":[]}'
    """
    if _fast_dumps is None:
        return _standard_dumps(value)
    try:
        return _fast_dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _standard_dumps(value)


def loads(data: bytes) -> Any:
    """The JSON value of `data` (UTF-8 bytes) as `json.loads` reads it: orjson where installed; what
    it refuses or would change (NaN, an integer past 64 bits, a lone surrogate, bytes that are not UTF-8) the
    standard library reads, the bytes decoded with replacement characters.

    Example:
        loads(b'{"done": true}')  # {'done': True}
    """
    if _fast_loads is not None and _LONG_RUN not in data.translate(_DIGIT_MAP):
        try:
            return _fast_loads[0](data)
        except _fast_loads[1]:
            pass
    return _standard_loads(data.decode("utf-8", "replace"))


_standard_loads = json.JSONDecoder().decode  # `json.loads` without its type checks and encoding sniffing
# orjson reads an integer past 64 bits as a float: a text with a run of 19 digits (maybe such a
# number) goes to the standard library, which keeps it exact. Digits mapped to "1", all else to " ",
# then a substring search: one pass in C, where a regex search took longer than the parse.
_DIGIT_MAP = bytes(49 if 48 <= code <= 57 else 32 for code in range(256))
_LONG_RUN = b"1" * 19


class WireError(UserError):
    """A request field a server cannot read; `param` names it (`tools[0].type`)."""

    def __init__(self, message: str, param: str | None) -> None:
        super().__init__(message)
        self.param = param


def field_of(body: Mapping[str, Any], name: str, kinds: type | tuple[type, ...]) -> Any:
    """`body[name]`, None when absent or null; a value not of `kinds` is a `WireError` naming the
    field (a bool is no number here, as in JSON)."""
    value = body.get(name)
    if value is None:
        return None
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise WireError(f"{name} must be of type {expected}, got {type(value).__name__}", name)
    return value


def chosen_model(options: ChatOptions, model: str | None) -> str:
    """The call's model (the options' over the adapter's); none at all is a `UserError` before any request."""
    chosen = options.model or model
    if not chosen:
        raise UserError("no model given: pass model=... to the adapter or options={'model': ...}")
    return chosen


def data_uri(content: DataContent) -> str:
    """`data:<media type>;base64,<data>`."""
    raw = content.data.encode() if isinstance(content.data, str) else content.data
    return f"data:{content.media_type};base64,{base64.b64encode(raw).decode()}"


def function_fields(tool: FunctionTool, *, parameters: str = "parameters") -> dict[str, Any]:
    """A function tool's `name`, its schema under `parameters` (the protocol's key for it), and its
    `description` and `strict` where set."""
    fields: dict[str, Any] = {"name": tool.name, parameters: dict(tool.parameters)}
    if tool.description:
        fields["description"] = tool.description
    if tool.strict is not None:
        fields["strict"] = tool.strict
    return fields


def flat_format_to_wire(fmt: ResponseFormat) -> dict[str, Any] | None:
    """`fmt` in the OpenAI Responses spelling, a json_schema's fields flat beside `type` (None: send
    nothing). Name (`response` when unset), a copy of the schema, strict and description where set;
    a format forwarded as is (`raw`) is a copy of it. The Chat Completions spelling nests this."""
    if fmt.raw is not None:
        forwarded: dict[str, Any] = copy_json(dict(fmt.raw))
        return forwarded
    if fmt.type == "text":
        return None
    if fmt.type == "json_object":
        return {"type": "json_object"}
    fields: dict[str, Any] = {"name": fmt.name or "response", "schema": copy_json(dict(fmt.schema or {}))}
    if fmt.strict is not None:
        fields["strict"] = fmt.strict
    if fmt.description is not None:
        fields["description"] = fmt.description
    return {"type": fmt.type, **fields}


def tools_to_wire(
    tools: Sequence[FunctionTool | Mapping[str, Any]], shape: Callable[[FunctionTool], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each tool in the protocol's `shape`; a tool given as a dict is the caller's wire form, sent as is."""
    return [dict(tool) if isinstance(tool, Mapping) else shape(tool) for tool in tools]


def tool_choice_to_wire(choice: str | ForcedTool, forced: Callable[[str], dict[str, Any]]) -> Any:
    """A forced tool in the protocol's `forced` shape; `auto`/`none`/`required` as they are."""
    return forced(choice.name) if isinstance(choice, ForcedTool) else choice


def warn_if_not_enforced(
    options: ChatOptions,
    capabilities: Capabilities,
    protocol: str,
    forms: Collection[str] = ("json_object", "json_schema"),
) -> None:
    """Warn when the call's response format will not be enforced, so the answer may not follow it:
    a type `protocol` has no form for (not in `forms`) is not sent; a sent one the server does not
    enforce (`capabilities.native_json_schema` for json_schema, `.json_object` for json_object) may be
    ignored. Text, no format, and a format given as a dict (forwarded as is) say nothing. Called
    from an adapter's request building.

    Example: the Anthropic adapter, `warn_if_not_enforced(options, capabilities, "Anthropic", ("json_schema",))`.
    """
    fmt = options.response_format
    if fmt is None or fmt.is_text or fmt.raw is not None:
        return
    if fmt.type not in forms:
        reason = f"has no {protocol} form and is not sent"
    elif capabilities.native_json_schema if fmt.type == "json_schema" else capabilities.json_object:
        return
    else:
        reason = f"is not enforced by {capabilities.name!r} on the {protocol} route"
    warn_at_callers_line(
        f"the {fmt.type} response format {reason}: the answer may not follow it; validate it (with_structured_output does)"
    )


class JSONView:
    """A JSON object read by attribute: `view.delta.content`; a missing key reads as None,
    nested objects are views, lists of objects lists of views. `view.model_extra` is the whole
    object (where the SDK keeps fields it does not know)."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends look these up
            raise AttributeError(name)
        if name == "model_extra":
            return self._data
        return view_of(self._data.get(name))

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JSONView) and other._data == self._data

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """The event's JSON object (not a copy)."""
        return self._data

    def __repr__(self) -> str:
        return f"JSONView({self._data!r})"


def view_of(value: Any) -> Any:
    if isinstance(value, dict):
        return JSONView(value)
    if isinstance(value, list):
        return [JSONView(item) if isinstance(item, dict) else item for item in value]
    return value
