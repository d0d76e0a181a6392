"""How the core reads text as a type: a port the schema layer fills when it is imported.

`ChatResponse.parse` needs the schema layer's lenient reading, which is built on the core; the
core names only this port, and `so_middleware.schema` installs its reader on import (importing
any part of `so_middleware` imports the schema layer too, so the port is always filled).

Example:
    install_text_reader(lambda text, output_type, *, complete: json.loads(text))
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["TextReader", "install_text_reader", "read_text"]


class TextReader(Protocol):
    """`reader(text, output_type, complete=...)` returns the value or raises `ModelBehaviorError`."""

    def __call__(self, text: str, output_type: Any, *, complete: bool) -> Any: ...


_reader: TextReader | None = None


def install_text_reader(reader: TextReader) -> None:
    """Make `reader` the one that `ChatResponse.parse` uses (the schema layer's `parse_text`)."""
    global _reader
    _reader = reader


def read_text(text: str, output_type: Any, *, complete: bool) -> Any:
    """Read `text` as `output_type` with the installed reader (`complete`: a cut-off text counts
    only through a complete JSON value in it)."""
    if _reader is None:  # only a core imported without its package: `import so_middleware` fills it
        raise RuntimeError("no text reader installed: import so_middleware.schema")
    return _reader(text, output_type, complete=complete)
