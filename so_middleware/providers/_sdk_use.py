"""The boundary where an adapter calls its SDK client: every transport error leaving an SDK call
leaves it here as a `TransportError` (`ProviderStatusError`, `ProviderTimeoutError`,
`ProviderConnectionError`), `from` the SDK's own error. Over the OpenAI and Anthropic SDKs the
error raised is also of the SDK's type (a class made here once per SDK type, under both), so
`except openai.RateLimitError` and `except anthropic.APIError` keep catching what they caught.

And two ways an SDK client fails its caller with a message that says nothing useful, caught
here: an async SDK client used on a second event loop ("... is bound to a different event
loop", "Event loop is closed"), and a server that cannot be reached ("Connection error.",
without saying which server)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import weakref
from collections.abc import Iterator
from typing import Any

from ..core import (
    ProviderConnectionError,
    ProviderStatusError,
    ProviderTimeoutError,
    TransportError,
    UserError,
)

__all__ = ["sdk_boundary", "transport_error"]

# The event loop each async SDK client was last used on: its connection pool belongs to that loop.
_loops: weakref.WeakKeyDictionary[Any, weakref.ref[asyncio.AbstractEventLoop]] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def sdk_boundary(sdk_client: Any, is_async: bool = True) -> Iterator[None]:
    """Around SDK calls: refuse an async SDK client already used on another event loop (before
    any request), and raise each transport error as a `TransportError` (`transport_error`)."""
    if is_async:
        _check_loop(sdk_client)
    try:
        yield
    except TransportError:
        raise
    except Exception as error:
        ours = transport_error(error)
        if ours is None:
            raise
        raise ours from error


def transport_error(error: BaseException) -> TransportError | None:
    """`error` as a `TransportError`, when it is an SDK's (OpenAI, Anthropic, google-genai, ollama, mistralai, botocore) or httpx's status,
    timeout or connection error: of both types, with the SDK error's own fields, the address
    called, and for a connection error a message naming it; else None.

    Example: `transport_error(openai.RateLimitError(...))` is a `ProviderStatusError` and an `openai.RateLimitError`.
    """
    botocore_errors = sys.modules.get("botocore.exceptions")
    if botocore_errors is not None and isinstance(error, (botocore_errors.ClientError, botocore_errors.BotoCoreError)):
        return _botocore_error(error, botocore_errors)
    kind = _kind_of(error)
    if kind is None:
        return None
    made: TransportError = BaseException.__new__(_both(kind, type(error)))
    made.__dict__.update(error.__dict__)  # the SDK's own fields: request, response, body, status_code, ...
    response = getattr(error, "response", None)
    if response is None:
        response = getattr(error, "raw_response", None)  # mistralai keeps the httpx response there
    request = _request_of(error) or _request_of(response)
    status = getattr(error, "status_code", None)
    if not isinstance(status, int) or isinstance(status, bool):
        status = getattr(response, "status_code", None) if kind is ProviderStatusError else None
    headers = getattr(response, "headers", None) if kind is ProviderStatusError else None
    url = getattr(request, "url", None)
    body = getattr(error, "body", None)
    if body is None:
        body = getattr(error, "details", None)  # google-genai keeps the error's JSON there
    elif isinstance(body, str) and body[:1] == "{":  # mistralai keeps the error's JSON as text
        with contextlib.suppress(ValueError):
            body = json.loads(body)
    made.describe(url=url, status_code=status, headers=headers or {}, body=body)
    made.args = (_message(error, made.url),) if kind is ProviderConnectionError else error.args
    return made


def _kind_of(error: BaseException) -> type[TransportError] | None:
    """Which transport error `error` is, by the types of the SDKs and of httpx (each looked up
    only when loaded: an error of its type means it is)."""
    for name in ("openai", "anthropic"):
        sdk = sys.modules.get(name)
        if sdk is None:
            continue
        if isinstance(error, sdk.APIStatusError):
            return ProviderStatusError
        if isinstance(error, sdk.APITimeoutError):
            return ProviderTimeoutError
        if isinstance(error, sdk.APIConnectionError):
            return ProviderConnectionError
    ollama = sys.modules.get("ollama")
    if ollama is not None and isinstance(error, ollama.ResponseError):
        return ProviderStatusError  # its connection errors are Python's own ConnectionError
    mistral_errors = sys.modules.get("mistralai.client.errors")
    if mistral_errors is not None:  # mistralai: its timeouts and connection errors are httpx's own
        if isinstance(error, mistral_errors.MistralError) and type(error).__name__ != "ResponseValidationError":
            return ProviderStatusError  # (a 200 whose body does not fit the SDK's model is no status error)
        if isinstance(error, mistral_errors.NoResponseError):
            return ProviderConnectionError
    genai_errors = sys.modules.get("google.genai.errors")
    if genai_errors is not None and isinstance(error, genai_errors.APIError):
        return ProviderStatusError  # google-genai: its timeouts and connection errors are httpx's own
    httpx = sys.modules.get("httpx2")
    if httpx is None:
        return None
    if isinstance(error, httpx.HTTPStatusError):
        return ProviderStatusError
    if isinstance(error, httpx.TimeoutException):
        return ProviderTimeoutError
    if isinstance(error, (httpx.NetworkError, httpx.RemoteProtocolError)):
        return ProviderConnectionError
    return None


# The status of each error a Bedrock stream can carry as an event (botocore names the error by the
# event, lower camel case, and gives no HTTP status): the `httpStatusCode` of each in botocore's
# bedrock-runtime service model.
_EVENT_STATUS = {
    "throttlingexception": 429,
    "validationexception": 400,
    "modelstreamerrorexception": 424,
    "internalserverexception": 500,
    "serviceunavailableexception": 503,
}


def _botocore_error(error: Any, botocore_errors: Any) -> TransportError | None:
    """A botocore (boto3) error as ours: a `ClientError` is a status error with the service's code
    and message as its body, its headers' retry-after read; a connection or read failure names the
    endpoint. Other botocore errors (no credentials, bad parameters) are not transport errors."""
    if isinstance(error, botocore_errors.ClientError):
        kind: type[TransportError] = ProviderStatusError
        answer = error.response
        metadata = answer.get("ResponseMetadata") or {}
        code = str(answer.get("Error", {}).get("Code", ""))
        status = metadata.get("HTTPStatusCode") or _EVENT_STATUS.get(code.lower())
        headers, url = metadata.get("HTTPHeaders") or {}, None
        body: Any = {"code": code, "message": answer.get("Error", {}).get("Message")}
    elif isinstance(error, (botocore_errors.ConnectTimeoutError, botocore_errors.ReadTimeoutError)):
        kind, status, headers, url, body = ProviderTimeoutError, None, {}, error.kwargs.get("endpoint_url"), None
    elif isinstance(error, (botocore_errors.ConnectionError, botocore_errors.HTTPClientError)):
        kind, status, headers, url, body = ProviderConnectionError, None, {}, error.kwargs.get("endpoint_url"), None
    else:
        return None
    made: TransportError = BaseException.__new__(_both(kind, type(error)))
    made.__dict__.update(error.__dict__)
    made.describe(url=url, status_code=status, headers=headers, body=body)
    made.args = error.args
    return made


_made: dict[tuple[type[TransportError], type[BaseException]], type[TransportError]] = {}


def _both(ours: type[TransportError], theirs: type[BaseException]) -> type[TransportError]:
    """A subclass of our `ours` and the SDK's `theirs`, named as the SDK's, module and all (what
    logs, tracebacks and telemetry show stays as it was); made once for each pair."""
    made = _made.get((ours, theirs))
    if made is not None:
        return made
    namespace = {"__module__": theirs.__module__, "__qualname__": theirs.__qualname__, "__reduce__": _reduce, "__doc__": (
        f"{ours.__name__} raised for the SDK's {theirs.__module__}.{theirs.__qualname__}: both types.")}  # fmt: skip
    return _made.setdefault((ours, theirs), type(theirs.__name__, (ours, theirs), namespace))  # one, across threads


def _reduce(self: TransportError) -> tuple[Any, ...]:
    """Pickled as the two types it is made of (the class itself is made at run time)."""
    ours, theirs = type(self).__bases__
    return _remade, (ours, theirs, self.args, self.__dict__)


def _remade(ours: type[TransportError], theirs: type[BaseException], args: Any, state: dict[str, Any]) -> Any:
    made = BaseException.__new__(_both(ours, theirs))
    made.args = args
    made.__dict__.update(state)
    return made


def _request_of(error: Any) -> Any:
    try:
        return getattr(error, "request", None)
    except RuntimeError:  # httpx's `.request` of an error raised without one
        return None


def _message(error: BaseException, address: str | None) -> str:
    """A connection error's message naming the address it could not reach, and why."""
    if address is None:
        return str(error)
    cause = error.__cause__ or error.__context__
    reason = f": {type(cause).__name__}: {cause}" if cause is not None and str(cause) else ""
    return f"Connection error: cannot reach {address}{reason}"


def _check_loop(sdk_client: Any) -> None:
    loop = asyncio.get_running_loop()
    try:
        earlier = _loops[sdk_client]()
    except KeyError:
        earlier = None
    except TypeError:  # an SDK client that cannot be weakly referenced: nothing to check against
        return
    if earlier is not None and earlier is not loop:
        state = "closed now" if earlier.is_closed() else "another one"
        raise UserError(
            f"this {type(sdk_client).__name__} was first used on another event loop ({state}), and its "
            "connections belong to that loop. get_response_sync() and run_sync() run on so_middleware's own "
            "loop, and each asyncio.run() makes a new one, so one async SDK client cannot serve both: make "
            "the async client inside the coroutine asyncio.run() runs (one per event loop), or give the "
            "*_sync calls a sync client (OpenAI(), Anthropic())"
        )
    _loops[sdk_client] = weakref.ref(loop)
