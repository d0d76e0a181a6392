"""`DelegatingChatClient`, the base of every middleware layer, and `chain`, which stacks them.

A layer is a `wrapt.BaseObjectProxy` around its inner client: it overrides a hook per verb,
`respond(call)` for a plain call and `stream(call)` for a streamed one (each given one `LayerCall`,
its options a `ChatOptions` coerced once), only the ones it changes, and passes every other
attribute through, so any stack still exposes the innermost client's `model`, its SDK client and
its `capabilities`, and `isinstance(layer, type(innermost))` holds.

Order: the outermost layer runs first. In
`with_telemetry(with_retries(with_structured_output(client)))` a call goes telemetry → retries →
structured output → client, and the response comes back the other way. `chain(client,
with_telemetry, with_retries, with_structured_output)` builds the same stack.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import wrapt

from ._background import with_continuation
from ._client import ChatCall, ChatCalls, ChatClient, ChatStream, SyncCalls, as_chat_client
from ._exceptions import UserError
from ._messages import MessageInput
from ._options import ChatOptions
from ._responses import ChatResponse

__all__ = ["DelegatingChatClient", "LayerCall", "chain"]

K = TypeVar("K")


@dataclasses.dataclass(frozen=True, slots=True)
class LayerCall:
    """One call as a layer's `respond` and `stream` hooks receive it: `options` is a
    `ChatOptions`, coerced once where the call entered the layer (a `continuation_token` is among
    them, as `options.continuation_token`). Frozen: change a copy (`call.replace(options=...)`).

    Example: `await super().respond(call.replace(options=call.options.replace(temperature=0)))`.
    """

    messages: MessageInput
    options: ChatOptions
    output_type: Any = None

    def replace(self, **changes: Any) -> LayerCall:
        """A copy with `changes` (`messages=`, `options=`, `output_type=`)."""
        if changes.keys() - _LAYER_CALL_FIELDS:
            return dataclasses.replace(self, **changes)  # its TypeError names the unknown field
        get = changes.get  # on every layer of every call: no dataclasses.replace machinery
        return LayerCall(
            get("messages", self.messages), get("options", self.options), get("output_type", self.output_type)
        )


_LAYER_CALL_FIELDS = frozenset(("messages", "options", "output_type"))


class DelegatingChatClient(wrapt.BaseObjectProxy, ChatCalls, SyncCalls):  # type: ignore[type-arg]
    """Pass-through layer: subclasses override `respond` (a plain call), `stream` (a streamed
    one), or both, and nothing else they don't change.

    State of a layer is stored as `self._self_<name>`. Setting any other name that is not an
    attribute of the layer's class (`self.calls = 0`, `client.model = "x"`) raises
    `AttributeError`: through wrapt it would land, silently, on the wrapped client. To change
    the wrapped client, set it there: `client.get_service(OpenAIChatClient).model = "x"`.
    Reading passes through as before (`client.model`). Layers are found with `get_service(kind)`,
    not `isinstance`, which sees through the proxy to the innermost client.

    Example:
        class PrintingChatClient(DelegatingChatClient):
            async def respond(self, call: LayerCall) -> ChatResponse[Any]:
                print("calling the model")
                return await super().respond(call)
    """

    def __init__(self, inner: ChatClient | Any) -> None:
        super().__init__(as_chat_client(inner))
        # a layer below that runs its hooks behind the same `get_response` and `_call`: a call is
        # handed to its hook as it is (no second `ChatCall`, no second dispatch)
        below = type(self.__wrapped__)
        self._self_hooks_below = (
            issubclass(below, DelegatingChatClient)
            and below.get_response is DelegatingChatClient.get_response
            and below._call is DelegatingChatClient._call
        )

    def __setattr__(self, name: str, value: Any) -> None:
        # wrapt writes any other name onto the wrapped client: a layer's state would be shared
        # with (and clobber) the client's own, and a caller's write would skip the layers unseen.
        if not name.startswith(("_self_", "__")) and not hasattr(type(self), name):
            innermost = self.__wrapped__
            while issubclass(type(innermost), DelegatingChatClient):  # type(): isinstance sees through
                innermost = innermost.__wrapped__
            inner = type(innermost).__name__
            raise AttributeError(
                f"cannot set {name!r} on the layer {type(self).__name__}: a layer keeps its own state in "
                f"self._self_{name}, and a wrapped client's attribute is set on that client "
                f"(client.get_service({inner}).{name} = ...)"
            )
        super().__setattr__(name, value)

    @property
    def inner_client(self) -> ChatClient:
        """The client this layer wraps."""
        return self.__wrapped__  # type: ignore[no-any-return]

    def _call(self, call: ChatCall) -> Awaitable[ChatResponse[Any]] | ChatStream:
        """`get_response`'s work (its arguments as one `ChatCall`, the same on every layer): the
        options coerced once (bad ones raise `UserError` here, before any layer runs), a
        `continuation_token` among them, then the hook of the verb."""
        options = call.options
        if call.continuation_token is not None:
            options = with_continuation(options, call.continuation_token)
        elif not isinstance(options, ChatOptions):
            options = ChatOptions.coerce(options)
        layer_call = LayerCall(call.messages, options, call.output_type)
        return self.stream(layer_call) if call.stream else self.respond(layer_call)

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """A plain call: what this layer does with it (the default passes it on unchanged,
        options and features included). Override it as `async def respond(self, call)`."""
        if self._self_hooks_below:
            return self.__wrapped__.respond(call)  # type: ignore[no-any-return]
        return self.__wrapped__.get_response(  # type: ignore[no-any-return]
            call.messages, options=call.options, output_type=call.output_type
        )

    def stream(self, call: LayerCall) -> ChatStream:
        """A streamed call: return its `ResponseStream` at once (the default passes the call on
        unchanged; `ResponseStream.map` rewrites the inner stream's updates and final response)."""
        if self._self_hooks_below:
            return self.__wrapped__.stream(call)  # type: ignore[no-any-return]
        return self.__wrapped__.get_response(  # type: ignore[no-any-return]
            call.messages, options=call.options, stream=True, output_type=call.output_type
        )

    def passing_on(self, call: LayerCall) -> Callable[..., Any]:
        """The call passed on unchanged, as a function of `stream`: for a layer that makes the inner
        call inside code shared by both verbs (a span or a log record around it).

        Example: `response = await self.passing_on(call)(stream=False)`.
        """
        return functools.partial(_pass_on, self, call)

    def get_service(self, kind: type[K]) -> K | None:
        """The first client in the stack, from here inwards, whose own type is a `kind`."""
        if issubclass(type(self), kind):  # type(): isinstance() would match the innermost client
            return self  # type: ignore[return-value]
        inner = self.__wrapped__
        get_service = getattr(inner, "get_service", None)
        if get_service is not None:
            return get_service(kind)  # type: ignore[no-any-return]
        return inner if isinstance(inner, kind) else None

    async def __aenter__(self) -> DelegatingChatClient:
        enter = getattr(self.__wrapped__, "__aenter__", None)
        if enter is not None:
            await enter()
        return self  # wrapt would return the inner client's result: every layer bypassed

    async def __aexit__(self, *exc_info: Any) -> None:
        leave = getattr(self.__wrapped__, "__aexit__", None)
        if leave is not None:
            await leave(*exc_info)

    def __enter__(self) -> DelegatingChatClient:
        enter = getattr(self.__wrapped__, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        leave = getattr(self.__wrapped__, "__exit__", None)
        if leave is not None:
            leave(*exc_info)

    def __copy__(self) -> DelegatingChatClient:
        """The same layer class and configuration over a shallow copy of the inner client."""
        clone = type(self).__new__(type(self))
        wrapt.BaseObjectProxy.__init__(clone, copy.copy(self.__wrapped__))
        for name, value in _layer_state(self).items():
            setattr(clone, name, value)  # `_self_` names land on the proxy
        return clone

    def __deepcopy__(self, memo: dict[int, Any]) -> DelegatingChatClient:
        clone = type(self).__new__(type(self))
        wrapt.BaseObjectProxy.__init__(clone, copy.deepcopy(self.__wrapped__, memo))
        for name, value in _layer_state(self).items():
            setattr(clone, name, copy.deepcopy(value, memo))
        return clone

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError(f"{type(self).__name__} cannot be pickled: it wraps a live client")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__wrapped__!r})"


def _pass_on(
    layer: DelegatingChatClient, call: LayerCall, *, stream: bool
) -> Awaitable[ChatResponse[Any]] | ChatStream:
    return DelegatingChatClient.stream(layer, call) if stream else DelegatingChatClient.respond(layer, call)


def _layer_state(layer: DelegatingChatClient) -> dict[str, Any]:
    own: dict[str, Any] = layer.__self_dict__
    return {name: value for name, value in own.items() if name.startswith("_self_")}


Layer = Callable[[ChatClient], ChatClient]


def chain(client: ChatClient | Any, *layers: Layer) -> ChatClient:
    """Stack `layers` over `client`; the first layer is the outermost (it runs first).

    Example:
        client = chain(OpenAIChatClient(sdk, "gpt-4o"), with_telemetry, with_retries, with_structured_output)
        # same as with_telemetry(with_retries(with_structured_output(OpenAIChatClient(...))))
    """
    result = as_chat_client(client)
    for index in range(len(layers) - 1, -1, -1):
        result = layers[index](result)
        if not isinstance(result, ChatClient):
            raise UserError(f"layer {index} ({layers[index]!r}) returned {type(result).__name__}, not a ChatClient")
    return result
