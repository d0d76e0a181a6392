"""Message content as the GenAI conventions render it, and where it may be recorded.

Messages are rendered in the conventions' shape (`role`, `parts` of `text`, `reasoning`,
`tool_call` with its `arguments` as an object, `tool_call_response`, `blob`): as JSON strings on
span attributes, as objects in events. Binary data is never copied, only its media type.

Where content goes follows the GenAI instrumentation utilities (opentelemetry-util-genai). By
default `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` puts it on the span. With
`OTEL_SEMCONV_STABILITY_OPT_IN` listing `gen_ai_latest_experimental`, the variable is one of
`NO_CONTENT` (the default, also for an unknown value), `SPAN_ONLY`, `EVENT_ONLY`, `SPAN_AND_EVENT`,
and a `gen_ai.client.inference.operation.details` event is emitted for the event modes
(`OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT=true|false` overrides whether it is).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...core import (
    ChatResponse,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    MessageInput,
    ReasoningContent,
    RefusalContent,
    TextContent,
    as_messages,
)
from . import _names as names

__all__ = ["ContentCapture", "content_capture", "input_messages", "instructions_parts", "output_messages"]

logger = logging.getLogger("so_middleware")


@dataclass(frozen=True)
class ContentCapture:
    """Where a layer records message content: on spans, in the details event; and whether that
    event is emitted at all (without content it carries the call's other attributes)."""

    on_span: bool = False
    in_event: bool = False
    emit_event: bool = False


def content_capture(capture_content: bool, environ: Mapping[str, str] = os.environ) -> ContentCapture:
    """The capture settings from the layer's `capture_content` argument and the environment.

    `capture_content=True` puts content on spans whatever the environment says.

    Example: with `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` and
    `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY`, content goes in events only.
    """
    value = environ.get(names.CAPTURE_CONTENT_ENV, "").strip()
    opt_in = {part.strip() for part in environ.get(names.SEMCONV_OPT_IN_ENV, "").split(",")}
    if names.GEN_AI_LATEST_EXPERIMENTAL not in opt_in:
        return ContentCapture(on_span=capture_content or value.lower() == "true")
    mode = value.upper() or "NO_CONTENT"
    if mode not in names.CONTENT_MODES:
        logger.warning(
            "%r is not a valid %s; expected one of %s. Capturing no content.",
            value,
            names.CAPTURE_CONTENT_ENV,
            ", ".join(names.CONTENT_MODES),
        )
        mode = "NO_CONTENT"
    in_event = mode in ("EVENT_ONLY", "SPAN_AND_EVENT")
    emit = environ.get(names.EMIT_EVENT_ENV, "").strip().lower()
    return ContentCapture(
        on_span=capture_content or mode in ("SPAN_ONLY", "SPAN_AND_EVENT"),
        in_event=in_event,
        emit_event=emit == "true" if emit in ("true", "false") else in_event,
    )


def input_messages(messages: MessageInput) -> list[dict[str, Any]]:
    """`gen_ai.input.messages`: the request messages."""
    return [{"role": m.role, "parts": _parts(m.contents)} for m in as_messages(messages)]


def instructions_parts(instructions: str) -> list[dict[str, Any]]:
    """`gen_ai.system_instructions`: the instructions as parts."""
    return [{"type": "text", "content": instructions}]


def output_messages(response: ChatResponse[Any]) -> list[dict[str, Any]]:
    """`gen_ai.output.messages`: the final assistant message."""
    parts = _parts(next((m.contents for m in reversed(response.messages) if m.role == "assistant"), []))
    return [{"role": "assistant", "parts": parts, "finish_reason": str(response.finish_reason)}]


def as_json(value: Any) -> str:
    """A rendering as the JSON string a span attribute carries."""
    return json.dumps(value, default=str)


def _parts(contents: Sequence[Content]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for content in contents:
        if isinstance(content, (TextContent, ReasoningContent)):
            parts.append({"type": content.type, "content": content.text})
        elif isinstance(content, RefusalContent):
            parts.append({"type": "refusal", "content": content.refusal})
        elif isinstance(content, FunctionCallContent):
            arguments = _arguments(content.arguments)
            parts.append({"type": "tool_call", "id": content.call_id, "name": content.name, "arguments": arguments})
        elif isinstance(content, FunctionResultContent):
            parts.append({"type": "tool_call_response", "id": content.call_id, "response": content.result_text})
        elif isinstance(content, HostedFileContent):  # the semantic conventions' file part: a reference
            parts.append({"type": "file", "file_id": content.file_id})
        else:  # binary data: its media type only
            parts.append({"type": "blob", "mime_type": content.media_type})
    return parts


def _arguments(arguments: str) -> Any:
    """Tool-call arguments as an object; text that is not JSON (a cut-off call) stays text."""
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments
