"""Capability profiles of Amazon Bedrock's Converse API, picked by the model's family.

Converse takes the same request for every model, but what a model honours differs
(docs.aws.amazon.com, Bedrock user guide: "Get validated JSON results from models" lists the models
with structured outputs; "Call a tool with the Converse API" says which take a forced tool choice):

- Native structured output (`outputConfig.textFormat`, enforced) and strict tools: Claude Haiku,
  Sonnet and Opus 4.5 and the Claude models after them, and the open-weight families Qwen,
  DeepSeek, Mistral, Gemma, NVIDIA Nemotron, MiniMax, Kimi and gpt-oss.
- A forced tool choice (`toolChoice.any` / `.tool`), so the structured layer's tool strategy:
  the older Claude models, Amazon Nova, and a family this table does not know.
- Meta Llama takes tools but only `toolChoice.auto`: neither strategy, so the answer is prompted
  and validated.

The family is read from the model id after any cross-region inference-profile prefix (`us.`,
`eu.`, `apac.`, `global.`, ...) and any ARN (`arn:aws:bedrock:...:inference-profile/us.anthropic...`).
Every schema is rendered in the `"bedrock"` dialect (Anthropic's subset); no model continues an
assistant prefill through Converse's structured output, and there is no JSON mode.
"""

from __future__ import annotations

import re

from ...core import Capabilities

__all__ = ["BEDROCK_FORCED_TOOL", "BEDROCK_NATIVE", "BEDROCK_TOOLS_ONLY", "family_of", "profile_for"]

BEDROCK_NATIVE = Capabilities(
    name="bedrock",
    native_json_schema=True,
    json_object=False,
    tools=True,
    forced_tool_choice=True,
    strict_tools=True,
    assistant_prefill=False,
    schema_profile="bedrock",
)

BEDROCK_FORCED_TOOL = BEDROCK_NATIVE.replace(name="bedrock-forced-tool", native_json_schema=False, strict_tools=False)

BEDROCK_TOOLS_ONLY = BEDROCK_FORCED_TOOL.replace(name="bedrock-tools-only", forced_tool_choice=False)

_REGION_PREFIX = re.compile(r"^(us|eu|apac|global|us-gov|jp|au|ca|ap)\.")
_NATIVE_FAMILIES = frozenset(
    {"qwen", "deepseek", "mistral", "google", "nvidia", "minimax", "moonshot", "moonshotai", "openai"}
)
# Claude 4.5 and later: `claude-haiku-4-5`, `claude-opus-4-6`, `claude-sonnet-5`, ...
_CLAUDE_WITH_FORMAT = re.compile(r"claude-(haiku|sonnet|opus)-(4-[5-9]|[5-9])")


def family_of(model: str) -> str:
    """The provider family of a Bedrock model id (`anthropic`, `meta`, `amazon`, ...), "" when the id
    names none (an application inference profile's opaque ARN).

    Example: `family_of("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == "anthropic"`.
    """
    name = model.rsplit("/", 1)[-1] if model.startswith("arn:") else model
    name = _REGION_PREFIX.sub("", name)
    return name.split(".", 1)[0] if "." in name else ""


def profile_for(model: str | None) -> Capabilities:
    """The profile for `model` (the forced-tool one for a family it does not know).

    Example: `profile_for("us.meta.llama3-3-70b-instruct-v1:0").forced_tool_choice is False`.
    """
    family = family_of(model or "")
    if family == "anthropic":
        return BEDROCK_NATIVE if _CLAUDE_WITH_FORMAT.search(model or "") else BEDROCK_FORCED_TOOL
    if family in _NATIVE_FAMILIES:
        return BEDROCK_NATIVE
    if family == "meta":
        return BEDROCK_TOOLS_ONLY
    return BEDROCK_FORCED_TOOL
