"""JSON out of the gateway: the wire's `dumps` (orjson, with the standard library for what orjson
refuses)."""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from ..wire.common import dumps

__all__ = ["JSONAnswer"]


class JSONAnswer(JSONResponse):
    """Starlette's `JSONResponse`, encoded by `dumps` (several times cheaper on a response object)."""

    def render(self, content: Any) -> bytes:
        """The body's bytes."""
        return dumps(content)
