"""What must not leave the gateway: keys in backend error bodies, passwords in printed URLs, and
client keys in the store (it keeps their SHA-256 as the owner of a response, never the key)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx2
from openai import DefaultAsyncHttpxClient

__all__ = ["RedactingClient", "owner_of", "redact", "safe_url", "url_password"]

_MASK = "***"
# Shapes of secrets a backend may quote whatever its key: OpenAI-style keys, bearer tokens, URL passwords.
_KEY_SHAPED = re.compile(r"(?<![A-Za-z0-9])(sk|pk|rk)-[A-Za-z0-9_*-]{3,}")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"',;]+")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@\"']*):[^/\s@\"']*@")
_SHORTEST_SECRET = 4  # a shorter "key" (e.g. "x") would mask every letter of the message, not a secret


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` with every given secret and anything key-shaped (`sk-...`, `Bearer ...`, a URL's
    password) masked.

    Example: `redact("Incorrect API key provided: sk-abc123")` is `"Incorrect API key provided: sk-***"`.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= _SHORTEST_SECRET:
            text = text.replace(secret, _MASK)
    text = _KEY_SHAPED.sub(lambda m: f"{m.group(1)}-{_MASK}", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {_MASK}", text)
    return _USERINFO.sub(lambda m: f"{m.group(1)}:{_MASK}@", text)


def safe_url(url: str) -> str:
    """The URL to print: its password masked (`http://u:***@host/v1`)."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}:{_MASK}@", url)


def url_password(url: str | None) -> str | None:
    """The password in a URL's `user:password@`, if any."""
    try:
        return urlsplit(url).password if url else None
    except ValueError:  # a malformed port: the URL is refused elsewhere, not here
        return None


def owner_of(key: str | bytes) -> str:
    """The owner recorded with a response made with this client key: its SHA-256, in hex."""
    return hashlib.sha256(key if isinstance(key, bytes) else key.encode()).hexdigest()


class RedactingClient(DefaultAsyncHttpxClient):
    """The SDK's own HTTP client (its limits, timeouts and proxies), with `redact` applied to every
    error body (status >= 400) before the SDK reads it: the error the gateway forwards, stores in a
    failed response or logs quotes no key.

    Example: `AsyncOpenAI(base_url=url, api_key=key, http_client=RedactingClient([key]))`.
    """

    def __init__(self, secrets: Sequence[str], **options: Any) -> None:
        super().__init__(**options)
        self.secrets = tuple(secrets)

    async def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
        """Send the request; an error answer comes back read, with its body redacted."""
        response = await super().send(request, **options)
        if response.status_code < 400:
            return response
        try:
            body = await response.aread()  # decoded: content-encoding no longer applies
        finally:
            await response.aclose()
        clean = redact(body.decode("utf-8", "surrogateescape"), self.secrets).encode("utf-8", "surrogateescape")
        dropped = ("content-length", "content-encoding", "transfer-encoding")
        headers = [(name, value) for name, value in response.headers.multi_items() if name.lower() not in dropped]
        return httpx2.Response(response.status_code, headers=headers, content=clean, request=request,
                               extensions=response.extensions)  # fmt: skip
