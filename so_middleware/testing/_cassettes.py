"""vcrpy set-up for recordings of real traffic: secrets scrubbed, loopback ports ignored.

Requests are matched on method, path, query and body. The host and port of a loopback server
change from run to run, so they are rewritten to `http://local-model` before recording and
before matching.

Credentials are scrubbed from requests and responses alike, by name: a header or query
parameter is dropped when its name is on a deny-list (`SCRUBBED_REQUEST_HEADERS`,
`SCRUBBED_RESPONSE_HEADERS`, `SCRUBBED_QUERY_PARAMETERS`) **or** contains one of
`SECRET_NAME_PARTS` (key, token, secret, auth, password, signature, cookie, ...), in any case:
`?key=`, `x-goog-api-key`, `api_key`, `Ocp-Apim-Subscription-Key`, `X-Amz-Security-Token`.
A URL's `user:password@` is removed too. Bodies are kept as they are.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..core import SECRET_NAME_PARTS, SHORT_SECRET_NAMES, is_secret_name

__all__ = [
    "SCRUBBED_QUERY_PARAMETERS",
    "SCRUBBED_REQUEST_HEADERS",
    "SCRUBBED_RESPONSE_HEADERS",
    "SECRET_NAME_PARTS",
    "is_secret_name",
    "recorder",
]

SCRUBBED_REQUEST_HEADERS = [
    "authorization", "x-api-key", "api-key", "openai-organization", "openai-project",
    "anthropic-workspace-id", "anthropic-user-profile-id", "cookie", "proxy-authorization",
    "x-goog-user-project",
]  # fmt: skip
SCRUBBED_RESPONSE_HEADERS = (
    "set-cookie", "openai-organization", "openai-project", "anthropic-organization-id", "request-id",
    "x-request-id", "cf-ray", "openai-processing-ms",
)  # fmt: skip
SCRUBBED_QUERY_PARAMETERS = SHORT_SECRET_NAMES  # short names the pattern cannot catch
_VOLATILE_PREFIXES = ("x-stainless-", "user-agent", "x-ratelimit-", "anthropic-ratelimit-")
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _scrub_uri(uri: str) -> str:
    parts = urlsplit(uri)
    host = parts.hostname or ""
    netloc = "local-model" if host in _LOOPBACK else parts.netloc.rpartition("@")[2]
    query = urlencode(
        [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if not is_secret_name(k, SCRUBBED_QUERY_PARAMETERS)
        ]
    )
    scheme = "http" if host in _LOOPBACK else parts.scheme
    return urlunsplit((scheme, netloc, parts.path, query, ""))


def _canonical_request(request: Any) -> Any:
    request.uri = _scrub_uri(request.uri)
    for name in list(request.headers):
        lowered = name.lower()
        if (
            lowered.startswith(_VOLATILE_PREFIXES)
            or lowered == "host"
            or is_secret_name(name, SCRUBBED_REQUEST_HEADERS)
        ):
            del request.headers[name]
    return request


def _scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower().startswith(_VOLATILE_PREFIXES) or is_secret_name(name, SCRUBBED_RESPONSE_HEADERS):
            del headers[name]
    return response


def recorder(cassette_dir: str | Path) -> Any:
    """A configured `vcr.VCR`: records once (never in CI, where a missing recording fails).

    Example:
        with recorder("cassettes").use_cassette("chat/plain.yaml"):
            client.get_response_sync("Name a fruit.")
    """
    import vcr

    record_mode = os.environ.get("SO_MIDDLEWARE_RECORD_MODE") or ("none" if os.environ.get("CI") else "once")
    return vcr.VCR(
        cassette_library_dir=str(cassette_dir),
        record_mode=vcr.mode(record_mode),
        match_on=["method", "path", "query", "body"],
        filter_headers=SCRUBBED_REQUEST_HEADERS,
        decode_compressed_response=True,
        before_record_request=_canonical_request,
        before_record_response=_scrub_response,
    )
