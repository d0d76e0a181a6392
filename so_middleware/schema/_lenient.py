"""Lenient reading of JSON written by a model that was only asked for JSON in the prompt.

Order of attempts, stopping at the first value that validates:
1. the whole text as it is (wrapped, then unwrapped when a wrapper was expected);
2. JSON candidates found in the text, last first: fenced code blocks, then balanced `{...}` /
   `[...]` spans, then an unclosed trailing span (truncated output);
3. the same candidates and the whole text repaired by `json-repair` (trailing commas, comments,
   single and smart quotes, missing brackets).
If nothing validates, the error of the last candidate that at least parsed is raised, as it
says most about what the model got wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import json_repair

from ..core import ModelBehaviorError
from ._validators import Validator

__all__ = ["json_spans", "lenient_validate"]

_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_STRUCTURAL = re.compile(r'["\\{}\[\]]')
_SMART_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'"})
_MAX_CANDIDATES = 8
# json-repair recurses per nesting level; deeper text could not validate anyway (pydantic's JSON
# parser stops at about 200 levels).
_MAX_REPAIR_DEPTH = 200
_CLOSERS = {"{": "}", "[": "]"}


def json_spans(text: str) -> tuple[list[str], str | None, int]:
    """Balanced top-level `{}`/`[]` spans, the unclosed trailing span, and the deepest nesting.

    One linear pass; strings (double-quoted) are skipped so brackets inside them do not count.
    """
    spans: list[str] = []
    stack: list[str] = []
    start = 0
    deepest = 0
    in_string = False
    escaped_at = -1
    for match in _STRUCTURAL.finditer(text):
        position = match.start()
        char = match.group()
        if in_string:
            if position == escaped_at:
                continue
            if char == "\\":
                escaped_at = position + 1
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = bool(stack)
        elif char in _CLOSERS:
            if not stack:
                start = position
            stack.append(_CLOSERS[char])
            deepest = max(deepest, len(stack))
        elif char in "}]":
            if stack and stack[-1] == char:
                stack.pop()
                if not stack:
                    spans.append(text[start : position + 1])
            else:
                stack.clear()
    tail = text[start:] if stack else None
    return spans, tail, deepest


def _fenced(text: str) -> list[str]:
    if "```" not in text:
        return []
    return [block.strip() for block in _FENCE.findall(text) if block.strip()]


def _attempts(text: str) -> Iterator[tuple[str, bool]]:
    """(candidate text, needs repair) in the order they should be tried."""
    stripped = text.strip()
    yield stripped, False
    fenced = _fenced(text)
    spans, tail, deepest = json_spans(text)
    candidates = list(reversed(fenced)) + list(reversed(spans))
    candidates = [candidate for candidate in candidates if candidate != stripped][:_MAX_CANDIDATES]
    for candidate in candidates:
        yield candidate, False
    if deepest > _MAX_REPAIR_DEPTH:
        return
    for candidate in candidates:
        yield candidate, True
    if tail is not None:
        yield tail, True
    yield stripped, True


def _repair(candidate: str) -> str | None:
    try:
        repaired = json_repair.repair_json(candidate.translate(_SMART_QUOTES), return_objects=True)
        if repaired == "" and candidate.strip() not in ('""', "''"):
            return None
        return json.dumps(repaired, ensure_ascii=False)
    except Exception:
        return None


def lenient_validate(text: str, validator: Validator) -> Any:
    """Validate `text` forgivingly; raise the most telling `ModelBehaviorError` if nothing fits."""
    checks: list[Callable[[str], Any]] = [validator.validate_json]
    if validator.wrapped:
        checks.append(validator.validate_inner_json)
    best: ModelBehaviorError | None = None
    first: ModelBehaviorError | None = None
    seen: set[str] = set()
    for candidate, repair in _attempts(text):
        attempt = _repair(candidate) if repair else candidate
        if attempt is None or attempt in seen:
            continue
        seen.add(attempt)
        for check in checks:
            try:
                return check(attempt)
            except ModelBehaviorError as exc:
                first = first or exc
                parsed = not all(error.get("type") == "json_invalid" for error in exc.errors)
                if parsed and best is None:
                    best = exc
    error = best or first
    if error is None:  # only when the text was empty in every form
        error = _empty_output_error(validator, text)
    error.raw_text = text
    raise error


def _empty_output_error(validator: Validator, text: str) -> ModelBehaviorError:
    """The error for text with no usable content at all."""
    try:
        validator.validate_json(text)
    except ModelBehaviorError as exc:
        return exc
    return ModelBehaviorError(f"The output is empty; expected {validator.what}.", raw_text=text)
