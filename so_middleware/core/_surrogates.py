"""Lone UTF-16 surrogates: found and mended here, for every surface. A leaf module.

A lone surrogate (`"\\ud83d"`, half of an emoji cut in two; JSON's `\\u` escapes allow it) has no
UTF-8 spelling: a request carrying one cannot be written, an answer carrying one cannot be sent or
stored. What the caller wrote is refused, naming the place (`lone_surrogate_at`,
`describe_surrogate`); what a model or backend wrote is mended to U+FFFD, as a UTF-8 decoder would
(`mend_text`).

Example: `mend_text("a\\ud83d") == "a\\ufffd"`; `lone_surrogate_at("ok\\udc00") == 2`.
"""

from __future__ import annotations

import re

__all__ = ["describe_surrogate", "lone_surrogate_at", "mend_text"]

# A decoded pair is one code point: any surrogate left in a str stands alone.
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_at(text: str) -> int | None:
    """The index of the first lone surrogate in `text`, or None (ASCII text is never searched)."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


def describe_surrogate(text: str) -> str:
    """`'\\ud83d' at character N` for the first lone surrogate in `text` (which must hold one)."""
    position = lone_surrogate_at(text) or 0
    return f"{text[position]!r} at character {position}"


def mend_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (the same str when it holds none)."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)
