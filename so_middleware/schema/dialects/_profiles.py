"""Schema profiles: the JSON-schema dialect each kind of provider accepts.

- `"openai-strict"`: OpenAI Structured Outputs with `strict: true` (also the dialect of strict
  function tools).
- `"anthropic"`: Anthropic JSON outputs / strict tools, a whitelist subset.
- `"json-schema"`: plain pydantic JSON schema, for prompted and json_object modes.
- `"gemini"`, `"gemini-openapi"`, `"bedrock"`, `"mistral"`, `"ollama"`: see `_dialects.py`.

Providers that refuse recursion (Anthropic, Bedrock, Ollama, Gemini's OpenAPI form) get the
schema unrolled to `recursion_depth` levels (`_unroll.py`); the answer is validated against the
full type.
"""

from __future__ import annotations

import copy
from typing import Any, get_args

from ...core import SchemaProfile, UserError
from .._refs import check_expansion
from .._schema_tools import cyclic_definitions
from ._dialects import ANTHROPIC, render_dialect
from ._limits import anthropic_limit_problems, openai_limit_problems
from ._transform import Problem, ProfileRules, transform_schema
from ._unroll import DEFAULT_RECURSION_DEPTH, unroll_recursion

__all__ = ["PROFILES", "SchemaProfile", "render_profile"]

PROFILES: tuple[str, ...] = get_args(SchemaProfile)

OPENAI_STRICT = ProfileRules(
    name="openai-strict",
    force_required=True,
    keep_default=False,
    const_as_enum=True,
    keep_numeric=True,
    keep_max_items=True,
    max_min_items=None,
    allow_recursion=True,
    allow_all_of=False,
    simple_patterns_only=False,
    formats=frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}),
)

# Where a dialect cannot say something, the route of the same provider that can.
_WIDER = {"gemini-openapi": "the 'gemini' profile (response_json_schema)"}


def _problem_message(what: str, profile: str, problems: list[Problem], *, suggest_non_strict: bool) -> str:
    shown = "; ".join(str(problem) for problem in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    wider = _WIDER.get(profile, "the 'json-schema' profile (prompted output)")
    hint = (
        " Pass strict=False to fall back to a non-strict schema, or change the type."
        if suggest_non_strict
        else f" Change the type, or use {wider} instead."
    )
    return f"Cannot build the {profile} schema for {what}: {shown}{more}.{hint}"


def strict_openai(base: dict[str, Any], *, wrapped: bool) -> tuple[dict[str, Any], list[Problem]]:
    """The openai-strict rewrite and the problems that keep it from being accepted."""
    schema, problems = transform_schema(base, OPENAI_STRICT, wrapped=wrapped)
    if not problems:
        problems = openai_limit_problems(schema)
    return schema, problems


def _too_large_to_inline(base: dict[str, Any], what: str) -> bool:
    try:
        check_expansion(base, what)
    except UserError:
        return True
    return False


def render_profile(
    base: dict[str, Any],
    profile: str,
    *,
    strict: bool,
    wrapped: bool,
    what: str,
    recursion_depth: int = DEFAULT_RECURSION_DEPTH,
) -> dict[str, Any]:
    """The schema for `profile`, or a `UserError` naming the type, the field path and the reason.

    With `strict=False`, `"openai-strict"` falls back to the plain schema when the type cannot be
    made strict; the caller then sends it with `strict: false`.
    """
    if profile == "json-schema":
        return copy.deepcopy(base)
    if profile == "openai-strict":
        # Inlined, the schema must stay within budget; sent as it is (strict=False), it need not.
        if not strict and _too_large_to_inline(base, what):
            return copy.deepcopy(base)
        check_expansion(base, what, "; pass strict=False to send it with its $refs")
        schema, problems = strict_openai(base, wrapped=wrapped)
        if not problems:
            return schema
        if strict:
            raise UserError(_problem_message(what, profile, problems, suggest_non_strict=True))
        return copy.deepcopy(base)
    if profile == "anthropic":
        check_expansion(base, what)
        if cyclic_definitions(base):
            base = unroll_recursion(base, depth=recursion_depth, what=what, provider="Anthropic")
        schema, problems = transform_schema(base, ANTHROPIC, wrapped=wrapped)
        if not problems:
            problems = anthropic_limit_problems(schema)
        if problems:
            raise UserError(_problem_message(what, profile, problems, suggest_non_strict=False))
        return schema
    if profile in PROFILES:
        schema, problems = render_dialect(
            base, profile, strict=strict, wrapped=wrapped, what=what, depth=recursion_depth
        )
        if problems:
            raise UserError(_problem_message(what, profile, problems, suggest_non_strict=False))
        return schema
    raise UserError(f"Unknown schema profile {profile!r}; expected one of {', '.join(PROFILES)}.")
