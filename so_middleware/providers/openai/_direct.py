"""`DirectPost`: Chat Completions on the SDK client's own HTTP client, without the SDK's request and
response models (what `OpenAIChatClient(..., http_client=...)` sends plain calls with).

Sent through the SDK, each call builds its request options, headers and JSON body, and a plain
answer is read into the SDK's `ChatCompletion` model: about as much work as the rest of a gateway
request. `DirectPost` sends the adapter's request (the same fields, `OpenAIChatClient.request_for`)
as JSON bytes on the same HTTP client (its connection limits, timeouts and redaction of error
bodies), with the SDK client's headers but its `X-Stainless-*` platform report (the OS, the
runtime, the SDK's version: seven headers no backend acts on, each parsed and checked on both
ends); a plain answer is read as a `CompletionView` (the streamed path reads its events as views
already). It raises what the SDK would: the SDK client's typed status error for a non-2xx answer,
`APITimeoutError`, `APIConnectionError`, and a body that is not JSON comes back as text or raises
the same `JSONDecodeError`.
"""

from __future__ import annotations

import ssl
from typing import Any

import anyio
import httpx2
import jiter
import openai

from ...wire.common import dumps
from .._openai_privates import status_error_from_response
from .._post import SDKPost
from .._sse import JSONView

__all__ = ["CompletionView", "DirectPost"]

_NOT_GIVEN: Any = object()
_TRANSPORT_ERRORS = (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)  # what the SDK calls a connection error


class CompletionView(JSONView):
    """A Chat Completions answer read by attribute (see `JSONView`), standing for the SDK's
    `ChatCompletion`."""

    __slots__ = ()

    def model_dump_json(self, **_: Any) -> str:
        """The answer's JSON (what an unusable answer's error keeps)."""
        return dumps(self.to_dict()).decode()


class _Opened:
    """A streamed answer, unread: what `open_stream` reads (`.response`), as of the SDK's stream object."""

    __slots__ = ("response",)

    def __init__(self, response: httpx2.Response) -> None:
        self.response = response


class DirectPost(SDKPost):
    """`chat.completions.create(**kwargs)` of an `AsyncOpenAI` client, sent on `http_client` (the
    one the SDK client was made with): the result is a `CompletionView` (or the body's text or
    other JSON value, as the SDK returns it), with `stream=True` an object whose `.response` is the
    unread HTTP response."""

    def __init__(self, sdk_client: openai.AsyncOpenAI, http_client: httpx2.AsyncClient, path: str) -> None:
        super().__init__(sdk_client, path, CompletionView, is_async=True)
        self.http_client = http_client
        self.url = httpx2.URL(str(sdk_client.base_url).rstrip("/") + "/" + path.lstrip("/"))  # parsed once
        headers = _strings({**sdk_client.default_headers, **sdk_client.auth_headers})
        self.headers = {name: value for name, value in headers.items() if not name.lower().startswith("x-stainless-")}

    async def __call__(self, **body: Any) -> Any:
        """Send the request (`create`'s arguments: `extra_headers`, `extra_query`, `extra_body`,
        `timeout`, and the body's fields)."""
        extra_headers, extra_query = body.pop("extra_headers", None), body.pop("extra_query", None)
        extra_body, timeout = body.pop("extra_body", None), body.pop("timeout", _NOT_GIVEN)
        headers = self.headers if not extra_headers else _strings({**self.headers, **extra_headers})
        # a copy of exactly its size: orjson's bytes keep its 4 KiB buffer, and the request (its body with it)
        # lives as long as the answer's stream
        content = memoryview(dumps({**body, **extra_body} if extra_body else body)).tobytes()
        request = self.http_client.build_request(
            "POST", self.url, content=content, headers=headers, params=extra_query,
            timeout=self.sdk_client.timeout if timeout is _NOT_GIVEN else timeout,
        )  # fmt: skip
        stream = bool(body.get("stream"))
        try:
            response = await self.http_client.send(request, stream=stream)
        except httpx2.TimeoutException as error:
            raise openai.APITimeoutError(request=request) from error
        except _TRANSPORT_ERRORS as error:
            raise openai.APIConnectionError(request=request) from error
        if not response.is_success:  # the SDK's `raise_for_status`: 3xx too (redirects are not followed)
            if not response.is_closed:
                await response.aread()
            raise status_error_from_response(self.sdk_client, response)
        return _Opened(response) if stream else _read(response)


def _read(response: httpx2.Response) -> Any:
    """A plain answer as the SDK reads it: JSON (an object as a `CompletionView`), or the text of a
    body that is not JSON and not labelled JSON; JSON labelled so that cannot be read raises."""
    try:
        data = jiter.from_json(response.content)
    except ValueError:  # what jiter refuses, json may read (a lone surrogate); else json's own error
        if not response.headers.get("content-type", "*").split(";")[0].endswith("json"):
            try:
                data = response.json()
            except ValueError:
                return response.text
        else:
            data = response.json()
    return CompletionView(data) if isinstance(data, dict) else data


def _strings(headers: dict[str, Any]) -> dict[str, str]:
    """The headers to send: an `Omit` (or None) value removes its header, as in the SDK."""
    return {name: value for name, value in headers.items() if isinstance(value, str)}
