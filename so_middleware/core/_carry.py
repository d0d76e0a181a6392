"""`carry`: the one place so_middleware writes onto an exception someone else raised."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

__all__ = ["carry"]


def carry(error: BaseException, *, notes: Sequence[str] = (), **attributes: Any) -> BaseException:
    """Hang `attributes` and `notes` on `error` (an SDK's exception, a user's), leaving its type
    and message alone, so a caller who catches the SDK's own type still finds what so_middleware
    knows: its `TransportFailure`, the attempts a run made, the clients that failed first.

    An exception that takes no attributes (`__slots__`) goes without them; the notes are added
    where they can be (`__notes__`, shown by tracebacks from Python 3.11). Returns `error`.

    Example: `carry(error, notes=["fallback: client 0 failed first"], fallback_errors=[first])`.
    """
    with contextlib.suppress(AttributeError, TypeError):
        for name, value in attributes.items():
            setattr(error, name, value)
    if notes:
        with contextlib.suppress(AttributeError, TypeError):
            setattr(error, "__notes__", [*(getattr(error, "__notes__", None) or []), *notes])  # noqa: B010
    return error
