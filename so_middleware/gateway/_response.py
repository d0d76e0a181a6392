"""The Responses object's frame: ids, the request's settings echoed, usage."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from so_middleware import UsageDetails

from ._request import GatewayRequest

__all__ = ["echoed_text", "echoed_tool", "is_response_id", "new_id", "response_skeleton", "usage_json"]

_RESPONSE_ID = re.compile(r"resp_[0-9A-Za-z_-]{1,128}")


def new_id(prefix: str) -> str:
    """A unique id in OpenAI's style: `resp_…`, `msg_…`, `fc_…`."""
    return f"{prefix}_{uuid.uuid4().hex}"


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


def echoed_text(text: dict[str, Any] | None) -> dict[str, Any]:
    """`text` as received, with a `format` (`text` by default) and, for a json_schema format, the
    keys the schema requires (`description`, `strict`: null/false when the request left them out)."""
    echoed = dict(text) if text else {}
    fmt = echoed.setdefault("format", {"type": "text"})
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        echoed["format"] = {**fmt, "description": fmt.get("description"), "strict": fmt.get("strict", False)}
    return echoed


def echoed_tool(tool: Any) -> Any:
    """A function tool as the schema has it: `description`, `parameters`, `strict` always present."""
    if not (isinstance(tool, dict) and tool.get("type") == "function"):
        return tool
    echoed = dict(tool)
    for name in ("description", "parameters", "strict"):
        echoed.setdefault(name, None)
    return echoed


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
