"""Reading a Responses API request: the body decoded and checked value by value (`read_json`),
then read in one call, `wire.responses.ResponsesRequest.from_wire` (the codec every adapter
shares): the options for the Chat Completions adapter, the input items, the gateway's own fields
(`store`, `background`, `previous_response_id`, ...) and the response object the request asks for.

`text.format` is forwarded as is (seed 004 FR-001…FR-007), and fields the Responses API does not
know are forwarded into the backend's request body unchanged (the passthrough philosophy: vLLM's
`top_k` or llama.cpp's `min_p` reach the backend; a client's `client_metadata` does not). What
only the gateway knows is done here, before the read: a compaction item stands for the window it
holds. Item references are resolved by the route, from the store.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..core import describe_surrogate, lone_surrogate_at
from ..wire.common import WireError
from ..wire.responses import ResponsesRequest
from ..wire.responses_items import is_reference, items_from_wire
from ._compaction._window import expanded, is_compaction
from ._errors import BadRequest

__all__ = ["MAX_DEPTH", "ResponsesRequest", "input_items", "is_reference", "parse_request", "read_json", "read_request"]

MAX_DEPTH = 64  # levels of nesting in a request body (a JSON schema's are far fewer)


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
    return body


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_not_json)  # made once: `json.loads` with an option makes one per call


def _encodable(text: str, where: str) -> None:
    if lone_surrogate_at(text) is not None:
        raise BadRequest(f"{where or 'the request body'} holds a lone surrogate {describe_surrogate(text)}, "
                         "which is not text", where or None)  # fmt: skip


def read_request(raw: bytes, *, default_model: str | None = None) -> ResponsesRequest:
    """A `POST /v1/responses` body read in one call: decoded and checked (`read_json`), then read
    (`parse_request`); a `BadRequest` naming what is wrong, before any backend call."""
    return parse_request(read_json(raw), default_model=default_model)


def parse_request(body: Any, *, default_model: str | None = None) -> ResponsesRequest:
    """Read a decoded request body in one call (`ResponsesRequest.from_wire`), its compaction
    items expanded first; raises `BadRequest` naming the field."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object", None)
    value = body.get("input")
    if isinstance(value, list) and any(map(is_compaction, value)) and all(isinstance(i, dict) for i in value):
        body = {**body, "input": expanded(value)}  # a copy: the client's body stays as it came
    try:
        return ResponsesRequest.from_wire(body, default_model=default_model)
    except WireError as error:
        raise BadRequest(str(error), error.param) from None


def input_items(value: Any) -> list[dict[str, Any]]:
    """`input` as a list of checked items (a string is one user message), compaction items
    expanded; a `WireError` naming what cannot be read."""
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        value = expanded(value)  # a compaction item stands for the window it holds
    return items_from_wire(value)
