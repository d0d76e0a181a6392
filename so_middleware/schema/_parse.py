"""`parse_text`: the schema layer's reading of a response text as a type, behind `ChatResponse.parse`.

`ChatResponse.parse` imports it when called: the core's one import of a layer above it.
"""

from __future__ import annotations

from typing import Any

from ._output_schema import OutputSchema

__all__ = ["parse_text"]


def parse_text(text: str, output_type: Any, *, complete: bool) -> Any:
    """Validate `text` as `output_type`, leniently (code fences, prose around the JSON).

    `complete=True` (a cut-off response) accepts only a complete JSON value in the text, never a
    value repaired from its tail. Raises `ModelBehaviorError` when the text does not validate.

    Example: `parse_text('```json\\n[1, 2]\\n```', list[int], complete=False)` returns `[1, 2]`.
    """
    schema = OutputSchema(output_type, strict=False)  # strictness is a request concern, not a parsing one
    if complete:
        return schema.validate_complete_json(text)
    return schema.validate_json(text, lenient=True)
