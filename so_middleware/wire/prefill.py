"""Assistant prefill, and servers that echo it back.

A trailing assistant message is a prefill: the model continues it. Anthropic's API returns only
the continuation; llama-server repeats the prefill at the start of its text on every route. An
adapter whose profile says `prefill_echoed` removes the echo, so callers see the continuation
on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core import ChatMessage

__all__ = ["EchoFilter", "prefill_of", "strip_echo"]


def prefill_of(messages: list[ChatMessage]) -> str:
    """The assistant prefill: the text of a trailing assistant message ("" when there is none)."""
    if messages and messages[-1].role == "assistant" and not messages[-1].function_calls:
        return messages[-1].text
    return ""


def strip_echo(text: str, prefill: str) -> str:
    """`text` without a leading echo of `prefill`."""
    return text[len(prefill) :] if prefill and text.startswith(prefill) else text


@dataclass
class EchoFilter:
    """Removes an echoed prefill from streamed text pieces, however the pieces are split."""

    pending: str
    buffer: str = ""

    def feed(self, piece: str) -> str:
        """The part of `piece` that is not echo (held back while it could still be echo)."""
        if not self.pending:
            return piece
        self.buffer += piece
        if self.buffer.startswith(self.pending):
            rest, self.pending, self.buffer = self.buffer[len(self.pending) :], "", ""
            return rest
        if self.pending.startswith(self.buffer):
            return ""  # could still be the echo: hold it back
        rest, self.pending, self.buffer = self.buffer, "", ""
        return rest

    def flush(self) -> str:
        """What is held back when the stream ends."""
        rest, self.pending, self.buffer = self.buffer, "", ""
        return rest
