"""A conversation window packed into the `encrypted_content` of one `compaction` item, and back.

The window is zlib-compressed JSON in URL-safe base64 behind a version prefix. It is not secret from
its client (it is that client's own conversation), and a forged item can say no more than the same
items sent in the clear: what it expands into is checked as any input is.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from typing import Any

from .._errors import BadRequest

__all__ = ["MAX_COMPACTED", "expanded", "is_compaction", "packed"]

MAX_COMPACTED = 10_485_760  # characters of `encrypted_content`: the spec's bound on the item
_MAX_WINDOW = 64 * 1024 * 1024  # bytes of JSON one compaction item may expand into
_PREFIX = "smc1."  # the format's version: a later one can be told apart and refused by name


def packed(window: list[dict[str, Any]]) -> str:
    """`window` as a compaction item's `encrypted_content`; a 400 if it would pass the spec's bound."""
    text = (
        _PREFIX + base64.urlsafe_b64encode(zlib.compress(json.dumps(window, separators=(",", ":")).encode())).decode()
    )
    if len(text) > MAX_COMPACTED:
        raise BadRequest(f"The compacted window would exceed {MAX_COMPACTED} characters.", "input")
    return text


def is_compaction(item: Any) -> bool:
    """Whether an input item is a `compaction` item (from `/v1/responses/compact`)."""
    return isinstance(item, dict) and item.get("type") == "compaction"


def expanded(items: list[Any]) -> list[Any]:
    """`items` with every compaction item replaced by the items it holds; a 400 naming the item's
    `encrypted_content` if it is not one this gateway made."""
    out: list[Any] = []
    for index, item in enumerate(items):
        out.extend(_opened(item, f"input[{index}].encrypted_content") if is_compaction(item) else [item])
    return out


def _opened(item: dict[str, Any], where: str) -> list[Any]:
    content = item.get("encrypted_content")
    if not isinstance(content, str) or not content.startswith(_PREFIX):
        raise BadRequest(f"{where} is not a compaction made by this gateway.", where)
    inflater = zlib.decompressobj()
    try:  # bounded: a small item must not inflate into gigabytes
        raw = inflater.decompress(base64.urlsafe_b64decode(content[len(_PREFIX) :]), _MAX_WINDOW)
        if inflater.unconsumed_tail:
            raise BadRequest(f"{where} holds more than {_MAX_WINDOW} bytes.", where)
        window = json.loads(raw)
    except (binascii.Error, zlib.error, ValueError):
        raise BadRequest(f"{where} is damaged: it does not decode.", where) from None
    if not isinstance(window, list) or not all(isinstance(entry, dict) for entry in window):
        raise BadRequest(f"{where} does not hold a list of items.", where)
    return window
