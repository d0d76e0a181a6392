"""A request too big for the local server's context, raised as `ContextSizeError` naming the sizes.

llama-server answers such a request with HTTP 400 `exceed_context_size_error` (both SDKs raise
their `BadRequestError`); the layer below maps it, plain and streamed, and lets everything else
through unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any

from ..core import (
    ChatClient,
    ChatResponse,
    ChatStream,
    DelegatingChatClient,
    IncompleteOutputError,
    LayerCall,
    ResponseStream,
    failure_of,
)

__all__ = ["ContextSizeChatClient", "ContextSizeError", "with_context_size_errors"]


class ContextSizeError(IncompleteOutputError):
    """A request (prompt, conversation and re-asks) needs more tokens than the local server gives
    one request (`context_size // parallel`).

    `prompt_tokens` is what the request needed, `context_tokens` what a request may use. Start
    the server with a larger `context_size` or fewer `parallel` slots, or send less text.

    Example:
        try:
            client.get_response_sync(long_text, output_type=Person)
        except ContextSizeError as error:
            print(error.prompt_tokens, error.context_tokens)
    """

    def __init__(self, message: str, *, prompt_tokens: int | None, context_tokens: int | None) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context_tokens = context_tokens


def context_size_error(error: BaseException, advice: str = "") -> ContextSizeError | None:
    """The `ContextSizeError` for an SDK error that is llama-server's context overflow, else None."""
    failure = failure_of(error)
    body = failure.body
    if failure.status != 400 or not isinstance(body, Mapping):
        return None
    details = body.get("error", body)
    if not isinstance(details, Mapping) or details.get("type") != "exceed_context_size_error":
        return None
    needed, available = details.get("n_prompt_tokens"), details.get("n_ctx")
    message = (
        f"the request needs {needed} tokens but the local server's context per request is {available} tokens"
        f"{advice}; send less text, or start the server with a larger context_size or fewer parallel slots"
    )
    return ContextSizeError(
        message,
        prompt_tokens=needed if isinstance(needed, int) else None,
        context_tokens=available if isinstance(available, int) else None,
    )


class ContextSizeChatClient(DelegatingChatClient):
    """Turns llama-server's context overflow into `ContextSizeError`; `advice` is added to its
    message (e.g. the server's `context_size` and `parallel`)."""

    def __init__(self, inner: ChatClient | Any, advice: str = "") -> None:
        super().__init__(inner)
        self._self_advice = advice

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        return self._respond(super().respond(call))

    def stream(self, call: LayerCall) -> ChatStream:
        inner = super().stream(call)

        async def final_response(updates: object) -> ChatResponse[Any]:
            return await inner.get_final_response()

        return ResponseStream(self._updates(inner), final_response)

    async def _respond(self, pending: Awaitable[ChatResponse[Any]]) -> ChatResponse[Any]:
        try:
            return await pending
        except Exception as error:
            mapped = self._mapped(error)
            if mapped is None:
                raise
            raise mapped from error

    async def _updates(self, inner: ChatStream) -> AsyncIterator[Any]:
        async with inner:
            try:
                async for update in inner:
                    yield update
            except Exception as error:
                mapped = self._mapped(error)
                if mapped is None:
                    raise
                raise mapped from error

    def _mapped(self, error: BaseException) -> ContextSizeError | None:
        mapped = context_size_error(error, self._self_advice)
        if mapped is None and error.__cause__ is not None:
            mapped = context_size_error(error.__cause__, self._self_advice)
        return mapped


def with_context_size_errors(client: ChatClient | Any, advice: str = "") -> ContextSizeChatClient:
    """Wrap `client` so llama-server's context overflow raises `ContextSizeError`.

    Example:
        client = with_context_size_errors(OpenAIChatClient(sdk, server.model))
    """
    return ContextSizeChatClient(client, advice)
