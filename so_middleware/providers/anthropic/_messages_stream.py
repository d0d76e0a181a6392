"""Reading an Anthropic Messages event stream: `StreamReader` turns events into updates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core import (
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    ReasoningContent,
    TextContent,
)
from .._prefill import EchoFilter
from ._messages_wire import finish_reason, refusal_of, usage_from

__all__ = ["StreamReader"]


@dataclass
class StreamReader:
    """Turns Messages stream events into updates; keeps what spans events (block kinds, text).

    `read(event)` returns an update or None; `finished` turns True on `message_stop`.
    """

    prefill: str = ""
    text: list[str] = field(default_factory=list)
    finished: bool = False
    _calls: dict[int, str] = field(default_factory=dict)  # block index -> tool_use id
    _echo: EchoFilter | None = None

    def __post_init__(self) -> None:
        self._echo = EchoFilter(self.prefill) if self.prefill else None

    def _text(self, piece: str) -> list[Content]:
        piece = self._echo.feed(piece) if self._echo else piece
        if not piece:
            return []
        self.text.append(piece)
        return [TextContent(piece)]

    def read(self, event: Any) -> ChatResponseUpdate[Any] | None:
        kind = getattr(event, "type", None)
        contents: list[Content] = []
        if kind == "message_start":
            message = event.message
            return ChatResponseUpdate(
                role="assistant",
                usage=usage_from(getattr(message, "usage", None), part="input"),
                response_id=getattr(message, "id", None),
                model_id=getattr(message, "model", None),
                raw_representation=event,
            )
        if kind == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self._calls[event.index] = block.id
                contents.append(FunctionCallContent(block.id, block.name, ""))
            elif block.type == "text" and block.text:
                contents.extend(self._text(block.text))
            elif block.type == "thinking" and getattr(block, "thinking", ""):
                contents.append(ReasoningContent(block.thinking))
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                contents.extend(self._text(delta.text))
            elif delta.type == "input_json_delta":
                call_id = self._calls.get(event.index, f"toolu_{event.index}")
                contents.append(FunctionCallContent(call_id, "", delta.partial_json))
            elif delta.type == "thinking_delta":
                contents.append(ReasoningContent(delta.thinking))
            elif delta.type == "signature_delta":  # closes the thinking block; the API wants it back
                contents.append(ReasoningContent("", delta.signature))
        elif kind == "message_delta":
            if self._echo:
                contents.extend(self._text(self._echo.flush()))
            refusal = refusal_of(getattr(event.delta, "stop_details", None))
            if refusal is not None:
                contents.append(refusal)
            return ChatResponseUpdate(
                contents,
                role="assistant",
                usage=usage_from(getattr(event, "usage", None), part="output"),
                finish_reason=finish_reason(getattr(event.delta, "stop_reason", None)),
                raw_representation=event,
            )
        elif kind == "message_stop":
            self.finished = True
        if not contents:
            return None
        return ChatResponseUpdate(contents, role="assistant", raw_representation=event)
