"""`OpenAIResponsesClient`: the Responses API adapter, over `responses.create`.

The raw `create` is used, not the SDK's `parse`/`stream` helpers; validation and partial parsing
are the structured-output layer's job.

A response format the capability profile says this backend does not enforce raises a
`UserWarning` when the request is built: the adapter never validates, so such an answer must be
validated above it (`with_structured_output` does, and picks formats by the profile so it never
triggers the warning itself).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import openai
from openai.types.responses import Response

from ...core import Capabilities, ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate
from .._discovery import ServerInfo
from .._sdk_client import DEFAULT_IDLE_TIMEOUT, SDKChatClient
from ._profiles import profile_for, server_profile
from ._responses_stream import StreamReader
from ._responses_wire import build_request, response_to_chat

__all__ = ["OpenAIResponsesClient"]


class OpenAIResponsesClient(SDKChatClient):
    """A ChatClient over an `openai.OpenAI` or `openai.AsyncOpenAI` client (Responses API).

    The capability profile is picked from the base URL and can be overridden: with
    `capabilities=LLAMA_SERVER_RESPONSES` the format is also sent as a Chat Completions
    `response_format` key, which llama-server enforces while it ignores `text.format`. With a
    profile that has `prefill_echoed`, an echoed assistant prefill is removed from the answer.

    Example:
        client = OpenAIResponsesClient(AsyncOpenAI(), "gpt-4o-mini")
        response = await client.get_response("Hello", options={"max_tokens": 50})
        print(response.text, response.usage, response.finish_reason)
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
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        discover: bool = True,
    ) -> None:
        super().__init__(sdk_client, model, capabilities, idle_timeout, discover=discover)

    def default_profile(self, base_url: str, model: str | None) -> Capabilities:
        """The profile for this base URL and model."""
        return profile_for(base_url, model, route="responses")

    def server_profile(self, info: ServerInfo) -> Capabilities:
        """The shipped profile for a discovered server on this route."""
        return server_profile(info, "responses", self.model)

    def request_for(self, messages: list[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        """The `create` keyword arguments this adapter would send (for inspection and tests)."""
        _warn_if_not_enforced(options, self.capabilities)
        return build_request(messages, options, model=self.model, capabilities=self.capabilities)

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        request = self.request_for(messages, options)
        prefill = self.echoed_prefill(messages)
        return await self.fetch(
            self.sdk_for(options).responses.create,
            request,
            Response,
            lambda response: response_to_chat(response, prefill=prefill),
        )

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        request = self.request_for(messages, options)
        stream = await self.open_stream(self.sdk_for(options).responses.create, request, options)
        reader = StreamReader(prefill=self.echoed_prefill(messages))
        ending = "response.completed or response.incomplete"
        events = self.read_events(stream, reader, ending=ending, idle_timeout=self.idle_timeout_for(options))
        async with contextlib.aclosing(events):  # closing this stream closes the HTTP response at once
            async for update in events:
                yield update

    def __repr__(self) -> str:
        kind = "AsyncOpenAI" if self.is_async else "OpenAI"
        return f"OpenAIResponsesClient({kind}(base_url={self.base_url!r}), model={self.model!r})"


def _warn_if_not_enforced(options: ChatOptions, capabilities: Capabilities) -> None:
    fmt = options.response_format
    if fmt is None or fmt.is_text or fmt.raw is not None:
        return
    enforced = capabilities.native_json_schema if fmt.type == "json_schema" else capabilities.json_object
    if not enforced:
        warnings.warn(
            f"the {fmt.type} response format is not enforced by {capabilities.name!r} on the Responses route: "
            "the answer may not follow it; validate it (with_structured_output does)",
            UserWarning,
            stacklevel=5,
        )
