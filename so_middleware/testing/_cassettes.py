"""vcrpy set-up for recordings of real traffic: secrets scrubbed, loopback ports ignored.

Requests are matched on method, path, query and body. The host and port of a loopback server
change from run to run, so they are rewritten to `http://local-model` before recording and
before matching.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["SCRUBBED_REQUEST_HEADERS", "SCRUBBED_RESPONSE_HEADERS", "recorder"]

SCRUBBED_REQUEST_HEADERS = [
    "authorization",
    "x-api-key",
    "api-key",
    "openai-organization",
    "openai-project",
    "anthropic-workspace-id",
    "anthropic-user-profile-id",
    "cookie",
]
SCRUBBED_RESPONSE_HEADERS = (
    "set-cookie",
    "openai-organization",
    "openai-project",
    "anthropic-organization-id",
    "request-id",
    "x-request-id",
    "cf-ray",
    "openai-processing-ms",
)
_VOLATILE_PREFIXES = ("x-stainless-", "user-agent", "x-ratelimit-", "anthropic-ratelimit-")
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _canonical_request(request: Any) -> Any:
    parts = urlsplit(request.uri)
    if parts.hostname in _LOOPBACK:
        request.uri = urlunsplit(("http", "local-model", parts.path, parts.query, ""))
    for name in list(request.headers):
        if name.lower().startswith(_VOLATILE_PREFIXES) or name.lower() == "host":
            del request.headers[name]
    return request


def _scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower() in SCRUBBED_RESPONSE_HEADERS or name.lower().startswith(_VOLATILE_PREFIXES):
            del headers[name]
    return response


def recorder(cassette_dir: str | Path) -> Any:
    """A configured `vcr.VCR`: records once (never in CI, where a missing recording fails)."""
    import vcr

    record_mode = os.environ.get("SO_MIDDLEWARE_RECORD_MODE") or ("none" if os.environ.get("CI") else "once")
    return vcr.VCR(
        cassette_library_dir=str(cassette_dir),
        record_mode=record_mode,
        match_on=["method", "path", "query", "body"],
        filter_headers=SCRUBBED_REQUEST_HEADERS,
        decode_compressed_response=True,
        before_record_request=_canonical_request,
        before_record_response=_scrub_response,
    )
