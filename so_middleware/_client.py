"""The `ChatClient` protocol, capability profiles, and the base of every provider adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, Protocol, TypeVar, Union, overload, runtime_checkable

from ._exceptions import UserError
from ._options import ChatOptions, OptionsInput
from ._stream import ResponseStream
from ._sync import run_sync
from ._types import ChatMessage, ChatResponse, ChatResponseUpdate, MessageInput, as_messages

__all__ = [
    "BaseChatClient",
    "Capabilities",
    "ChatClient",
    "ChatStream",
    "Feature",
    "as_chat_client",
]

K = TypeVar("K")

ChatStream = ResponseStream[ChatResponseUpdate[Any], ChatResponse[Any]]
SchemaProfileName = Literal["openai-strict", "anthropic", "json-schema"]


@runtime_checkable
class ChatClient(Protocol):
    """Anything that answers chat messages: a provider adapter or a stack of middleware over one.

    `get_response(...)` returns an awaitable `ChatResponse`, or with `stream=True` a
    `ResponseStream` at once. `output_type=T` asks for a typed value; a structured-output layer
    in the stack must handle it.
    """

    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: Any = None,
    ) -> Awaitable[ChatResponse[Any]]: ...

    @overload
    def get_response(
        self, messages: MessageInput, *, options: OptionsInput = None, stream: Literal[True], output_type: Any = None
    ) -> ChatStream: ...

    def get_response(
        self, messages: MessageInput, *, options: OptionsInput = None, stream: bool = False, output_type: Any = None
    ) -> Awaitable[ChatResponse[Any]] | ChatStream: ...


class Feature:
    """Base for feature objects travelling in `options["features"]`.

    `handled_by` names the factory of the layer that must consume the feature; an adapter that
    receives such a feature unconsumed raises `UserError` instead of silently ignoring it.
    Features that need no layer leave it `None`. Any object can be a feature; this base only
    adds that check.
    """

    handled_by: ClassVar[str | None] = None


@dataclass(frozen=True)
class Capabilities:
    """What a backend honours, so strategies are chosen by facts, not by provider names.

    Override per client: `OpenAIChatClient(sdk, model, capabilities=LLAMA_SERVER.replace(...))`.
    """

    name: str = "generic"
    native_json_schema: bool = False  # the schema is enforced (constrained decoding)
    json_object: bool = False  # JSON mode is enforced
    tools: bool = False  # function tools are supported
    forced_tool_choice: bool = False  # tool_choice naming one tool is honoured
    strict_tools: bool = False  # tool arguments are schema-enforced
    assistant_prefill: bool = False  # a trailing assistant message is continued
    prefill_echoed: bool = False  # ... and its text is echoed back at the start of the answer
    response_format_passthrough: bool = False  # Responses route honours a Chat Completions response_format key
    schema_profile: SchemaProfileName = "json-schema"

    def replace(self, **changes: Any) -> Capabilities:
        """A copy with some flags changed."""
        return replace(self, **changes)


class BaseChatClient:
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

    async def discover_capabilities(self) -> Capabilities:
        """The capability profile, once the server behind the adapter is identified.

        Adapters given no `capabilities=` over a server that is not a known hosted API identify
        it on first use (see `so_middleware.providers.ServerInfo`); others return their profile
        as is. Layers call this before planning a request.

        Example: `profile = await client.discover_capabilities()`.
        """
        return self.capabilities

    def disable_sdk_retries(self) -> None:
        """Turn off the SDK's own retries (a retry layer above does them instead).

        Adapters over an SDK client replace it with `sdk.with_options(max_retries=0)`.
        """
        return

    @overload
    def get_response(
        self,
        messages: MessageInput,
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: Any = None,
    ) -> Awaitable[ChatResponse[Any]]: ...

    @overload
    def get_response(
        self, messages: MessageInput, *, options: OptionsInput = None, stream: Literal[True], output_type: Any = None
    ) -> ChatStream: ...

    def get_response(
        self, messages: MessageInput, *, options: OptionsInput = None, stream: bool = False, output_type: Any = None
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Send `messages` to the model; see `ChatClient`."""
        if output_type is not None:
            raise UserError(
                f"output_type={output_type!r} needs a structured-output layer: "
                "wrap the client with so_middleware.with_structured_output(client)"
            )
        chat_messages = as_messages(messages)
        chat_options = ChatOptions.coerce(options)
        _reject_unhandled_features(chat_options)
        if self.discovery_pending:
            if stream:
                return ResponseStream(self._stream_discovered(chat_messages, chat_options), ChatResponse.from_updates)
            return self._respond_discovered(chat_messages, chat_options)
        if stream:
            return ResponseStream(self._stream(chat_messages, chat_options), ChatResponse.from_updates)
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

    def get_response_sync(
        self, messages: MessageInput, *, options: OptionsInput = None, output_type: Any = None
    ) -> ChatResponse[Any]:
        """Blocking `get_response` for scripts. Raises `UserError` inside a running event loop."""
        return run_sync(lambda: self.get_response(messages, options=options, output_type=output_type))

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        raise NotImplementedError

    def _stream(self, messages: list[ChatMessage], options: ChatOptions) -> AsyncIterator[ChatResponseUpdate[Any]]:
        raise NotImplementedError

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


def _reject_unhandled_features(options: ChatOptions) -> None:
    for feature in options.features:
        layer = getattr(type(feature), "handled_by", None)
        if layer:
            raise UserError(
                f"{type(feature).__name__} reached the provider adapter without a layer to handle it; "
                f"wrap the client with so_middleware.{layer}(client)"
            )


ClientInput = Union[ChatClient, Any]


def as_chat_client(client: ClientInput, **adapter_options: Any) -> ChatClient:
    """Return `client` as a `ChatClient`: a ChatClient as is, a raw SDK client wrapped in its adapter.

    `OpenAI()`/`AsyncOpenAI()` get the Chat Completions adapter (`api="responses"` for the
    Responses one), `Anthropic()`/`AsyncAnthropic()` the Messages adapter. Anything else raises
    `UserError` naming its type.
    """
    if isinstance(client, ChatClient) and not adapter_options:
        return client
    module = type(client).__module__.split(".")[0]
    # Provider packages sit above core and import their SDK; they are loaded only when needed.
    if module == "openai":
        from .providers.openai import adapter_for

        return adapter_for(client, **adapter_options)
    if module == "anthropic":
        from .providers.anthropic import adapter_for as anthropic_adapter_for

        return anthropic_adapter_for(client, **adapter_options)
    if isinstance(client, ChatClient):
        raise UserError(
            f"{type(client).__name__} is already a ChatClient; adapter options {sorted(adapter_options)} do not apply"
        )
    raise UserError(
        f"expected a ChatClient or an openai/anthropic SDK client, got {type(client).__module__}.{type(client).__qualname__}"
    )
