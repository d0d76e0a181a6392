"""Small helpers for tests of layers: a provider status error, and one call on either path."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from ..core import ChatResponse, MessageInput, ProviderStatusError

__all__ = ["StatusError", "final_response"]


class StatusError(ProviderStatusError):
    """A `ProviderStatusError` made in one line, as an adapter raises it for an HTTP error status;
    `.response` holds the status and headers as an SDK's error does.

    Example: `FakeChatClient([StatusError(429, {"retry-after": "1"}), "ok"])`.
    """

    def __init__(self, status: int, headers: Mapping[str, str] | None = None, message: str | None = None) -> None:
        super().__init__(message or f"status {status}", status_code=status, headers=headers)
        self.response = SimpleNamespace(status_code=status, headers=dict(headers or {}))


async def final_response(client: Any, messages: MessageInput, *, stream: bool, **kwargs: Any) -> ChatResponse[Any]:
    """`client.get_response(messages, **kwargs)`, streamed to its end when `stream`: for tests over both paths.

    Example: `response = await final_response(client, "hi", stream=True, output_type=Person)`.
    """
    if stream:
        return await client.get_response(messages, stream=True, **kwargs).get_final_response()  # type: ignore[no-any-return]
    return await client.get_response(messages, **kwargs)  # type: ignore[no-any-return]
