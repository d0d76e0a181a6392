"""Message content as the GenAI conventions render it, recorded only when content capture is on.

Messages are JSON in the conventions' shape (`role`, `parts` of `text`, `reasoning`, `tool_call`,
`tool_call_response`, `blob`); binary data is never copied, only its media type.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..core import (
    ChatResponse,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    MessageInput,
    ReasoningContent,
    RefusalContent,
    TextContent,
    as_messages,
)

__all__ = ["input_messages_json", "instructions_json", "output_messages_json"]


def input_messages_json(messages: MessageInput) -> str:
    """`gen_ai.input.messages`: the request messages as JSON."""
    return json.dumps([{"role": m.role, "parts": _parts(m.contents)} for m in as_messages(messages)], default=str)


def instructions_json(instructions: str) -> str:
    """`gen_ai.system_instructions`: the instructions as JSON parts."""
    return json.dumps([{"type": "text", "content": instructions}])


def output_messages_json(response: ChatResponse[Any]) -> str:
    """`gen_ai.output.messages`: the final assistant message as JSON."""
    message = {
        "role": "assistant",
        "parts": _parts(_last_assistant(response)),
        "finish_reason": str(response.finish_reason),
    }
    return json.dumps([message], default=str)


def _last_assistant(response: ChatResponse[Any]) -> list[Content]:
    return next((m.contents for m in reversed(response.messages) if m.role == "assistant"), [])


def _parts(contents: Sequence[Content]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for content in contents:
        if isinstance(content, (TextContent, ReasoningContent)):
            parts.append({"type": content.type, "content": content.text})
        elif isinstance(content, RefusalContent):
            parts.append({"type": "refusal", "content": content.refusal})
        elif isinstance(content, FunctionCallContent):
            parts.append(
                {"type": "tool_call", "id": content.call_id, "name": content.name, "arguments": content.arguments}
            )
        elif isinstance(content, FunctionResultContent):
            parts.append({"type": "tool_call_response", "id": content.call_id, "response": content.result_text})
        else:  # binary data: its media type only
            parts.append({"type": "blob", "mime_type": content.media_type})
    return parts
