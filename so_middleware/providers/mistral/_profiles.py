"""The capability profile of Mistral's chat API.

Every Mistral model takes a custom structured output (docs.mistral.ai, release note 2025-01-28):
`response_format` json_schema with `strict: true`, which asks only `additionalProperties: false`
of each object (`"mistral"` dialect). The native route is the one chosen: strict json_schema
passed 25/25 where the tool route passed 16/25 on deep schemas (pydantic-ai PR #4763). Tools and
a forced call (`tool_choice` `any` or one function) are taken; tool arguments are not
schema-enforced. A trailing assistant message is sent with `prefix: true` (docs.mistral.ai, the
chat API's `AssistantMessage.prefix`): the model continues it, and the answer repeats it first.
"""

from __future__ import annotations

from ...core import Capabilities

__all__ = ["MISTRAL_API", "profile_for"]

MISTRAL_API = Capabilities(
    name="mistral",
    native_json_schema=True,
    json_object=True,
    tools=True,
    forced_tool_choice=True,
    strict_tools=False,
    assistant_prefill=True,
    prefill_echoed=True,
    schema_profile="mistral",
)


def profile_for(model: str | None) -> Capabilities:
    """The profile for `model`: every current Mistral model has the same structured output.

    Example: `profile_for("mistral-small-latest").schema_profile == "mistral"`.
    """
    return MISTRAL_API
