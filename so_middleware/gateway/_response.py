"""The Responses object's frame: ids, the request's settings echoed, usage."""

from __future__ import annotations

import re
import time
from typing import Any

from ..wire.responses import echoed_text, echoed_tool
from ..wire.responses_events import new_id
from ._request import GatewayRequest

__all__ = ["is_response_id", "new_id", "response_skeleton"]

_RESPONSE_ID = re.compile(r"resp_[0-9A-Za-z_-]{1,128}")


def is_response_id(value: str) -> bool:
    """Whether `value` could name a response this gateway made (`new_id("resp")`): any other id is
    a 404 without asking the store (a NUL or a lone surrogate would make some stores raise)."""
    return _RESPONSE_ID.fullmatch(value) is not None


def response_skeleton(request: GatewayRequest, response_id: str, status: str) -> dict[str, Any]:
    """The response object before any output: the request's settings echoed (`text.format` as
    received), every field the Open Responses schema requires present (the API's defaults where the
    request set none)."""
    body = request.body
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "completed_at": None,
        "status": status,
        "background": request.background,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "metadata": body.get("metadata") or {},
        "model": request.model,
        "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": request.previous_response_id,
        "prompt_cache_key": body.get("prompt_cache_key"),
        "reasoning": _reasoning(body.get("reasoning")),
        "safety_identifier": body.get("safety_identifier"),
        "service_tier": body.get("service_tier") or "default",
        "store": request.store,
        "temperature": _number(body, "temperature", 1.0),
        "top_p": _number(body, "top_p", 1.0),
        "presence_penalty": _number(body, "presence_penalty", 0.0),
        "frequency_penalty": _number(body, "frequency_penalty", 0.0),
        "top_logprobs": body.get("top_logprobs") if isinstance(body.get("top_logprobs"), int) else 0,
        "text": echoed_text(request.text),
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": [echoed_tool(tool) for tool in body.get("tools") or []],
        "truncation": body.get("truncation", "disabled"),
        "usage": None,
        "user": body.get("user"),
    }


def _number(body: dict[str, Any], name: str, default: float) -> float:
    value = body.get(name)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _reasoning(value: Any) -> dict[str, Any] | None:
    """`reasoning` as the schema has it: both `effort` and `summary` keys (null when not asked)."""
    if not isinstance(value, dict):
        return None
    return {"effort": value.get("effort"), "summary": value.get("summary"), **value}
