"""`BaseChatClient`, the base of every provider adapter, and `as_chat_client` (the protocol itself is
in `_protocol`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from types import BuiltinFunctionType, FunctionType, MethodType
from typing import Any, ClassVar, TypeVar

from ._background import check_background, with_continuation
from ._capabilities import Capabilities
from ._exceptions import UserError
from ._messages import ChatMessage, as_messages
from ._options import ChatOptions
from ._protocol import (
    ChatCall,
    ChatCalls,
    ChatClient,
    ChatStream,
    SyncCalls,
    SyncChatStream,
    TypedChatStream,
    TypedSyncChatStream,
)
from ._registry import adapter_factory
from ._responses import ChatResponse, ChatResponseUpdate
from ._sendable import check_sendable, mend_surrogates
from ._stream import ResponseStream

__all__ = [
    "BaseChatClient",
    "ChatCall",
    "ChatCalls",
    "ChatClient",
    "ChatStream",
    "SyncCalls",
    "SyncChatStream",
    "TypedChatStream",
    "TypedSyncChatStream",
    "as_chat_client",
    "streams_fresh_updates",
]

K = TypeVar("K")


class BaseChatClient(ChatCalls, SyncCalls):
    """Base of the provider adapters: normalises input once and dispatches to two hooks.

    Subclasses implement `_respond(messages, options)` (a coroutine) and
    `_stream(messages, options)` (an async generator of updates). Nothing runs before a
    stream is iterated.
    """

    provider_name: ClassVar[str] = "unknown"  # gen_ai.provider.name: "openai", "anthropic", ...
    capabilities: Capabilities = Capabilities()
    model: str | None = None  # the default model, when the adapter has one
    base_url: str | None = None  # where requests go, for telemetry's server.address/port
    discovery_pending: bool = False  # the server is to be identified before the first request
    supports_background: ClassVar[bool] = False  # long-running runs: `background` and continuation tokens
    # The `_stream` whose updates are new objects no one else keeps (set by an adapter to its own
    # `_stream`): the layer right above may fill them in place. A subclass overriding `_stream` is not covered.
    fresh_stream: ClassVar[Any] = None

    async def discover_capabilities(self) -> Capabilities:
        """The capability profile, once the server behind the adapter is identified.

        Adapters given no `capabilities=` over a server that is not a known hosted API identify
        it on first use (see `so_middleware.providers.ServerInfo`); others return their profile
        as is. Layers call this before planning a request.

        Example: `profile = await client.discover_capabilities()`.
        """
        return self.capabilities

    def _call(self, call: ChatCall) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """`get_response`'s work (its arguments as one `ChatCall`): normalise, check, dispatch."""
        if call.output_type is not None:
            raise UserError(
                f"output_type={call.output_type!r} needs a structured-output layer: "
                "wrap the client with so_middleware.with_structured_output(client)"
            )
        stream = call.stream
        chat_messages = as_messages(call.messages)
        chat_options = call.options
        if call.continuation_token is not None or not isinstance(chat_options, ChatOptions):
            chat_options = with_continuation(chat_options, call.continuation_token)  # a layer above coerced them
        if chat_options.background or chat_options.continuation_token is not None:
            check_background(self, chat_options)
        check_sendable(chat_messages, chat_options)
        chat_messages = mend_surrogates(chat_messages, roles=("assistant",))  # the model's own text, sent back
        _reject_unhandled_features(chat_options)
        if self.discovery_pending:
            if stream:
                return ResponseStream(self._stream_discovered(chat_messages, chat_options), self._final_response)
            return self._respond_discovered(chat_messages, chat_options)
        if stream:
            return ResponseStream(self._stream(chat_messages, chat_options), self._final_response)
        return self._respond(chat_messages, chat_options)

    async def _respond_discovered(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        await self.discover_capabilities()
        return await self._respond(messages, options)

    async def _stream_discovered(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        await self.discover_capabilities()
        async for update in self._stream(messages, options):
            yield update

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        raise NotImplementedError

    def _stream(self, messages: list[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatResponseUpdate[Any]]:
        raise NotImplementedError

    def _final_response(self, updates: Sequence[ChatResponseUpdate[Any]]) -> ChatResponse[Any]:
        """A stream's final response from its updates (an adapter resuming streams overrides it)."""
        return ChatResponse.from_updates(updates)

    def get_service(self, kind: type[K]) -> K | None:
        """This client if it is a `kind`, else None (adapters also offer their SDK client)."""
        return self if isinstance(self, kind) else None

    async def __aenter__(self) -> BaseChatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    def __enter__(self) -> BaseChatClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


def streams_fresh_updates(client: object) -> bool:
    """True when `client` is an adapter whose streamed updates are objects made for that stream
    alone, that nothing else keeps (its class's `_stream` is the one it declares in `fresh_stream`):
    the layer right above it may then fill in an update in place instead of copying it.

    Example: `streams_fresh_updates(OllamaChatClient(ollama.AsyncClient()))` is True; a layer over it is not.
    """
    cls = type(client)
    declared = getattr(cls, "fresh_stream", None)
    return declared is not None and declared is getattr(cls, "_stream", None)


def _reject_unhandled_features(options: ChatOptions) -> None:
    for feature in options.features:
        layer = getattr(type(feature), "handled_by", None)
        if layer:
            raise UserError(
                f"{type(feature).__name__} reached the provider adapter without a layer to handle it; "
                f"wrap the client with so_middleware.{layer}(client)"
            )


ClientInput = ChatClient | Any


def as_chat_client(client: ClientInput, **adapter_options: Any) -> ChatClient:
    """Return `client` as a `ChatClient`: a ChatClient as is, a raw SDK client wrapped in its adapter.

    `OpenAI()`/`AsyncOpenAI()` get the Chat Completions adapter (`api="responses"` for the
    Responses one), `Anthropic()`/`AsyncAnthropic()` the Messages adapter. Anything else raises
    `UserError` naming its type; a class or a function passed in place of the client it makes
    (`AsyncOpenAI`, `so_middleware.local.chat_client`) raises `UserError` saying to call it.
    """
    if isinstance(client, (type, FunctionType, MethodType, BuiltinFunctionType)):
        kind = "class" if isinstance(client, type) else "function"
        raise UserError(
            f"expected a client, got the {kind} {client.__module__}.{client.__qualname__} itself; "
            f"pass the client it makes: {client.__name__}(...)"
        )
    if isinstance(client, ChatClient) and not adapter_options:
        return client
    factory = adapter_factory(client)
    if factory is not None:
        return factory(client, **adapter_options)  # type: ignore[no-any-return]
    if isinstance(client, ChatClient):
        raise UserError(
            f"{type(client).__name__} is already a ChatClient; adapter options {sorted(adapter_options)} do not apply"
        )
    raise UserError(
        f"expected a ChatClient or an openai/anthropic SDK client, got {type(client).__module__}.{type(client).__qualname__}"
    )
