"""The `ChatClient` protocol, the stream types of its calls, and `SyncCalls`, the blocking entry
points every client has.

The call signature is declared here once. `ChatClient.get_response` carries the overloads (what a
type checker sees) and the one implementation, which gathers its arguments into a `ChatCall` and
hands that to the class's `_call(call)` hook; `ChatCalls` is that protocol as a base class, which
`BaseChatClient` and `DelegatingChatClient` inherit, so neither restates the signature.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, cast, overload, runtime_checkable

from ._continuation import ContinuationToken
from ._messages import MessageInput
from ._options import OptionsInput
from ._responses import ChatResponse, ChatResponseUpdate
from ._stream import ResponseStream
from ._sync import SyncResponseStream, run_sync, sync_stream

__all__ = [
    "ChatCall",
    "ChatCalls",
    "ChatClient",
    "ChatStream",
    "SyncCalls",
    "SyncChatStream",
    "TypedChatStream",
    "TypedSyncChatStream",
]

T = TypeVar("T")

TypedChatStream = ResponseStream[ChatResponseUpdate[T], ChatResponse[T]]
TypedSyncChatStream = SyncResponseStream[ChatResponseUpdate[T], ChatResponse[T]]
ChatStream = TypedChatStream[Any]
SyncChatStream = TypedSyncChatStream[Any]


@dataclass(frozen=True)
class ChatCall:
    """One `get_response` call's arguments, as `ChatClient.get_response` hands them to a class's
    `_call` hook (the hook's one parameter, so the argument list is written out once more here
    and nowhere else)."""

    messages: MessageInput = ()
    options: OptionsInput = None
    stream: bool = False
    output_type: Any = None
    continuation_token: ContinuationToken | str | None = None


@runtime_checkable
class ChatClient(Protocol):
    """Anything that answers chat messages: a provider adapter or a stack of middleware over one.

    `get_response(...)` returns an awaitable `ChatResponse`, or with `stream=True` a
    `ResponseStream` at once. `output_type=T` asks for a typed value; a structured-output layer
    in the stack must handle it. `continuation_token=` polls (or with `stream=True` resumes) a
    background run started with `options={"background": True}`; messages may be left out then.

    Static types: an `output_type` that is a class (`Person`, `int`, `str`, a TypedDict, and
    parametrised classes such as `list[Person]` or `dict[str, int]`) gives `ChatResponse[T]`
    (`ResponseStream[ChatResponseUpdate[T], ChatResponse[T]]` with `stream=True`), so
    `response.value` is a `Person`. Other type forms (`Person | None`, `Optional[...]`,
    `Annotated[...]`, `Literal[...]`) are not classes, cannot bind a `type[T]` parameter in mypy or
    pyright, and give `ChatResponse[Any]`, as does a call without `output_type` (mypy also gives
    `Any` for an abstract class). Annotate the result (`value: Person | None = response.value`)
    to keep a type there.

    Example:
        response = await client.get_response("Ada, 36", output_type=Person)
        response.value.name  # `Person` to the type checker
    """

    @overload
    def get_response(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: type[T],
        continuation_token: ContinuationToken | str | None = None,
    ) -> Awaitable[ChatResponse[T]]: ...

    @overload
    def get_response(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[True],
        output_type: type[T],
        continuation_token: ContinuationToken | str | None = None,
    ) -> TypedChatStream[T]: ...

    @overload
    def get_response(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: Any = None,
        continuation_token: ContinuationToken | str | None = None,
    ) -> Awaitable[ChatResponse[Any]]: ...

    @overload
    def get_response(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[True],
        output_type: Any = None,
        continuation_token: ContinuationToken | str | None = None,
    ) -> ChatStream: ...

    def get_response(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: bool = False,
        output_type: Any = None,
        continuation_token: ContinuationToken | str | None = None,
    ) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """Send `messages` to the model (see `ChatClient`); a class inheriting `ChatCalls` answers
        in its `_call` hook, given the arguments as one `ChatCall`."""
        call = ChatCall(messages, options, stream, output_type, continuation_token)
        return cast(_Dispatching, self)._call(call)


class _Dispatching(Protocol):
    """What `ChatCalls.get_response` calls: the hook of the class that inherits it."""

    def _call(self, call: ChatCall) -> Awaitable[ChatResponse[Any]] | ChatStream: ...


if TYPE_CHECKING:
    ChatCalls = ChatClient
else:

    class ChatCalls:
        """`ChatClient`'s typed `get_response` as a plain base class: a class inherits it and
        implements `_call(call)`. Plain because wrapt's pure-Python proxy cannot take a `Protocol` among
        its bases (metaclass conflict); type checkers see `ChatClient` itself."""

        get_response = ChatClient.get_response


class SyncCalls:
    """The blocking entry points of a client, over its `get_response` (the adapters' base and every
    layer have them)."""

    @overload
    def get_response_sync(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: type[T],
        continuation_token: ContinuationToken | str | None = None,
    ) -> ChatResponse[T]: ...

    @overload
    def get_response_sync(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[True],
        output_type: type[T],
        continuation_token: ContinuationToken | str | None = None,
    ) -> TypedSyncChatStream[T]: ...

    @overload
    def get_response_sync(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: Any = None,
        continuation_token: ContinuationToken | str | None = None,
    ) -> ChatResponse[Any]: ...

    @overload
    def get_response_sync(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[True],
        output_type: Any = None,
        continuation_token: ContinuationToken | str | None = None,
    ) -> SyncChatStream: ...

    def get_response_sync(
        self,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: bool = False,
        output_type: Any = None,
        continuation_token: ContinuationToken | str | None = None,
    ) -> ChatResponse[Any] | SyncChatStream:
        """Blocking `get_response` for scripts; with `stream=True` a `SyncResponseStream` to iterate
        with `for`. Raises `UserError` inside a running event loop."""
        client = cast(ChatClient, self)  # every class that mixes this in is a ChatClient
        token = continuation_token
        if stream:
            return sync_stream(
                lambda: client.get_response(
                    messages, options=options, stream=True, output_type=output_type, continuation_token=token
                )
            )
        return run_sync(
            lambda: client.get_response(messages, options=options, output_type=output_type, continuation_token=token)
        )
