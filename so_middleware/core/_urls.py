"""`redact_url`: a URL fit to show (repr, logs, span attributes, error messages). A leaf module."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_url"]


def redact_url(url: str) -> str:
    """`url` with any `user:password@` replaced by `***@`; other URLs are returned as they are.

    Example: `redact_url("http://me:secret@host:8080/v1") == "http://***@host:8080/v1"`.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>" if "@" in url else url
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))
