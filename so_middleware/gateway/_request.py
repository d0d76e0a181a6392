"""Reading a Responses API request: the body checked field by field, then translated into the
library's own types (`ChatMessage`, `ChatOptions`) for the Chat Completions adapter.

`text.format` is forwarded as is (seed 004 FR-001…FR-007): the Chat Completions `response_format`
is the same dict with a json_schema's fields nested under `json_schema` (the one spelling
difference); every key, unknown ones included, keeps its value and its order, and an unknown
`type` goes through untouched. `text` or no format sends nothing.

Fields the Responses API has and Chat Completions lacks are used by the gateway itself (`store`,
`background`, `previous_response_id`, `metadata`, ...). Fields the Responses API does not know
are forwarded into the backend's request body unchanged (the passthrough philosophy): vLLM's
`top_k` or llama.cpp's `min_p` reach the backend; a client's `client_metadata` (about itself) does not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from so_middleware import ChatOptions, ResponseFormat

from ..core import describe_surrogate, lone_surrogate_at
from ..wire.responses import WireError, text_format_to_chat, tool_choice_from_wire, tool_from_wire
from ..wire.responses_items import item_to_message
from ._compaction._window import expanded
from ._errors import BadRequest

__all__ = ["MAX_DEPTH", "GatewayRequest", "input_items", "is_reference", "parse_request", "read_json"]

MAX_DEPTH = 64  # levels of nesting in a request body (a JSON schema's are far fewer)

# Responses fields that shape the gateway's behaviour or are echoed; never sent on as they are.
_GATEWAY_FIELDS = {
    "model", "input", "instructions", "tools", "tool_choice", "temperature", "top_p", "max_output_tokens",
    "parallel_tool_calls", "metadata", "user", "reasoning", "text", "stream", "store", "background",
    "previous_response_id", "include", "truncation", "service_tier", "stream_options", "prompt_cache_key",
    "safety_identifier", "top_logprobs", "max_tool_calls", "conversation", "prompt",
    # What a client says about itself, not to the model: Codex CLI's installation, session and thread
    # ids. Like `metadata`, it stays at the gateway; a backend may be a third party's. (`user` is the
    # API's field for the provider, and goes on.)
    "client_metadata",
}  # fmt: skip


@dataclass
class GatewayRequest:
    """A checked Responses request: the input items, the chat translation and the gateway's own flags."""

    body: dict[str, Any]
    model: str
    input_items: list[dict[str, Any]]
    options: ChatOptions
    text: dict[str, Any] = field(default_factory=dict)
    stream: bool = False
    store: bool = True
    background: bool = False
    previous_response_id: str | None = None


def read_json(raw: bytes) -> Any:
    """The decoded body. A 400, before any backend call: malformed JSON, `NaN`/`Infinity`, a number
    past a double (`1e999`), nesting deeper than `MAX_DEPTH`, and lone surrogates (`"\\ud83d"`: no
    UTF-8 spelling). Each is a value neither the backend request nor the stored response (every
    field of the body may be stored: metadata, input items, instructions, tools) could be written with."""
    try:
        body = _DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))  # what json.loads does
    except RecursionError:
        raise BadRequest(f"The request body nests deeper than {MAX_DEPTH} levels.", None) from None
    except ValueError as error:
        raise BadRequest(f"The request body is not valid JSON: {error}", None) from error
    _check_values(body)
    return body


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_not_json)  # made once: `json.loads` with an option makes one per call


def _check_values(body: Any) -> None:
    pending: list[tuple[Any, str, int]] = [(body, "", 0)]  # a loop, not recursion: depth is what is checked
    while pending:
        value, where, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise BadRequest(f"The request body nests deeper than {MAX_DEPTH} levels.", where or None)
        if isinstance(value, str):
            _encodable(value, where)
        elif isinstance(value, float) and not math.isfinite(value):  # 1e999 reads as inf: JSON cannot write it
            raise BadRequest(f"{where or 'the request body'} is a number past the range of a double, which "
                             "cannot be stored or sent as JSON", where or None)  # fmt: skip
        elif isinstance(value, dict):
            for key, item in value.items():
                _encodable(key, where)
                pending.append((item, f"{where}.{key}" if where else key, depth + 1))
        elif isinstance(value, list):
            pending.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))


