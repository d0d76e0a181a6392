"""The Responses object's frame: its id, date and status around the request's settings echoed."""

from __future__ import annotations

import re
import time
from typing import Any

from ..wire.responses_events import new_id

__all__ = ["is_response_id", "new_id", "response_skeleton"]

_RESPONSE_ID = re.compile(r"resp_[0-9A-Za-z_-]{1,128}")


def is_response_id(value: str) -> bool:
    """Whether `value` could name a response this gateway made (`new_id("resp")`): any other id is
    a 404 without asking the store (a NUL or a lone surrogate would make some stores raise)."""
    return _RESPONSE_ID.fullmatch(value) is not None


def response_skeleton(frame: dict[str, Any], response_id: str, status: str) -> dict[str, Any]:
    """The response object before any output: the request's `frame` (`ResponsesRequest.frame`, its
    settings echoed) named, dated and given its status."""
    return {**frame, "id": response_id, "created_at": int(time.time()), "status": status, "output": []}
