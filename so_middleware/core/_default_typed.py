"""`DefaultTyped[D]`: the static type of a client made with an output type, whose calls without
`output_type` answer a `ChatResponse[D]` (`with_structured_output(client, Person)` gives a
`StructuredOutputChatClient[Person]`). Types only: at run time the class is an empty base."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Generic, Literal, overload

from typing_extensions import TypeVar

if TYPE_CHECKING:
    from typing_extensions import TypeForm

from ._continuation import ContinuationToken
from ._messages import MessageInput
from ._options import OptionsInput
from ._protocol import TypedChatStream, TypedSyncChatStream
from ._responses import ChatResponse

__all__ = ["DefaultTyped"]

D = TypeVar("D", default=Any)  # the creation-time type; Any for a client made without one
T = TypeVar("T")

if TYPE_CHECKING:

    class DefaultTyped(Generic[D]):
        """`get_response` and `get_response_sync` of `ChatClient`, a call without `output_type`
        answering the creation-time type `D` (in `ChatClient`'s order: the overloads must match)."""

        @overload
        def get_response(
            self,
            messages: MessageInput = (),
            *,
            options: OptionsInput = None,
            stream: Literal[False] = False,
            output_type: None = None,
            continuation_token: ContinuationToken | str | None = None,
        ) -> Awaitable[ChatResponse[D]]: ...
        @overload
        def get_response(
            self,
            messages: MessageInput = (),
            *,
            options: OptionsInput = None,
            stream: Literal[True],
            output_type: None = None,
            continuation_token: ContinuationToken | str | None = None,
        ) -> TypedChatStream[D]: ...
        @overload
        def get_response(
            self,
            messages: MessageInput = (),
            *,
            options: OptionsInput = None,
            stream: Literal[False] = False,
            output_type: TypeForm[T],
            continuation_token: ContinuationToken | str | None = None,
        ) -> Awaitable[ChatResponse[T]]: ...
        @overload
        def get_response(
            self,
            messages: MessageInput = (),
            *,
            options: OptionsInput = None,
            stream: Literal[True],
            output_type: TypeForm[T],
            continuation_token: ContinuationToken | str | None = None,
        ) -> TypedChatStream[T]: ...
        def get_response(self, *args: Any, **kwargs: Any) -> Any: ...

        @overload
        def get_response_sync(
            self,
            messages: MessageInput = (),
            *,
            options: OptionsInput = None,
            stream: Literal[False] = False,
            output_type: None = None,
            continuation_token: ContinuationToken | str | None = None,
        ) -> ChatResponse[D]: ...
        @overload
        def get_response_sync(
            self,
            messages: MessageInput = (),
            *,
            options: OptionsInput = None,
            stream: Literal[True],
            output_type: None = None,
            continuation_token: ContinuationToken | str | None = None,
        ) -> TypedSyncChatStream[D]: ...
        @overload
        def get_response_sync(
            self,
            messages: MessageInput = (),
            *,
            options: OptionsInput = None,
            stream: Literal[False] = False,
            output_type: TypeForm[T],
            continuation_token: ContinuationToken | str | None = None,
        ) -> ChatResponse[T]: ...
        @overload
        def get_response_sync(
            self,
            messages: MessageInput = (),
            *,
            options: OptionsInput = None,
            stream: Literal[True],
            output_type: TypeForm[T],
            continuation_token: ContinuationToken | str | None = None,
        ) -> TypedSyncChatStream[T]: ...
        def get_response_sync(self, *args: Any, **kwargs: Any) -> Any: ...

else:

    class DefaultTyped(Generic[D]):
        """Types only (see the module): nothing at run time."""

        __slots__ = ()