def _encodable(text: str, where: str) -> None:
    if lone_surrogate_at(text) is not None:
        raise BadRequest(f"{where or 'the request body'} holds a lone surrogate {describe_surrogate(text)}, "
                         "which is not text", where or None)  # fmt: skip


def parse_request(body: Any, *, default_model: str | None = None) -> GatewayRequest:
    """Check a decoded request body and translate it; raises `BadRequest` naming the field."""
    try:
        return _parse(body, default_model)
    except WireError as error:
        raise BadRequest(str(error), error.param) from None


def _parse(body: Any, default_model: str | None) -> GatewayRequest:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object", None)
    model = _get(body, "model", str) or default_model
    if not model:
        raise BadRequest("model is required", "model")
    items = input_items(body.get("input"))
    text = _get(body, "text", dict) or {}
    response_format = text_format_to_chat(text.get("format"))
    options: dict[str, Any] = {"model": model, "instructions": _get(body, "instructions", str)}
    options["temperature"] = _get(body, "temperature", (int, float))
    options["top_p"] = _get(body, "top_p", (int, float))
    options["max_tokens"] = _get(body, "max_output_tokens", int)
    if response_format is not None:
        fmt = text["format"]
        schema = fmt.get("schema") if isinstance(fmt.get("schema"), Mapping) else None
        options["response_format"] = ResponseFormat(
            fmt["type"], name=fmt.get("name"), schema=schema, raw=response_format
        )
    tools = _get(body, "tools", list)
    if tools:
        options["tools"] = [tool_from_wire(tool, f"tools[{i}]") for i, tool in enumerate(tools)]
    if body.get("tool_choice") is not None:
        options["tool_choice"] = tool_choice_from_wire(body["tool_choice"])
    options["extra_body"] = _extra_body(body, text)
    return GatewayRequest(
        body=body,
        model=model,
        input_items=items,
        options=ChatOptions(**{k: v for k, v in options.items() if v is not None}),
        text=text,
        stream=bool(_get(body, "stream", bool)),
        store=_get(body, "store", bool) is not False,
        background=bool(_get(body, "background", bool)),
        previous_response_id=_get(body, "previous_response_id", str),
    )


def input_items(value: Any) -> list[dict[str, Any]]:
    """`input` as a list of items (a string is one user message)."""
    if value is None:
        raise BadRequest("input is required", "input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise BadRequest("input must be a string or a list of input items", "input")
    value = expanded(value)  # a compaction item stands for the window it holds
    for index, item in enumerate(value):
        if is_reference(item):  # resolved from the store by the route
            if not isinstance(item.get("id"), str):
                raise BadRequest(f"input[{index}].id must be a string", f"input[{index}].id")
            continue
        item_to_message(item, f"input[{index}]")  # checked now: a bad item is a 400, not a failed run
    return list(value)


def is_reference(item: dict[str, Any]) -> bool:
    """An `item_reference` (its `type` may be left out or null, the spec says: then an id and no role)."""
    kind = item.get("type")
    return kind == "item_reference" or (kind is None and "id" in item and "role" not in item)


def _extra_body(body: dict[str, Any], text: dict[str, Any]) -> dict[str, Any] | None:
    extra = {k: v for k, v in body.items() if k not in _GATEWAY_FIELDS}
    if _get(body, "parallel_tool_calls", bool) is not None and body.get("tools"):
        extra["parallel_tool_calls"] = body["parallel_tool_calls"]
    if _get(body, "user", str) is not None:
        extra["user"] = body["user"]
    reasoning = _get(body, "reasoning", dict)
    if reasoning and reasoning.get("effort") is not None:
        extra["reasoning_effort"] = reasoning["effort"]
    if text.get("verbosity") is not None:
        extra["verbosity"] = text["verbosity"]
    _get(body, "metadata", dict)
    return extra or None


def _get(body: dict[str, Any], name: str, kinds: type | tuple[type, ...]) -> Any:
    value = body.get(name)
    if value is None:
        return None
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in _as_tuple(kinds))
    if not ok:
        expected = " or ".join(k.__name__ for k in _as_tuple(kinds))
        raise BadRequest(f"{name} must be of type {expected}, got {type(value).__name__}", name)
    return value


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)
