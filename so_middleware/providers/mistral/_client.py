"""`MistralChatClient`: Mistral's chat API adapter, over `mistralai`'s `chat.complete_async` and
`chat.stream_async`.

The SDK client's async methods make every call (through its own request path, `_post.send`), so one `Mistral` client serves both the async calls
and the `*_sync` entry points (which run on so_middleware's own loop). The SDK's own retries are off
for each call (the retries layer retries, by the classification of the error), and the call's
deadline becomes the request's timeout. A request goes through the codec in
`so_middleware.wire.mistral`; every field is checked against the SDK's own call before any request.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from mistralai.client import Mistral

from ...core import (
    BaseChatClient,
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    UserError,
    redact_url,
    seconds_left,
)
from ...wire.mistral import MistralStreamReader, call_ids_to_wire, request_to_wire, response_from_wire
from ...wire.prefill import prefill_of
from .._chunks import read_chunks
from .._sdk_client import DEFAULT_IDLE_TIMEOUT, seconds_or_none
from .._sdk_use import sdk_boundary
from ._post import can_send, send
from ._profiles import profile_for

__all__ = ["DEFAULT_IDLE_TIMEOUT", "MistralChatClient"]

# What the caller may not set through `extra_body`, and what to do instead.
_FIXES = {
    "seed": "use the 'seed' option (sent as Mistral's random_seed)",
    "logit_bias": "Mistral has no logit bias: remove it",
    "max_completion_tokens": "use the 'max_tokens' option",
    "response_format": "use the 'response_format' option",
    "stream": "call get_response(..., stream=True)",
    "retries": "leave retries to with_retries (the SDK's own are off)",
    "server_url": "make the Mistral client with server_url=...",
    "timeout_ms": "use with_retries(deadline=...) (the call's deadline becomes the request's timeout)",
}


class MistralChatClient(BaseChatClient):
    """A ChatClient over a `mistralai.client.Mistral` client (Mistral's chat completions).

    Structured output goes native, as `response_format` json_schema with `strict: true` in the
    `"mistral"` dialect (`MISTRAL_API`); `capabilities=` overrides the profile.

    Example:
        client = MistralChatClient(Mistral(api_key=key), "mistral-small-latest")
        response = await client.get_response("Hello", options={"instructions": "Be brief."})
        print(response.text, response.usage, response.finish_reason)
    """

    provider_name: ClassVar[str] = "mistral_ai"

    def __init__(
        self,
        sdk_client: Mistral,
        model: str | None = None,
        *,
        capabilities: Capabilities | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        given: object = sdk_client  # typed as the SDK's, but a caller may pass anything
        if not isinstance(given, Mistral):
            raise UserError(f"MistralChatClient needs a mistralai.client.Mistral, not {type(given).__name__}")
        self.sdk_client = sdk_client
        self.model = model
        self.base_url = redact_url(sdk_client.sdk_configuration.get_server_details()[0])
        self.idle_timeout = seconds_or_none("idle_timeout", idle_timeout)
        self.capabilities = capabilities or profile_for(model)

    def request_for(
        self, messages: list[ChatMessage], options: ChatOptions, call_ids: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The `chat.complete_async` keyword arguments this adapter would send (for inspection and
        tests); a field Mistral does not have is a `UserError` naming it and the fix. `call_ids`:
        Mistral's id for each call id it would refuse (`call_ids_to_wire(messages)` when not given)."""
        if options.sdk_max_retries:
            raise UserError(
                "Mistral's SDK retries by elapsed time, not by count: drop sdk_max_retries "
                "and wrap the client with with_retries(...)"
            )
        for name in options.extra_body or ():
            if name in _FIXES or name not in _accepted():
                fix = _FIXES.get(name, "remove it, or use a field of Mistral's chat API")
                raise UserError(f"Mistral's chat has no extra_body field {name!r}: {fix}")
        request = request_to_wire(messages, options, model=self.model, call_ids=call_ids)
        request["retries"] = None  # the SDK's own retries: off (None is "no retry config" to it)
        left = seconds_left()
        if left is not None:
            request["timeout_ms"] = max(1, math.ceil(left * 1000))
        return request

    def _answer_keys(self, messages: list[ChatMessage]) -> tuple[dict[str, str], str, dict[str, str]]:
        """Mistral's ids for the caller's call ids, the prefill the answer repeats first, and the
        caller's id for each of Mistral's ids (to give the caller its own ids back)."""
        call_ids = call_ids_to_wire(messages)
        prefill = prefill_of(messages) if self.capabilities.prefill_echoed else ""
        return call_ids, prefill, {wire_id: call_id for call_id, wire_id in call_ids.items()}

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        call_ids, prefill, caller_ids = self._answer_keys(messages)
        request = self.request_for(messages, options, call_ids)
        chat = self.sdk_client.chat
        with sdk_boundary(self.sdk_client, is_async=True):
            if options.extra_body or not can_send(chat, "complete_async"):
                answer = await chat.complete_async(**request)
            else:
                answer = await send(chat, request, stream=False)
        return response_from_wire(answer, prefill=prefill, caller_ids=caller_ids)

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        call_ids, prefill, caller_ids = self._answer_keys(messages)
        request = self.request_for(messages, options, call_ids)
        reader = MistralStreamReader(prefill=prefill, caller_ids=caller_ids)
        idle = options.idle_timeout if options.idle_timeout is not None else self.idle_timeout
        chat = self.sdk_client.chat
        with sdk_boundary(self.sdk_client, is_async=True):
            if options.extra_body or not can_send(chat, "stream_async"):
                events = await chat.stream_async(**request)
            else:
                events = await send(chat, request, stream=True)
            updates = read_chunks(_closing(events), reader, idle=idle, source="Mistral")
            async with contextlib.aclosing(updates):  # closing this stream closes the SDK's at once
                async for update in updates:
                    yield update

    fresh_stream = _stream  # its reader makes a new update for every chunk

    def __repr__(self) -> str:
        return f"MistralChatClient(Mistral(server_url={self.base_url!r}), model={self.model!r})"


async def _closing(events: Any) -> AsyncIterator[Any]:
    """The SDK's event stream as an async generator (it has `close()`, not `aclose()`): closed on any exit."""
    try:
        async for event in events:
            yield event
    finally:
        await events.close()


@functools.cache
def _accepted() -> frozenset[str]:
    """The keyword arguments of the SDK's `Chat.complete_async`, read once from its signature."""
    from mistralai.client.chat import Chat

    return frozenset(inspect.signature(Chat.complete_async).parameters) - {"self"}
