"""Redaction: what a credential looks like, and text fit to show. A leaf module, the one home of
the rule for every surface: repr, logs, span attributes, error messages, the gateway's answers
and printed URLs, and the names the cassettes scrub.

One convention: a secret is replaced by `***`, keeping what says what it was (`sk-***`,
`Bearer ***`, `?api_key=***`); a URL's whole `user:password@` becomes `***@` (a token is often
sent as the user name).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = ["MASK", "SECRET_NAME_PARTS", "SHORT_SECRET_NAMES", "is_secret_name", "redact", "redact_url"]

MASK: Final = "***"
SECRET_NAME_PARTS: Final = (
    "key", "token", "secret", "auth", "password", "passwd", "signature", "cookie", "credential",
)  # fmt: skip
SHORT_SECRET_NAMES: Final = ("sig", "code", "jwt", "sas")  # query parameters no part above catches
_SECRET_NAME = re.compile("|".join(SECRET_NAME_PARTS), re.IGNORECASE)
# None of these reaches across a quote or a space: redacting a compact JSON body keeps it JSON.
_PATTERNS: Final = (
    # a URL's userinfo, whole
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@"), rf"\1{MASK}@"),
    # a query parameter whose name says it is a credential
    (
        re.compile(
            rf"(?i)([?&;](?:[a-z0-9_.-]*(?:{'|'.join(SECRET_NAME_PARTS)})[a-z0-9_.-]*"
            rf"|{'|'.join(SHORT_SECRET_NAMES)})=)[^&;\s\"'#<>]+"
        ),
        rf"\1{MASK}",
    ),
    (re.compile(r"(?i)\b(bearer)\s+[^\s\"',;]+"), rf"\1 {MASK}"),
    (re.compile(r"(?<![A-Za-z0-9])(sk|pk|rk)-[A-Za-z0-9_*-]{3,}"), rf"\1-{MASK}"),  # key-shaped: sk-..., sk-ant-...
)
_SHORTEST_SECRET = 4  # a shorter "secret" (e.g. "x") would mask letters of the message, not a secret


def is_secret_name(name: str, deny: Sequence[str] = ()) -> bool:
    """Whether a header or query parameter called `name` may carry a credential: its name contains
    one of `SECRET_NAME_PARTS` (any case), or is in `deny`.

    Example: `is_secret_name("Ocp-Apim-Subscription-Key")` is True; `is_secret_name("content-type")` False.
    """
    return name.lower() in deny or _SECRET_NAME.search(name) is not None


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """`text` with every given secret and anything credential-shaped masked: a URL's userinfo,
    credential query values, bearer tokens, `sk-`/`pk-`/`rk-` keys.

    Example: `redact("https://user:pw@host/v1?api_key=abc") == "https://***@host/v1?api_key=***"`.
    """
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= _SHORTEST_SECRET:
            text = text.replace(secret, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_url(url: str) -> str:
    """`url` fit to show: its `user:password@` replaced by `***@`, credential query values masked.

    Example: `redact_url("http://me:secret@host:8080/v1?key=k") == "http://***@host:8080/v1?key=***"`.
    """
    return redact(url)
