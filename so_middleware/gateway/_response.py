"""The Responses object's frame: ids, the request's settings echoed, usage."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from so_middleware import UsageDetails

from ._request import GatewayRequest

__all__ = ["is_response_id", "new_id", "response_skeleton", "usage_json"]

_RESPONSE_ID = re.compile(r"resp_[0-9A-Za-z_-]{1,128}")


def new_id(prefix: str) -> str:
    """A unique id in OpenAI's style: `resp_…`, `msg_…`, `fc_…`."""
    return f"{prefix}_{uuid.uuid4().hex}"


def is_response_id(value: str) -> bool:
    """Whether `value` could name a response this gateway made (`new_id("resp")`): any other id is
    a 404 without asking the store (a NUL or a lone surrogate would make some stores raise)."""
    return _RESPONSE_ID.fullmatch(value) is not None


def response_skeleton(request: GatewayRequest, response_id: str, status: str) -> dict[str, Any]:
    """The response object before any output: the request's settings echoed (`text.format` as received)."""
    body = request.body
    text = dict(request.text) if request.text else {}
    text.setdefault("format", {"type": "text"})
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": request.background,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "model": request.model,
        "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": request.previous_response_id,
        "store": request.store,
        "temperature": body.get("temperature"),
        "text": text,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p"),
        "truncation": body.get("truncation", "disabled"),
        "usage": None,
        "user": body.get("user"),
    }


def usage_json(usage: UsageDetails | None) -> dict[str, Any]:
    """The Responses `usage` object (zeros where the backend reported nothing)."""
    usage = usage or UsageDetails()
    inputs, outputs = usage.input_tokens or 0, usage.output_tokens or 0
    return {
        "input_tokens": inputs,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens or 0},
        "output_tokens": outputs,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
        "total_tokens": usage.total_tokens if usage.total_tokens is not None else inputs + outputs,
    }
