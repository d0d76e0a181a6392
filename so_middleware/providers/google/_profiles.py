"""Capability profiles of the Gemini API, picked by model.

Every active Gemini model takes a JSON Schema as `response_json_schema` (Nov 2025): the schema is
rendered in the `"gemini"` dialect. Models before 2.5 (the 1.x and 2.0 families) get the older
OpenAPI-subset `response_schema` (the `"gemini-openapi"` dialect). All of them enforce JSON mode,
take function tools and a forced call (`mode: ANY` with one allowed name); none takes an assistant
prefill.
"""

from __future__ import annotations

import re

from ...core import Capabilities

__all__ = ["GEMINI_API", "GEMINI_API_OPENAPI_SCHEMA", "profile_for"]

GEMINI_API = Capabilities(
    name="gemini",
    native_json_schema=True,
    json_object=True,
    tools=True,
    forced_tool_choice=True,
    strict_tools=False,
    assistant_prefill=False,
    schema_profile="gemini",
)

GEMINI_API_OPENAPI_SCHEMA = GEMINI_API.replace(name="gemini-openapi", schema_profile="gemini-openapi")

# `gemini-1.5-pro`, `gemini-2.0-flash-001`, `models/gemini-1.0-pro`, `publishers/google/models/gemini-2.0-flash`
_BEFORE_JSON_SCHEMA = re.compile(r"(^|/)gemini-(1(\.\d+)?|2\.0)(-|$)")


def profile_for(model: str | None) -> Capabilities:
    """The profile for `model` (the JSON Schema one for a model it does not know).

    Example: `profile_for("gemini-2.0-flash").schema_profile == "gemini-openapi"`.
    """
    if model and _BEFORE_JSON_SCHEMA.search(model):
        return GEMINI_API_OPENAPI_SCHEMA
    return GEMINI_API
