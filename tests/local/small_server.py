"""Helpers shared by test_local_context.py and the cases of it that run through the layers
(test_local_context_through_the_layers.py)."""

from __future__ import annotations

from collections.abc import Iterator

from so_middleware.local import (
    LocalModelServer,
)

LONG_TEXT = "The quick brown fox jumps over the lazy dog. " * 120  # about 1,200 tokens


def small_server_running() -> Iterator[LocalModelServer]:
    """The body of a `small_server` fixture: a server whose one slot holds 512 tokens."""
    with LocalModelServer(parallel=1, context_size=512) as server:
        yield server
