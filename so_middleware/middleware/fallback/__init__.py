"""Fallback: when a client fails with an error you name, the next client answers instead.

    client = with_fallback(with_retries(OpenAIChatClient(openai, "gpt-4o")), AnthropicChatClient(anthropic, "claude-haiku-4-5"))

**When:** by default on errors that trying again might cure (`is_transient`: connection errors,
timeouts, 408, 409, 429, 5xx, Anthropic's `overloaded_error`); put `with_retries` around each
client to fail over only once its own retries are spent. `on=` names other errors, as exception
types (`on=(openai.RateLimitError, ModelBehaviorError)`) or a predicate. A `UserError` (bad input,
which every client would refuse) and cancellation never fail over. Any other error is raised at once.

**Streams** fail over only before their first update: after it, the caller has part of an answer
and an error is raised as it is.

**Visible:** the response says who answered, in `additional_properties["so_middleware.fallback"]`:
`{"index": 1, "model": "claude-haiku-4-5", "provider": "anthropic", "failed": [{"index": 0, "model":
..., "provider": ..., "error": "RateLimitError: ...", "error_type": "RateLimitError", "status_code": 429}]}`. When every client fails, the last error is
raised unchanged, with `error.fallback_errors` listing the earlier clients' errors, in order (and a
note naming each on Python 3.11+).

**Background runs** (`background=True`, or a `continuation_token`) never fail over: the run lives
on the primary client's server, and another client would start a second one.

**Options** go to every client as given: a per-call `model` would reach the fallback client too, so
give each client its model (`with_options(client, model=...)`). The proxy passes attributes
(`model`, `sdk_client`, ...) through to the primary client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import anyio

from ...core import (
    FALLBACK_KEY,
    ChatClient,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ChatStream,
    DelegatingChatClient,
    LayerCall,
    ResponseStream,
    UserError,
    as_chat_client,
    carry,
    failure_of,
    is_transient,
)

__all__ = ["FALLBACK_KEY", "FallbackChatClient", "with_fallback"]

FailOverOn = type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]


def _predicate(on: FailOverOn) -> Callable[[BaseException], bool]:
    if isinstance(on, type) and issubclass(on, BaseException):
        on = (on,)
    if isinstance(on, tuple):
        if not on or not all(isinstance(kind, type) and issubclass(kind, BaseException) for kind in on):
            raise UserError(f"on= must be exception types or a predicate, not {on!r:.100}")
        kinds = on
        return lambda error: isinstance(error, kinds)
    if not callable(on):
        raise UserError(f"on= must be exception types or a predicate, not {on!r:.100}")
    return on  # type: ignore[return-value]  # a callable that is not an exception type


def _describe(index: int, client: ChatClient) -> dict[str, Any]:
    return {"index": index, "model": getattr(client, "model", None), "provider": getattr(client, "provider_name", None)}


class FallbackChatClient(DelegatingChatClient):
    """Tries the primary client, then each of `others` in turn, on the errors `on` names.

    Example:
        client = FallbackChatClient(primary, backup, on=(TimeoutError,))
        response = await client.get_response("Hi")
        response.additional_properties["so_middleware.fallback"]["index"]  # 0: the primary answered
    """

    def __init__(self, primary: ChatClient | Any, *others: ChatClient | Any, on: FailOverOn = is_transient) -> None:
        predicate = _predicate(on)
        super().__init__(primary)
        self._self_others: tuple[ChatClient, ...] = tuple(as_chat_client(client) for client in others)
        self._self_fails_over = predicate

    @property
    def clients(self) -> tuple[ChatClient, ...]:
        """The clients in the order they are tried: the wrapped primary, then the others."""
        return (self.__wrapped__, *self._self_others)

    def fails_over(self, error: BaseException) -> bool:
        """True when `error` hands the call to the next client."""
        if not isinstance(error, Exception) or isinstance(error, UserError):
            return False
        return bool(self._self_fails_over(error))

    def respond(self, call: LayerCall) -> Awaitable[ChatResponse[Any]]:
        """Call the clients in turn until one answers; see the module docstring."""
        if _stays_on_the_primary(call.options):
            return super().respond(call)
        return _FallbackCall(self, _caller(call)).respond()

    def stream(self, call: LayerCall) -> ChatStream:
        """The same, streamed: a client is given up only before its first content."""
        if _stays_on_the_primary(call.options):
            return super().stream(call)
        run = _FallbackCall(self, _caller(call))
        return ResponseStream(run.updates(), run.final_response)


def _stays_on_the_primary(options: ChatOptions) -> bool:
    """A background run lives on the primary client's server: no other client can take it over."""
    return options.starts_background_run or options.continuation_token is not None


