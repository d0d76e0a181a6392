"""`OpenAIChatClient`: the Chat Completions adapter, over `chat.completions.create`.

The raw `create` is used, not the SDK's `parse`/`stream` helpers, which re-parse the whole
buffer on every chunk; validation and partial parsing are the structured-output layer's job.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import openai

from ..._client import Capabilities
from ..._options import ChatOptions
from ..._types import ChatMessage, ChatResponse, ChatResponseUpdate, FinishReason, TextContent
from .._bridge import call_sdk, close_sdk_stream, interrupted, is_stream_break, iterate_sdk_stream
from .._discovery import ServerInfo
from .._prefill import EchoFilter
from .._sdk_client import SDKChatClient
from ._chat_wire import build_request, chunk_to_update, completion_to_response
from ._profiles import profile_for, server_profile

__all__ = ["OpenAIChatClient"]


class OpenAIChatClient(SDKChatClient):
    """A ChatClient over an `openai.OpenAI` or `openai.AsyncOpenAI` client (Chat Completions).

    Works with any OpenAI-compatible `base_url` (vLLM, llama.cpp, Ollama). The capability
    profile is picked from the base URL and can be overridden.

    Example:
        client = OpenAIChatClient(AsyncOpenAI(), "gpt-4o-mini")
        response = await client.get_response("Hello")
        print(response.text, response.usage)
    """

    provider_name: ClassVar[str] = "openai"
    sdk_types: ClassVar[tuple[type, ...]] = (openai.OpenAI, openai.AsyncOpenAI)
    async_sdk_types: ClassVar[tuple[type, ...]] = (openai.AsyncOpenAI,)

    def __init__(
        self,
        sdk_client: openai.OpenAI | openai.AsyncOpenAI,
        model: str | None = None,
        *,
        capabilities: Capabilities | None = None,
        discover: bool = True,
        max_tokens_field: str | None = None,
    ) -> None:
        super().__init__(sdk_client, model, capabilities, discover=discover)
        # api.openai.com wants max_completion_tokens (max_tokens is refused by reasoning models);
        # compatible servers know max_tokens.
        self._max_tokens_field = max_tokens_field or (
            "max_completion_tokens" if self.capabilities.name == "openai" else "max_tokens"
        )

    def default_profile(self, base_url: str, model: str | None) -> Capabilities:
        """The profile for this base URL and model."""
        return profile_for(base_url, model, route="chat")

    def server_profile(self, info: ServerInfo) -> Capabilities:
        """The shipped profile for a discovered server on this route."""
        return server_profile(info, "chat", self.model)

    def request_for(self, messages: list[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        """The `create` keyword arguments this adapter would send (for inspection and tests)."""
        return build_request(messages, options, model=self.model, max_tokens_field=self._max_tokens_field)

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        request = self.request_for(messages, options)
        completion = await call_sdk(self.is_async, self.sdk_client.chat.completions.create, **request)
        return completion_to_response(completion, prefill=self.echoed_prefill(messages))

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        request = self.request_for(messages, options)
        stream = await call_sdk(
            self.is_async,
            self.sdk_client.chat.completions.create,
            **request,
            stream=True,
            stream_options={"include_usage": True},
        )
        call_ids: dict[int, str] = {}
        echo = EchoFilter(self.echoed_prefill(messages))
        text: list[str] = []
        updates = 0
        finished = refused = False
        try:
            try:
                async for chunk in iterate_sdk_stream(self.is_async, stream):
                    update = chunk_to_update(chunk, call_ids)
                    if echo.pending:
                        update.contents = _without_echo(update.contents, echo)
                    refused = refused or any(c.type == "refusal" for c in update.contents)
                    if update.finish_reason is not None:
                        finished = True
                        if refused and update.finish_reason == FinishReason.STOP:
                            update.finish_reason = FinishReason.REFUSAL
                    text.extend(c.text for c in update.contents if isinstance(c, TextContent))
                    updates += 1
                    yield update
            except Exception as error:
                if not is_stream_break(error):
                    raise
                raise interrupted(error, "".join(text), updates) from error
            held = echo.flush()  # text held back as possible echo when the stream ended
            if held:
                text.append(held)
                yield ChatResponseUpdate([TextContent(held)], role="assistant")
            if not finished:
                raise interrupted(EOFError("the event stream ended without a finish reason"), "".join(text), updates)
        finally:
            await close_sdk_stream(self.is_async, stream)

    def __repr__(self) -> str:
        kind = "AsyncOpenAI" if self.is_async else "OpenAI"
        return f"OpenAIChatClient({kind}(base_url={self.base_url!r}), model={self.model!r})"


def _without_echo(contents: list[Any], echo: EchoFilter) -> list[Any]:
    kept: list[Any] = []
    for content in contents:
        if isinstance(content, TextContent):
            content = TextContent(echo.feed(content.text))
            if not content.text:
                continue
        kept.append(content)
    return kept
