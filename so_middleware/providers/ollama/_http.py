"""`/api/chat` over the `ollama.AsyncClient`'s own httpx client, without its per-call overhead.

Used when `DirectPost` can send for that client (else the SDK's request method sends). The
answers and the errors are the SDK's: a status other than 2xx is its `ResponseError(body text,
status)`, an `error` field inside a stream its `ResponseError(error)`, a server it cannot reach on a
plain call its `ConnectionError`. A stream is the NDJSON answer split at newlines, one JSON object a
line, as the SDK reads it; like the SDK's, it sends the request when first iterated (so the chunk
reader's idle timer also covers the wait for the answer's head).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import ollama

from ...wire.common import dumps, loads
from .._direct_post import DirectPost
from .._openai_privates import ollama_connection_message

__all__ = ["answer_of", "chunks_of", "encoded"]


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def encoded(body: dict[str, Any]) -> bytes:
    """The body as httpx writes a `json=` argument (compact, UTF-8, no NaN): the JSON the SDK sends.

    Written by orjson (`wire.common.dumps`), several times cheaper than the standard library's
    encoder: the same bytes, but for the spelling of a float under 1e-4 (`0.00001` for `1e-05`, the
    same number). A body whose bytes hold a `null` or a `NaN` is written as httpx writes it
    instead, so that a NaN or an infinity is refused (`ValueError`) as the SDK refuses it, where
    orjson would write `null`.
    """
    data = dumps(body)
    return _encode(body).encode() if b"null" in data or b"NaN" in data or b"Infinity" in data else data


async def answer_of(post: DirectPost, body: bytes) -> Any:
    """The JSON answer to a plain `/api/chat` call."""
    try:
        response = await post.send(body)
    except httpx.ConnectError:
        raise ConnectionError(ollama_connection_message()) from None
    try:
        await response.aread()
    finally:
        await response.aclose()
    if not response.is_success:
        raise ollama.ResponseError(response.text, response.status_code) from None
    return json.loads(response.content)


async def chunks_of(post: DirectPost, body: bytes) -> AsyncIterator[Any]:
    """The chunks of a streamed `/api/chat` call, each the JSON object of one line."""
    response = await post.send(body)
    try:
        if not response.is_success:
            await response.aread()
            raise ollama.ResponseError(response.text, response.status_code) from None
        rest = b""
        async for data in response.aiter_bytes():
            lines = (rest + data).split(b"\n") if rest else data.split(b"\n")
            rest = lines.pop()  # the start of a line still to come ("" after a newline)
            for line in lines:
                yield _part(line)
        if rest:
            yield _part(rest)
    finally:
        await response.aclose()


def _part(line: bytes) -> Any:
    part = loads(line)  # as the SDK's line reader decodes (invalid UTF-8 replaced)
    error = part.get("error")
    if error:
        raise ollama.ResponseError(error)
    return part