def _caller(call: LayerCall) -> Callable[[ChatClient, bool], Any]:
    def on(client: ChatClient, streaming: bool) -> Any:
        if streaming:
            return client.get_response(call.messages, options=call.options, stream=True, output_type=call.output_type)
        return client.get_response(call.messages, options=call.options, output_type=call.output_type)

    return on


_END: Any = object()


class _FallbackCall:
    """One call across the clients: the errors so far, and the stream that answered."""

    def __init__(self, layer: FallbackChatClient, call: Callable[[ChatClient, bool], Any]) -> None:
        self.layer = layer
        self.clients = layer.clients
        self.call = call
        self.failed: list[tuple[int, ChatClient, Exception]] = []
        self.answering: tuple[int, ChatStream] | None = None

    def give_up_or_continue(self, index: int, client: ChatClient, error: Exception) -> None:
        """Record a failure; re-raise it (with the earlier ones) unless the next client should try."""
        last = index == len(self.clients) - 1
        if last or not self.layer.fails_over(error):
            if self.failed:
                _attach(error, self.failed)
            raise error
        self.failed.append((index, client, error))

    def annotate(self, response: ChatResponse[Any], index: int) -> ChatResponse[Any]:
        failed = [{**_describe(i, c), **_error(e)} for i, c, e in self.failed]
        answered = _describe(index, self.clients[index])
        response.additional_properties[FALLBACK_KEY] = {**answered, "failed": failed}
        return response

    async def respond(self) -> ChatResponse[Any]:
        for index, client in enumerate(self.clients):
            try:
                response: ChatResponse[Any] = await self.call(client, False)
            except Exception as error:
                self.give_up_or_continue(index, client, error)
                continue
            return self.annotate(response, index)
        raise AssertionError("unreachable: the last client answers or raises")

    async def open(self) -> tuple[ChatStream, Any]:
        for index, client in enumerate(self.clients):
            try:
                stream: ChatStream = self.call(client, True)
            except Exception as error:  # refused before any request
                self.give_up_or_continue(index, client, error)
                continue
            try:
                first = await aiter(stream).__anext__()
            except StopAsyncIteration:
                first = _END
            except Exception as error:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                self.give_up_or_continue(index, client, error)
                continue
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                raise
            self.answering = (index, stream)
            return stream, first
        raise AssertionError("unreachable: the last client answers or raises")

    async def updates(self) -> AsyncIterator[ChatResponseUpdate[Any]]:
        stream, update = await self.open()
        try:
            while update is not _END:
                yield update
                try:
                    update = await stream.__anext__()
                except StopAsyncIteration:
                    update = _END
        finally:
            if not stream.is_complete:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()

    async def final_response(self, updates: Sequence[Any]) -> ChatResponse[Any]:
        if self.answering is None:
            raise RuntimeError("the stream has not been opened")
        index, stream = self.answering
        return self.annotate(await stream.get_final_response(), index)


def _error(error: Exception) -> dict[str, Any]:
    """The error as text, and its type and status alone (a log without content shows only those)."""
    text = f"{type(error).__name__}: {error}"[:500]
    return {"error": text, "error_type": type(error).__name__, "status_code": failure_of(error).status}


def _attach(error: Exception, failed: list[tuple[int, ChatClient, Exception]]) -> None:
    """Hang the earlier clients' errors on the one raised (`fallback_errors`, plus notes)."""
    notes = [_note(index, client, earlier) for index, client, earlier in failed]
    carry(error, notes=notes, fallback_errors=[earlier for _, _, earlier in failed])


def _note(index: int, client: ChatClient, earlier: Exception) -> str:
    model = getattr(client, "model", None)
    return f"fallback: client {index} ({model}) failed first: {type(earlier).__name__}: {earlier}"[:500]


def with_fallback(
    primary: ChatClient | Any, *others: ChatClient | Any, on: FailOverOn = is_transient
) -> FallbackChatClient:
    """Wrap `primary` so that `others` answer, in order, when it fails with an error `on` names.

    Example:
        client = with_fallback(with_retries(primary), with_retries(backup), on=(openai.RateLimitError,))
    """
    return FallbackChatClient(primary, *others, on=on)
