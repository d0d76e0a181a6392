"""`OpenAIChatClient`: the Chat Completions adapter, over `chat.completions.create`.

The plain `create` request is sent (through `SDKPost`), not the SDK's `parse`/`stream` helpers,
which re-parse the whole buffer on every chunk; validation and partial parsing are the
structured-output layer's job.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar

import httpx2
import openai
from openai.types.chat import ChatCompletion

from ...core import Capabilities, ChatMessage, ChatOptions, ChatResponse, ChatResponseUpdate, UserError
from ...wire.chat import ChunkReader, request_to_wire, response_from_wire
from .._discovery import ServerInfo
from .._post import CreateCalls, SDKPost
from .._sdk_client import DEFAULT_IDLE_TIMEOUT, SDKChatClient
from ._custom_tool import CustomToolAnswer, as_update
from ._direct import DirectPost
from ._profiles import profile_for, server_profile
from ._tool_emulation import REPEATED_CALLS, ToolEmulation

__all__ = ["OpenAIChatClient"]


class OpenAIChatClient(SDKChatClient):
    """A ChatClient over an `openai.OpenAI` or `openai.AsyncOpenAI` client (Chat Completions).

    Works with any OpenAI-compatible `base_url` (vLLM, llama.cpp, Ollama). The capability
    profile is picked from the base URL and can be overridden. On a backend whose tools are
    emulated, an `"auto"` turn after `emulated_call_repeats` identical answered calls in a row
    may only answer.

    `http_client=` (the `httpx2.AsyncClient` an `AsyncOpenAI` client was made with) posts the calls
    the SDK is not to retry (its `max_retries`, or the call's `sdk_max_retries`, is 0: a retry
    layer above asks for that) as JSON on that HTTP client, without the SDK's request and response
    models, raising the SDK's own errors; a `create` that something wrapped (an OpenAI
    instrumentation) still sees every call. The gateway sends its backend calls this way.

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
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        http_client: httpx2.AsyncClient | None = None,
        emulated_call_repeats: int = REPEATED_CALLS,
    ) -> None:
        super().__init__(sdk_client, model, capabilities, idle_timeout, discover=discover)
        if isinstance(emulated_call_repeats, bool) or not isinstance(emulated_call_repeats, int):
            raise UserError(f"emulated_call_repeats must be a whole number, got {emulated_call_repeats!r}")
        if emulated_call_repeats < 1:
            raise UserError(f"emulated_call_repeats must be 1 or more, got {emulated_call_repeats!r}")
        # an emulated "auto" turn after this many identical answered calls may only answer (`ToolEmulation`)
        self._repeats = emulated_call_repeats
        self._creates = CreateCalls("/chat/completions", ChatCompletion, is_async=self.is_async)
        self._direct: DirectPost | None = None
        if http_client is not None:
            if not isinstance(sdk_client, openai.AsyncOpenAI):
                raise UserError("http_client= posts on an async HTTP client: it needs an openai.AsyncOpenAI client")
            self._direct = DirectPost(sdk_client, http_client, "/chat/completions")
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
        return request_to_wire(messages, options, model=self.model, max_tokens_field=self._max_tokens_field)

    def create_for(self, options: ChatOptions) -> Callable[..., Any]:
        """The function that sends this call's request: `chat.completions.create` of the call's SDK
        client, sent as an `SDKPost` (see `CreateCalls`). Plain and streamed calls go through it.
        Override it to send the request another way: return an `SDKPost` (as `http_client=` does,
        one that posts on that HTTP client) or the SDK's own bound `create`.

        Example (the SDK's own method, for an instrumentation that wraps it):
            class SDKCreateChatClient(OpenAIChatClient):
                def create_for(self, options):
                    return self.sdk_for(options).chat.completions.create
        """
        sdk = self.sdk_for(options)
        call = self._creates(sdk, sdk.chat.completions)  # the SDK's `create` itself when something wrapped it: kept
        if self._direct is not None and isinstance(call, SDKPost) and sdk.max_retries == 0:
            return self._direct
        return call

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        # a regex or grammar answer, asked as a custom tool (named in `extra_body` only)
        custom = CustomToolAnswer.of(options) if options.extra_body else None
        if custom is not None:  # (the options sent name it in Chat's shape: not found again)
            return custom.from_chat(await self._respond(messages, custom.chat_options(options)))
        # tools the backend ignores (a call without tools has nothing to emulate)
        emulation = ToolEmulation.of(options, self.capabilities, messages, self._repeats) if options.tools else None
        if emulation is not None:
            response = await self._respond(emulation.messages(messages), emulation.options)
            return emulation.response(response)
        request = self.request_for(messages, options)
        prefill = self.echoed_prefill(messages)
        to_chat = (
            (lambda completion: response_from_wire(completion, prefill=prefill)) if prefill else response_from_wire
        )
        return await self.fetch(self.create_for(options), request, ChatCompletion, to_chat)

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        # Chat streams no documented custom call: asked whole
        if options.extra_body and CustomToolAnswer.of(options) is not None:
            yield as_update(await self._respond(messages, options))
            return
        emulation = ToolEmulation.of(options, self.capabilities, messages, self._repeats) if options.tools else None
        if emulation is not None:
            updates = emulation.updates(self._stream(emulation.messages(messages), emulation.options))
            async with contextlib.aclosing(updates):
                async for update in updates:
                    yield update
            return
        request = self.request_for(messages, options)
        request["stream_options"] = {"include_usage": True}
        stream = await self.open_stream(self.create_for(options), request, options)
        reader = ChunkReader(self.echoed_prefill(messages))
        events = self.read_events(stream, reader, ending="a finish reason", idle_timeout=self.idle_timeout_for(options))
        async with contextlib.aclosing(events):  # closing this stream closes the HTTP response at once
            async for update in events:
                yield update

    def __repr__(self) -> str:
        kind = "AsyncOpenAI" if self.is_async else "OpenAI"
        return f"OpenAIChatClient({kind}(base_url={self.base_url!r}), model={self.model!r})"
