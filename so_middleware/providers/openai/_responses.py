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
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, ClassVar

import openai
from openai.types.responses import Response

from ...core import (
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ContinuationToken,
    StreamInterruptedError,
)
from ...wire.common import warn_if_not_enforced
from ...wire.responses import Event, request_to_wire
from ...wire.responses_events import StreamReader
from .._bridge import call_sdk
from .._discovery import ServerInfo
from .._post import CreateCalls
from .._sdk_client import DEFAULT_IDLE_TIMEOUT, EventReader, SDKChatClient
from ._background import ResumableReader, answer_to_chat, background_to_chat, ended_run_error, final_of_resumed
from ._custom_tool import CustomToolAnswer, CustomToolReader
from ._profiles import profile_for, server_profile

__all__ = ["OpenAIResponsesClient"]


class OpenAIResponsesClient(SDKChatClient):
    """A ChatClient over an `openai.OpenAI` or `openai.AsyncOpenAI` client (Responses API).

    The capability profile is picked from the base URL and can be overridden: with
    `capabilities=LLAMA_SERVER_RESPONSES` the format is also sent as a Chat Completions
    `response_format` key, which llama-server enforces while it ignores `text.format`. With a
    profile that has `prefill_echoed`, an echoed assistant prefill is removed from the answer.

    `options={"background": True}` starts a long-running run (see `_background.py`): it answers at
    once with `finish_reason == LONG_RUNNING` and a `continuation_token` to poll or resume with;
    `cancel(token)` stops it. A background create is sent once: the SDK's own retries are off for it.

    Example:
        client = OpenAIResponsesClient(AsyncOpenAI(), "gpt-4o-mini")
        response = await client.get_response("Hello", options={"max_tokens": 50})
        print(response.text, response.usage, response.finish_reason)
    """

    provider_name: ClassVar[str] = "openai"
    supports_background: ClassVar[bool] = True
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
        self._creates = CreateCalls("/responses", Response, is_async=self.is_async)

    def default_profile(self, base_url: str, model: str | None) -> Capabilities:
        """The profile for this base URL and model."""
        return profile_for(base_url, model, route="responses")

    def server_profile(self, info: ServerInfo) -> Capabilities:
        """The shipped profile for a discovered server on this route."""
        return server_profile(info, "responses", self.model)

    def request_for(self, messages: list[ChatMessage], options: ChatOptions) -> dict[str, Any]:
        """The `create` keyword arguments this adapter would send (for inspection and tests)."""
        warn_if_not_enforced(options, self.capabilities, "Responses")
        return request_to_wire(messages, options, model=self.model, capabilities=self.capabilities)

    def create_for(self, options: ChatOptions) -> Callable[..., Any]:
        """The function that sends this call's request: `responses.create` of the call's SDK client,
        sent as `post` (see `CreateCalls`); a background create is sent once (the SDK's own retries
        off). Override it to send the request another way, as `OpenAIChatClient.create_for`."""
        sdk = self.sdk_for(_once_if_background(options))
        return self._creates(sdk, sdk.responses)

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        token = options.continuation_token
        if token is not None:  # a poll: the run's state now
            sdk = self.sdk_for(options)
            request: dict[str, Any] = {"response_id": token.response_id}
            return await self.fetch(sdk.responses.retrieve, request, Response, lambda r: background_to_chat(r, token))
        request = self.request_for(messages, options)
        prefill = self.echoed_prefill(messages)
        to_chat = background_to_chat if options.starts_background_run else answer_to_chat
        response = await self.fetch(self.create_for(options), request, Response, lambda r: to_chat(r, prefill=prefill))
        custom = CustomToolAnswer.of(options)  # a regex or grammar answer, asked as a custom tool
        return custom.from_responses(response) if custom is not None else response

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        token = options.continuation_token
        if token is not None:  # resume the run's events after the last one the token saw
            request: dict[str, Any] = {"response_id": token.response_id}
            if token.sequence_number is not None:
                request["starting_after"] = token.sequence_number
            stream = await self.open_stream(self.sdk_for(options).responses.retrieve, request, options)
        else:
            request = self.request_for(messages, options)
            stream = await self.open_stream(self.create_for(options), request, options)
        reader: EventReader = StreamReader(prefill=self.echoed_prefill(messages))
        if options.starts_background_run or token is not None:  # updates carry tokens to resume with
            reader = ResumableReader(StreamReader(prefill=self.echoed_prefill(messages)), token, token is not None)
        custom = CustomToolAnswer.of(options)
        if custom is not None:  # the tool's input is the answer's text
            reader = CustomToolReader(reader, custom.name)
        ending = f"{Event.COMPLETED} or {Event.INCOMPLETE}"
        events = self.read_events(stream, reader, ending=ending, idle_timeout=self.idle_timeout_for(options))
        try:
            async with contextlib.aclosing(events):  # closing this stream closes the HTTP response at once
                async for update in events:
                    yield update
        except StreamInterruptedError as error:  # a background run cancelled or failed meanwhile?
            run = getattr(reader, "token", None)
            ended = await ended_run_error(self._retrieve, run) if run is not None else None
            if ended is not None:
                raise ended from error
            raise

    async def _retrieve(self, **request: Any) -> Any:
        return await call_sdk(self.is_async, self.sdk_client.responses.retrieve, **request)

    def _final_response(self, updates: Sequence[ChatResponseUpdate[Any]]) -> ChatResponse[Any]:
        return final_of_resumed(list(updates)) or ChatResponse.from_updates(updates)

    async def cancel(self, continuation_token: ContinuationToken | str) -> str:
        """Cancel a background run; returns its status after the cancel (`"cancelled"`, or how it
        ended when it had already finished). Polling a cancelled run raises `ProviderResponseError`
        with `code == "cancelled"`.

        Example: `await client.cancel(response.continuation_token)  # "cancelled"`
        """
        token = ContinuationToken.coerce(continuation_token)
        response = await call_sdk(self.is_async, self.sdk_client.responses.cancel, response_id=token.response_id)
        return str(getattr(response, "status", None) or "cancelled")

    def __repr__(self) -> str:
        kind = "AsyncOpenAI" if self.is_async else "OpenAI"
        return f"OpenAIResponsesClient({kind}(base_url={self.base_url!r}), model={self.model!r})"


def _once_if_background(options: ChatOptions) -> ChatOptions:
    """A background create the server may have accepted is never sent twice: no SDK retries
    (unless the caller chose some)."""
    if options.starts_background_run and options.sdk_max_retries is None:
        return options.replace(sdk_max_retries=0)
    return options
