"""The words of the unconstrained strategies: the shape of the answer in the instructions, and
a JSON prefill that starts it."""

from __future__ import annotations

from typing import Any

from ...core import ChatOptions
from ...schema import OutputSchema, opening, shape_hint

__all__ = ["instructions_for", "outlined_instructions", "prefill_for"]


def _hint_schema(schema: OutputSchema, profile: Any) -> dict[str, Any]:
    # The hint is prose for the model, not a schema the backend checks: a type the profile's
    # dialect cannot express (an open dict under the Anthropic subset) is shown as plain JSON schema.
    return schema.json_schema("json-schema" if profile == "anthropic" else profile)


def instructions_for(options: ChatOptions, schema: OutputSchema, profile: Any) -> str:
    """The caller's instructions, then the answer's shape.

    A skeleton, not the JSON schema: models prompted with a schema often copy it back (SmolLM2
    did on 2 of 3 extractions; with the skeleton, on none). What the skeleton cannot show is
    checked by validation and named in the re-ask.
    """
    asked = (
        "Respond with only a JSON object shaped like this, filled in with values taken from the "
        f"conversation (no prose, no code fences):\n{shape_hint(_hint_schema(schema, profile))}"
    )
    return f"{options.instructions}\n\n{asked}" if options.instructions else asked


def outlined_instructions(options: ChatOptions, schema: OutputSchema) -> str | None:
    """The caller's instructions, then an outline of the schema the engine enforces.

    For a native request to an engine that constrains the answer by grammar without showing the
    schema to the model: the outline carries what the grammar cannot (descriptions, formats,
    examples), in a few lines rather than the schema itself. A schema with nothing of that (a bare
    `list[int]`) gets none: the caller's instructions are kept as they are.
    """
    outline = schema.outline()
    if outline is None:
        return options.instructions  # `list[int]`: the grammar says it all, and an outline only adds words
    return f"{options.instructions}\n\n{outline}" if options.instructions else outline


def prefill_for(schema: OutputSchema, profile: Any) -> str:
    """A JSON prefill that starts the answer as deep as only one shape can go.

    Small models that ignore instructions (and copy the schema back) still continue a started
    object, and write the value the opening asks for: a string opened with its quote gets a
    value rather than another object, a list opened with its bracket gets its items rather than
    bare numbers (`schema.opening`).
    """
    return opening(_hint_schema(schema, profile)) or "{"
