"""`SDKChatClient`: what every adapter over an official SDK client shares.

The SDK client, sync or async; the model; the capability profile; the SDK client of one call
(with the SDK's own retries as the call asks); handing the SDK client out through `get_service`;
the echoed prefill; and the boundary where SDK results and failures become so_middleware's:
`fetch` for a plain call (an unusable answer's body and usage are kept on its error),
`open_stream` + `read_events` for a stream.

Errors at the boundary: an answer that cannot be read (not JSON, not UTF-8, nested too deeply, of
an unexpected shape, a stream that is not an event stream) or that reports a failure (an error
event) raises `ProviderResponseError`, plain and streaming alike; a stream that stops early (a cut
connection, no event within the idle timeout, no terminal event) raises `StreamInterruptedError`.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import AsyncGenerator, Callable
from typing import Any, ClassVar, Protocol, TypeVar

import anyio
import httpx2
from typing_extensions import Self

from ..core import (
    BaseChatClient,
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ProviderResponseError,
    SOMiddlewareError,
    UserError,
    redact_url,
    seconds_left,
)
from ..wire.prefill import prefill_of
from ._bridge import (
    UNREADABLE,
    IdleTimeout,
    call_sdk,
    capped_timeout,
    close_sdk_stream,
    interrupted,
    is_stream_break,
    iterate_sdk_stream,
    kept_body,
    kept_head,
    kept_usage,
    reported_failure,
    unreadable,
)
from ._discovery import PROBE_TIMEOUT, ServerInfo, identify_server, is_hosted, server_root
from ._post import SDKPost
from ._sdk_use import sdk_boundary
from ._sse import EventStream

__all__ = ["DEFAULT_IDLE_TIMEOUT", "EventReader", "SDKChatClient", "seconds_or_none"]

K = TypeVar("K")

DEFAULT_IDLE_TIMEOUT = 120.0  # seconds without an event before a stream counts as stalled


class EventReader(Protocol):
    """Turns one SDK stream event into an update (or None), keeping the text and whether the
    terminal event came."""

    @property
    def text(self) -> list[str]: ...

    @property
    def finished(self) -> bool: ...

    def read(self, event: Any, /) -> ChatResponseUpdate[Any] | None: ...


class SDKChatClient(BaseChatClient):
    """Base of the adapters: subclasses name their SDK's client types and default profile."""

    sdk_types: ClassVar[tuple[type, ...]] = ()  # every accepted SDK client type
    async_sdk_types: ClassVar[tuple[type, ...]] = ()  # the async ones among them
    sdk_client: Any

    server_info: ServerInfo | None = None  # what discovery found, once it ran

    def __init__(
        self,
        sdk_client: Any,
        model: str | None,
        capabilities: Capabilities | None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        *,
        discover: bool = True,
    ) -> None:
        if not isinstance(sdk_client, self.sdk_types):  # narrows to object: keep the Any below
            accepted = " or ".join(f"{t.__module__.split('.')[0]}.{t.__name__}" for t in self.sdk_types)
            raise UserError(f"{type(self).__name__} needs an {accepted} client, not {type(sdk_client).__name__}")
        self.sdk_client = sdk_client
        self._sdk_copy: tuple[Any, int, Any] | None = None  # (sdk_client, retries, its copy), made on need
        self.model = model
        self._sdk_base_url = str(self.sdk_client.base_url)  # unredacted: discovery's probes go there
        self.base_url = redact_url(str(self.sdk_client.base_url))  # shown in repr, spans, logs
        self.idle_timeout = seconds_or_none("idle_timeout", idle_timeout)
        self.capabilities = capabilities or self.default_profile(self.base_url, model)
        # A server reached by base URL alone is identified on first use; a profile given, a
        # hosted API or discover=False keep the profile above.
        self.discovery_pending = capabilities is None and discover and not is_hosted(self._sdk_base_url)

    def with_sdk_client(self, sdk_client: Any) -> Self:
        """This adapter (model, profile, timeouts) over another SDK client of an accepted type,
        e.g. `sdk_client.with_options(...)` of its own; this one is left as it is."""
        if not isinstance(sdk_client, self.sdk_types):
            raise UserError(f"{type(self).__name__} needs an SDK client of its kind, not {type(sdk_client).__name__}")
        other = copy.copy(self)
        other.sdk_client = sdk_client
        other._sdk_copy = None
        return other

    def default_profile(self, base_url: str, model: str | None) -> Capabilities:
        """The profile when none is given and nothing is discovered: from the base URL (and model)."""
        raise NotImplementedError

    def server_profile(self, info: ServerInfo) -> Capabilities:
        """The profile for a discovered server on this adapter's route."""
        raise NotImplementedError

    async def discover_capabilities(self) -> Capabilities:
        """Identify the server once (shared by every adapter on the same server root), then
        use the shipped profile for what was found; a server that is not recognised keeps the
        generic profile. See `BaseChatClient.discover_capabilities`."""
        if not self.discovery_pending:
            return self.capabilities
        info = await identify_server(server_root(self._sdk_base_url), self._probe)
        self.server_info = info
        self.capabilities = self.server_profile(info)
        self.discovery_pending = False
        return self.capabilities

    async def _probe(self, path: str) -> Any:
        """GET `path` under the server root through the SDK client (its auth and transport),
        with no retries and a short timeout; the JSON body of a 200, else None."""
        sdk = self.sdk_client.with_options(max_retries=0, timeout=PROBE_TIMEOUT)
        url = server_root(self._sdk_base_url) + path
        with sdk_boundary(self.sdk_client, self.is_async):
            response = await call_sdk(self.is_async, sdk.get, path=url, cast_to=httpx2.Response)
        if response.status_code != 200:
            return None
        if not self.is_async:
            return response.json()
        await response.aread()
        return response.json()

    @property
    def is_async(self) -> bool:
        """True over an async SDK client (`AsyncOpenAI`, `AsyncAnthropic`)."""
        return isinstance(self.sdk_client, self.async_sdk_types)

    def sdk_for(self, options: ChatOptions) -> Any:
        """The SDK client for one call: with `options.sdk_max_retries` set, a copy of it with that
        many retries of its own (`with_options`, sharing the connection pool); `sdk_client` itself
        never changes. A retry layer above asks for 0 this way."""
        retries = options.sdk_max_retries
        if retries is None or retries == getattr(self.sdk_client, "max_retries", None):
            return self.sdk_client
        made = self._sdk_copy
        if made is None or made[0] is not self.sdk_client or made[1] != retries:
            made = self._sdk_copy = (self.sdk_client, retries, self.sdk_client.with_options(max_retries=retries))
        return made[2]

    def get_service(self, kind: type[K]) -> K | None:
        """This adapter, or its SDK client when `kind` is the SDK client's type."""
        if isinstance(self.sdk_client, kind):
            return self.sdk_client
        return super().get_service(kind)

    def echoed_prefill(self, messages: list[ChatMessage]) -> str:
        """The prefill this backend will echo back ("" when it does not echo, or there is none)."""
        return prefill_of(messages) if self.capabilities.prefill_echoed else ""

    async def fetch(
        self, function: Callable[..., Any], request: dict[str, Any], expected: type, to_chat: Callable[[Any], Any]
    ) -> ChatResponse[Any]:
        """Make a plain SDK call and map its result with `to_chat`; an answer that is not an
        `expected` object (for an `SDKPost`, its own `cast_to`: what it reads answers into), or that
        `to_chat` cannot read, raises `ProviderResponseError`."""
        if isinstance(function, SDKPost):
            expected = function.cast_to
        timeout = capped_timeout(self.sdk_client, seconds_left())
        if timeout is not None:  # a deadline above: the request must not outlive it
            request = {**request, "timeout": timeout}
        try:
            with sdk_boundary(self.sdk_client, self.is_async):
                result = await (function(**request) if self.is_async else call_sdk(False, function, **request))
        except UNREADABLE as error:
            if isinstance(error, SOMiddlewareError) or not _raised_reading(error):
                raise
            raise unreadable("the body is not valid JSON text", error).with_answer(kept_body(error)) from error
        if not isinstance(result, expected):
            problem = f"expected {expected.__name__}, got {type(result).__name__} ({_size(result)})"
            raise unreadable(problem).with_answer(kept_body(result))
        try:
            return to_chat(result)  # type: ignore[no-any-return]
        except ProviderResponseError as error:  # a failure the answer reports: it was paid for
            error.with_answer(kept_body(result), kept_usage(result))
            raise
        except SOMiddlewareError:
            raise
        except (*UNREADABLE, AttributeError, TypeError, KeyError, IndexError) as error:
            failure = unreadable(f"a {expected.__name__} of an unexpected shape", error)
            raise failure.with_answer(kept_body(result), kept_usage(result)) from error

    async def open_stream(self, function: Callable[..., Any], request: dict[str, Any], options: ChatOptions) -> Any:
        """Open a stream with the SDK method `function` (bound, e.g. `sdk.chat.completions.create`)
        within the idle timeout; a non-event-stream answer raises `ProviderResponseError`, no
        first byte in time `StreamInterruptedError`.

        The request goes through an `SDKPost` or the method's raw-response twin
        (`.with_raw_response.create`): the SDK sends it and raises its typed errors; the body is
        read as an `EventStream`."""
        idle = self.idle_timeout_for(options)
        timeout = capped_timeout(self.sdk_client, idle)
        if timeout is not None:
            request = {**request, "timeout": timeout}
        dialect = type(self.sdk_client).__module__.split(".")[0]
        raw: Callable[..., Any] = function
        unread: Callable[[Any], Any] = operator.attrgetter("response")  # the SDK's stream object, never iterated
        if not isinstance(function, SDKPost):
            raw = getattr(function.__self__.with_raw_response, function.__name__)  # type: ignore[attr-defined]
            unread = operator.attrgetter("http_response")

        async def opened_async(**kwargs: Any) -> EventStream:
            return EventStream(unread(await raw(**kwargs)), is_async=True, dialect=dialect)

        def opened_sync(**kwargs: Any) -> EventStream:
            return EventStream(unread(raw(**kwargs)), is_async=False, dialect=dialect)

        opened: Callable[..., Any] = opened_async if self.is_async else opened_sync

        try:
            with anyio.fail_after(idle), sdk_boundary(self.sdk_client, self.is_async):
                stream = await call_sdk(self.is_async, opened, **request, stream=True)
        except TimeoutError as error:  # anyio's: the SDK's read timeout is a little longer
            raise interrupted(IdleTimeout(f"no answer from the server within {idle:g} s"), "", 0) from error
        content_type = str(getattr(getattr(stream, "response", None), "headers", {}).get("content-type") or "")
        if content_type and "event-stream" not in content_type:
            head = await kept_head(self.is_async, stream, within=idle or DEFAULT_IDLE_TIMEOUT)
            await close_sdk_stream(self.is_async, stream)
            what = f"a streaming request was answered with {content_type.split(';')[0]}, not an event stream"
            raise unreadable(what).with_answer(head)
        return stream

    def idle_timeout_for(self, options: ChatOptions) -> float | None:
        """The idle timeout of one call: the call's `idle_timeout` option, else the adapter's."""
        return options.idle_timeout if options.idle_timeout is not None else self.idle_timeout

    async def read_events(
        self, stream: Any, reader: EventReader, *, ending: str, idle_timeout: float | None = None
    ) -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        """Yield the updates of an SDK event stream, and close it however iteration ends.

        A stream that stops early (cut connection, no event within `idle_timeout`, or no
        terminal event, named by `ending`) raises `StreamInterruptedError`; an unreadable event
        or an error event raises `ProviderResponseError`; both carry the text received so far,
        and a `ProviderResponseError` keeps it as its attempt with the usage reported so far (as a
        plain call's keeps its body), unless the event it is about kept a fuller answer first.
        """
        updates = 0
        counted: list[ChatResponseUpdate[Any]] = []  # the updates that report usage

        def kept(failure: ProviderResponseError) -> ProviderResponseError:
            failure.partial_text, failure.updates = "".join(reader.text), updates
            usage = ChatResponse.from_updates(counted).usage
            return failure.with_answer(failure.partial_text, usage) if failure.partial_text or usage else failure

        try:
            try:
                async for event in iterate_sdk_stream(self.is_async, stream, idle_timeout):
                    try:
                        update = reader.read(event)
                    except SOMiddlewareError:
                        raise
                    except (*UNREADABLE, AttributeError, TypeError, KeyError, IndexError) as error:
                        raise unreadable("an event of an unexpected shape", error) from error
                    if update is not None:
                        updates += 1
                        if update.usage is not None:
                            counted.append(update)
                        yield update
            except ProviderResponseError as error:
                kept(error)
                raise
            except Exception as error:
                failure = reported_failure(error)
                if failure is None and isinstance(error, UNREADABLE) and _raised_reading(error):
                    failure = unreadable("an event is not valid JSON text", error)
                if failure is not None:
                    raise kept(failure) from error
                if not is_stream_break(error):
                    raise
                raise interrupted(error, "".join(reader.text), updates) from error
            if not reader.finished:
                raise interrupted(EOFError(f"the event stream ended without {ending}"), "".join(reader.text), updates)
        finally:
            await close_sdk_stream(self.is_async, stream)


def seconds_or_none(name: str, value: Any) -> float | None:
    """`value` as seconds: None, or a finite number > 0; anything else is a `UserError` naming `name`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise UserError(f"{name} must be None or a number of seconds > 0, not {value!r}")
    return float(value)


def _raised_reading(error: BaseException) -> bool:
    """True for a decoding error (JSON, UTF-8, nesting), not a `ValueError` the SDK raises
    about its arguments before any HTTP call."""
    return isinstance(error, (RecursionError, UnicodeDecodeError)) or type(error).__name__ == "JSONDecodeError"


def _size(result: Any) -> str:
    return f"{len(result)} characters" if isinstance(result, str) else "no body" if result is None else "a value"
