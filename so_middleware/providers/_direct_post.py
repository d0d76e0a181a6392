"""`DirectPost`: a JSON POST handed straight to an `httpx.AsyncClient`'s transport, when the
client's own `send` would change nothing about it.

`AsyncClient.request` merges the base URL, headers, cookies and query parameters into a new
`Request` on every call (URL parsing and joining, header normalising), and `send` runs the auth
flow, the redirect loop, the event hooks and the cookie jar (a `urllib` request and an `email`
message made for every answer): more CPU than the rest of a call to a thin SDK. For a client with
no auth, no cookies and no event hooks none of that changes the request or the answer, so the
client's own `build_request` runs once (URL, headers, query parameters and timeout, as the SDK's
JSON call would get them) and each call is one `Request` with its body, given to the transport the
client picks for that URL. What `send` does that still matters is kept: the timeouts (the request's
`timeout` extension), the request attached to a transport error, a `Set-Cookie` answer stored in the
client's jar, a redirect followed (through `send`), and its log line.

A client configured otherwise, closed, or whose sending methods were wrapped or replaced (an
instrumentation such as Sentry's patches `AsyncClient.send`) gets no `DirectPost`: the caller sends
through the SDK as before. Instrumentations of the transport (OpenTelemetry's) still see each call.

Imported only by adapters whose SDK sends with `httpx` (ollama), which brings it.
"""

from __future__ import annotations

import logging
import operator
import os
from typing import Any

import httpx

from ._openai_privates import httpx_default_encoding, httpx_redirect_request, httpx_transport_for
from ._own import is_packages_own

__all__ = ["DirectPost", "direct_post"]

_SENDING = ("request", "stream", "build_request", "send", "_send_handling_auth", "_send_handling_redirects",
            "_send_single_request")  # fmt: skip
_sending_methods = operator.attrgetter(*_SENDING)
_HTTPX_DIR = os.path.dirname(os.path.abspath(httpx.__file__)) + os.sep
_log = logging.getLogger("httpx")  # the logger `send` writes its "HTTP Request: ..." line to


class DirectPost:
    """One client's POST to one path, prepared: its URL, headers and timeout as the client's
    `build_request` made them for a JSON body, and the transport for that URL."""

    def __init__(self, http: httpx.AsyncClient, path: str) -> None:
        template = http.build_request("POST", path, json={})
        self.http = http
        self.path = path
        self.url = template.url
        self.headers = template.headers
        self.timeout = template.extensions["timeout"]
        self.transport = httpx_transport_for(http, self.url)
        # What the template was made of: a change to any of them makes a new one.
        self.made_of = (http.base_url, http.timeout, http.params, http.headers.raw)
        self.methods = _sending_methods(type(http))

    def still_fits(self, http: httpx.AsyncClient) -> bool:
        """Whether this is still what `http` would send (same client, configuration and methods)."""
        made_of = self.made_of
        return (
            http is self.http
            and http.base_url is made_of[0]
            and http.timeout is made_of[1]
            and http.params is made_of[2]
            and http.headers.raw == made_of[3]
            and _sending_methods(type(http)) == self.methods
            and _goes_direct(http)
        )

    async def send(self, body: bytes) -> httpx.Response:
        """POST `body` (JSON text); the answer unread, its status not checked. The caller closes it."""
        headers = httpx.Headers(self.headers)
        headers["Content-Length"] = str(len(body))
        request = httpx.Request(
            "POST", self.url, headers=headers, stream=httpx.ByteStream(body), extensions={"timeout": self.timeout}
        )
        request.read()  # `content` readable, as on a request the client builds
        try:
            response: httpx.Response = await self.transport.handle_async_request(request)
        except httpx.RequestError as error:  # as `send` does: the error names its request
            error.request = request
            raise
        try:
            return await self._received(request, response)
        except BaseException:
            await response.aclose()
            raise

    async def _received(self, request: httpx.Request, response: httpx.Response) -> httpx.Response:
        """What `send` does with an answer before handing it out."""
        response.request = request
        response.default_encoding = httpx_default_encoding(self.http)
        http = self.http
        if _log.isEnabledFor(logging.INFO):
            _log.info('HTTP Request: %s %s "%s %d %s"', request.method, request.url, response.http_version,
                      response.status_code, response.reason_phrase)  # fmt: skip
        if any(name[:10].lower() == b"set-cookie" for name, _ in response.headers.raw):  # and Set-Cookie2
            http.cookies.extract_cookies(response)
        if response.has_redirect_location and http.follow_redirects:
            await response.aclose()  # the client follows it from here, as it would have from the start
            following = httpx_redirect_request(http, request, response)
            return await http.send(request if following is None else following, stream=True)
        return response


def _goes_direct(http: httpx.AsyncClient) -> bool:
    """No auth, cookies or event hooks, open, and no sending method replaced on the object."""
    hooks = http.event_hooks
    return not (
        http.is_closed
        or http.auth is not None
        or http.cookies
        or hooks["request"]
        or hooks["response"]
        or not http.__dict__.keys().isdisjoint(_SENDING)
    )


def direct_post(http: Any, path: str, last: DirectPost | None) -> DirectPost | None:
    """A `DirectPost` for `path` on `http` (`last` again when it still fits), or None when the
    client must send the request itself: not an `httpx.AsyncClient`, configured with auth,
    cookies or event hooks, closed, its sending methods not httpx's own, or a base URL with
    credentials in it."""
    if last is not None and last.still_fits(http):
        return last
    if not isinstance(http, httpx.AsyncClient) or not _goes_direct(http):
        return None
    if not all(is_packages_own(method, _HTTPX_DIR) for method in _sending_methods(type(http))):
        return None
    if http.base_url.userinfo:  # the client would send them as basic auth
        return None
    made = DirectPost(http, path)
    return made if made.transport is not None else None
