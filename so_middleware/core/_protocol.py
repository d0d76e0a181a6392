"""The `ChatClient` protocol, the stream types of its calls, and `SyncCalls`, the blocking entry
points every client has.

The call signature is written once, in `_Signature`: its overloads are what a type checker sees,
each naming what `get_response` returns and what `get_response_sync` returns for that call.
`ChatClient.get_response` and `SyncCalls.get_response_sync` take their static types from it, and
each has one implementation: `get_response` gathers its arguments into a `ChatCall` and hands that
to the class's `_call(call)` hook. `ChatCalls` is that protocol as a base class, which
`BaseChatClient` and `DelegatingChatClient` inherit, so neither restates the signature.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, Protocol, TypeVar, cast, overload, runtime_checkable

from ._continuation import ContinuationToken
from ._messages import MessageInput
from ._options import OptionsInput
from ._responses import ChatResponse, ChatResponseUpdate
from ._stream import ResponseStream
from ._sync import SyncResponseStream, run_sync, sync_stream

if TYPE_CHECKING:
    from typing_extensions import TypeForm

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

Async = TypeVar("Async")
Blocking = TypeVar("Blocking")
P = ParamSpec("P")
F = TypeVar("F", bound=Callable[..., Any])


class _Twin(Generic[Async, Blocking]):
    """Types only: what one call returns from an async entry point (`Async`) and from its blocking
    twin (`Blocking`), so one list of overloads serves both (see `_async_side`, `_blocking_side`)."""


def _async_side(signature: Callable[P, _Twin[Async, Blocking]]) -> Callable[P, Async]:
    """`signature` as the async entry point sees it: each overload's result is its `Async` half.
    Both type checkers map every overload of `signature` (a `ParamSpec` keeps overloads apart)."""
    return cast("Callable[P, Async]", signature)


def _blocking_side(signature: Callable[P, _Twin[Async, Blocking]]) -> Callable[P, Blocking]:
    """`signature` as the blocking twin sees it: each overload's result is its `Blocking` half."""
    return cast("Callable[P, Blocking]", signature)


def typed_as(signature: F) -> Callable[[Callable[..., Any]], F]:
    """Give the decorated implementation the static type of `signature` (its overloads); at run
    time the implementation is returned as written, so a call through it costs nothing more."""
    return lambda implementation: cast(F, implementation)


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


class _Signature(Protocol):
    """The call signature of `get_response` and `get_response_sync`, written once.

    `output_type` is any type form (PEP 747's `TypeForm`: a class, `list[Person]`, `Person | None`,
    `Annotated[...]`, `Literal[...]`), whose type the response's value takes; left out (or None),
    the value is `Any`. Two overloads per `stream` rather than one with `T` defaulting to `Any`:
    pyright does not apply a `TypeVar`'s default through the `ParamSpec` that maps these
    overloads onto both entry points (`_async_side`, `_blocking_side`), and leaves it unsolved.
    """

    @overload
    def get_response(
        self: Any,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: None = None,
        continuation_token: ContinuationToken | str | None = None,
    ) -> _Twin[Awaitable[ChatResponse[Any]], ChatResponse[Any]]: ...

    @overload
    def get_response(
        self: Any,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[True],
        output_type: None = None,
        continuation_token: ContinuationToken | str | None = None,
    ) -> _Twin[ChatStream, SyncChatStream]: ...

    @overload
    def get_response(
        self: Any,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[False] = False,
        output_type: TypeForm[T],
        continuation_token: ContinuationToken | str | None = None,
    ) -> _Twin[Awaitable[ChatResponse[T]], ChatResponse[T]]: ...

    @overload
    def get_response(
        self: Any,
        messages: MessageInput = (),
        *,
        options: OptionsInput = None,
        stream: Literal[True],
        output_type: TypeForm[T],
        continuation_token: ContinuationToken | str | None = None,
    ) -> _Twin[TypedChatStream[T], TypedSyncChatStream[T]]: ...


# Named before use: pyright infers a nested `typed_as(_async_side(...))` from the decorator's
# expected type and loses `T`.
_get_response = _async_side(_Signature.get_response)
_get_response_sync = _blocking_side(_Signature.get_response)


@runtime_checkable
class ChatClient(Protocol):
    """Anything that answers chat messages: a provider adapter or a stack of middleware over one.

    `get_response(...)` returns an awaitable `ChatResponse`, or with `stream=True` a
    `ResponseStream` at once. `output_type=T` asks for a typed value; a structured-output layer
    in the stack must handle it. `continuation_token=` polls (or with `stream=True` resumes) a
    background run started with `options={"background": True}`; messages may be left out then.

    Static types: `output_type=T` gives `ChatResponse[T]` (`ResponseStream[ChatResponseUpdate[T],
    ChatResponse[T]]` with `stream=True`) for any type form (PEP 747's `TypeForm`): a class
    (`Person`, `int`, a TypedDict, an abstract class), `list[Person]`, `Person | None`,
    `Annotated[int, ...]` (an `int`), `Literal["a", "b"]`; so `response.value` is a `Person`.
    A call without `output_type` gives `ChatResponse[Any]`.

    Example:
        response = await client.get_response("Ada, 36", output_type=Person)
        response.value.name  # `Person` to the type checker
    """

    @typed_as(_get_response)
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

    @typed_as(_get_response_sync)
    def get_response_sync(self, *args: Any, **kwargs: Any) -> Any:
        """Blocking `get_response` for scripts, with its arguments; with `stream=True` a
        `SyncResponseStream` to iterate with `for`. Raises `UserError` inside a running event loop."""
        # every class that mixes this in is a ChatClient; the arguments were checked against the
        # overloads at the call, so here they are only passed on
        get_response: Callable[..., Any] = cast(ChatClient, self).get_response
        if kwargs.get("stream"):
            return sync_stream(lambda: get_response(*args, **kwargs))
        return run_sync(lambda: get_response(*args, **kwargs))


def show_parameters_of(model: Callable[..., Any], twin: Callable[..., Any]) -> None:
    """Make `inspect.signature(twin)` (`help()`, an editor reading the live object) show `model`'s
    parameters, where `twin` is written `(*args, **kwargs)` and typed from `model`'s overloads."""
    twin.__signature__ = inspect.signature(model)  # type: ignore[attr-defined]  # pyright: ignore[reportFunctionMemberAccess]


show_parameters_of(ChatClient.get_response, SyncCalls.get_response_sync)
