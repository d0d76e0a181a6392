"""`ModelBehaviorError`s whose message a model can be re-asked with.

The message names each failing field and why, quotes a short piece of the bad value and of the
output, and stays short however large the output was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from ..core import ModelBehaviorError

__all__ = ["json_error", "truncate", "validation_error"]

_MAX_SHOWN_ERRORS = 10
_MAX_INPUT_CHARS = 80
_MAX_RAW_CHARS = 300


def truncate(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def _safe_text(text: str) -> str:
    # Lone surrogates would make the message itself unprintable.
    return text.encode("utf-8", "replace").decode("utf-8")


def _location(loc: Sequence[Any]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(f".{item}" if parts else str(item))
    return "".join(parts) or "<root>"


def _brief(value: Any) -> str:
    try:
        text = repr(value)
    except RecursionError:
        text = f"<{type(value).__name__}>"
    return truncate(_safe_text(text), _MAX_INPUT_CHARS)


def _describe(errors: list[dict[str, Any]]) -> list[str]:
    lines = []
    for error in errors[:_MAX_SHOWN_ERRORS]:
        line = f"- {_location(error.get('loc', ()))}: {error.get('msg', 'invalid')}"
        if "input" in error and error.get("type") not in ("missing", "json_invalid"):
            line += f" (got {_brief(error['input'])})"
        lines.append(line)
    if len(errors) > _MAX_SHOWN_ERRORS:
        lines.append(f"- … and {len(errors) - _MAX_SHOWN_ERRORS} more errors")
    return lines


def _plain_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Keep the error list small and free of the (possibly huge) input values.
    return [{key: value for key, value in error.items() if key in ("type", "loc", "msg")} for error in errors]


def validation_error(exc: ValidationError, raw_text: str, what: str) -> ModelBehaviorError:
    """A pydantic `ValidationError` (JSON or value) as a re-askable `ModelBehaviorError`."""
    errors: list[dict[str, Any]] = [dict(error) for error in exc.errors(include_url=False)]
    return from_errors(errors, raw_text, what)


def from_errors(errors: list[dict[str, Any]], raw_text: str, what: str) -> ModelBehaviorError:
    """Build the error from pydantic-style error dicts (`type`, `loc`, `msg`, optional `input`)."""
    if errors and all(error.get("type") == "json_invalid" for error in errors):
        head = f"The output is not valid JSON for {what}: {errors[0].get('msg', 'invalid JSON')}."
        lines: list[str] = []
    else:
        count = len(errors)
        head = f"The output does not match {what} ({count} error{'s' if count != 1 else ''}):"
        lines = _describe(errors)
    shown = truncate(_safe_text(raw_text), _MAX_RAW_CHARS) if raw_text.strip() else "<empty>"
    message = "\n".join([head, *lines, f"Output was: {shown}"])
    return ModelBehaviorError(message, raw_text=raw_text, errors=_plain_errors(errors))


def json_error(reason: str, raw_text: str, what: str) -> ModelBehaviorError:
    """The output could not be read as JSON at all."""
    return from_errors([{"type": "json_invalid", "loc": (), "msg": reason}], raw_text, what)
