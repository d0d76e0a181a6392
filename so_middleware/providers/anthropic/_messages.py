"""`AnthropicChatClient`: the Messages API adapter, over `messages.create`.

The raw `create` is used, not the SDK's `parse`/`stream` helpers (they bypass `create` and
re-parse on every event); validation and partial parsing are the structured-output layer's job.
Its raw-response twin sends both kinds of call: the answer's JSON is read by the wire codec, not
into the SDK's models (`json_create`; streamed, `EventStream`), unless `create` was wrapped or
replaced (instrumentation, a test double), which then gets the call as it is.

Formats: a json_schema format goes out as `output_config.format`. JSON mode (json_object) has
no Anthropic form: nothing is sent for it. A format the capability profile says this backend
does not enforce (json_object everywhere, json_schema on servers that ignore `output_config`)
raises a `UserWarning` when the request is built: the adapter never validates, so such an
answer must be validated above it (`with_structured_output` does, and picks formats by the
profile so it never triggers the warning itself).

Prefill: a trailing assistant message is sent as is and the model continues it. Anthropic's API
returns only the continuation; llama-server repeats the prefill first. With a profile that has
`prefill_echoed`, the echo is removed (non-streaming and streaming alike), so callers see the
continuation only on both backends. The profile says whether a model takes a prefill at all:
Claude 4.6 and later models (and Claude models the profile does not know) answer one with a
400, so `with_structured_output` sends them none (`rejects_prefill`).

Thinking: `thinking` blocks come back as `ReasoningContent` with their signature (streamed, the
`signature_delta` closes the block), and go out again as signed `thinking` blocks, so a turn
sent back whole (a tool-mode re-ask) keeps what the API checks.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anthropic
from anthropic.types import Message

from ...core import Capabilities, ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate, UserError
from ...wire.common import warn_if_not_enforced
from ...wire.messages import StreamReader, request_to_wire, response_from_wire
from .._discovery import ServerInfo
from .._sdk_client import DEFAULT_IDLE_TIMEOUT, SDKChatClient
from ._json_create import MessageView, json_create
from ._profiles import profile_for, rejects_prefill, server_profile

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicChatClient"]


DEFAULT_MAX_TOKENS = 1024


class AnthropicChatClient(SDKChatClient):
    """A ChatClient over an `anthropic.Anthropic` or `anthropic.AsyncAnthropic` client (Messages API).

    `max_tokens` (default 1024) is sent when a call does not set `max_tokens`: the API requires
    it. The capability profile is picked from the base URL and model and can be overridden
    (`capabilities=LLAMA_SERVER_MESSAGES` for llama-server's `/v1/messages`).

    Example:
        client = AnthropicChatClient(AsyncAnthropic(), "claude-haiku-4-5")
        response = await client.get_response("Hello", options={"instructions": "Be brief."})
        print(response.text, response.usage, response.finish_reason)
    """

    provider_name: ClassVar[str] = "anthropic"
    sdk_types: ClassVar[tuple[type, ...]] = (anthropic.Anthropic, anthropic.AsyncAnthropic)
    async_sdk_types: ClassVar[tuple[type, ...]] = (anthropic.AsyncAnthropic,)

    def __init__(
        self,
        sdk_client: anthropic.Anthropic | anthropic.AsyncAnthropic,
        model: str | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        capabilities: Capabilities | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        discover: bool = True,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise UserError(f"max_tokens must be an int >= 1, not {max_tokens!r:.40} ({type(max_tokens).__name__})")
        self.max_tokens = max_tokens
        super().__init__(sdk_client, model, capabilities, idle_timeout, discover=discover)

    def default_profile(self, base_url: str, model: str | None) -> Capabilities:
        """The profile for this base URL and model."""
        return profile_for(base_url, model)

    def server_profile(self, info: ServerInfo) -> Capabilities:
        """The shipped profile for a discovered server on the Messages route."""
        return server_profile(info, self.model)

    def capabilities_for(self, model: str, capabilities: Capabilities | None = None) -> Capabilities:
        """The profile for a call to `model` (a per-call `options.model`): `capabilities` (the
        adapter's own by default), without the assistant prefill when that model rejects it.

        Example: `AnthropicChatClient(sdk, "claude-haiku-4-5").capabilities_for("claude-opus-4-6").assistant_prefill` is False.
        """
        profile = capabilities or self.capabilities
        return profile.replace(assistant_prefill=False) if rejects_prefill(model) else profile

    def request_for(self, messages: list[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        """The `create` keyword arguments this adapter would send (for inspection and tests)."""
        warn_if_not_enforced(options, self.capabilities, "Anthropic", forms=("json_schema",))
        return request_to_wire(messages, options, model=self.model, max_tokens=self.max_tokens)

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        request = self.request_for(messages, options)
        prefill = self.echoed_prefill(messages)
        sdk = self.sdk_for(options)
        create = json_create(sdk, sdk.messages, is_async=self.is_async)
        return await self.fetch(
            create or sdk.messages.create,
            request,
            MessageView if create else Message,
            lambda message: response_from_wire(message, prefill=prefill),
        )

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        request = self.request_for(messages, options)
        stream = await self.open_stream(self.sdk_for(options).messages.create, request, options)
        reader = StreamReader(prefill=self.echoed_prefill(messages))
        events = self.read_events(stream, reader, ending="message_stop", idle_timeout=self.idle_timeout_for(options))
        async with contextlib.aclosing(events):  # closing this stream closes the HTTP response at once
            async for update in events:
                yield update

    fresh_stream = _stream  # its reader makes a new update for every event

    def __repr__(self) -> str:
        kind = "AsyncAnthropic" if self.is_async else "Anthropic"
        return f"AnthropicChatClient({kind}(base_url={self.base_url!r}), model={self.model!r})"
