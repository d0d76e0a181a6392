"""What must not leave the gateway: keys in backend error bodies (masked with the core's `redact`,
the rule every surface shares) and client keys in the store (it keeps their SHA-256 as the owner
of a response, never the key)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx2
from openai import DefaultAsyncHttpxClient

from ..core import redact

__all__ = ["RedactingClient", "owner_of", "url_password"]


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
