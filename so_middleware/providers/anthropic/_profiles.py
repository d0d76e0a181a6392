"""Capability profiles of Anthropic-protocol backends: what each one really enforces.

Picked from the base URL and model, overridable on the adapter with `capabilities=...`.
The llama-server profile is re-checked against the real server by tests/test_profiles_local.py.
"""

from __future__ import annotations

import re

from ...core import Capabilities
from .._discovery import ServerInfo

__all__ = ["ANTHROPIC_API", "ANTHROPIC_COMPATIBLE", "LLAMA_SERVER_MESSAGES", "profile_for", "server_profile"]

# api.anthropic.com: output_config.format json_schema is enforced, tools (strict too) and a
# forced tool choice (the adapter turns it to auto when extended thinking is on), and an
# assistant prefill is continued without being echoed. There is no JSON mode. Schemas follow
# Anthropic's subset (additionalProperties false, no numeric or length bounds).
ANTHROPIC_API = Capabilities(
    name="anthropic",
    native_json_schema=True,
    json_object=False,
    tools=True,
    forced_tool_choice=True,
    strict_tools=True,
    assistant_prefill=True,
    prefill_echoed=False,
    schema_profile="anthropic",
)

# Models older than the structured-outputs release (Claude 2, 3, 3.5, 3.7, Opus/Sonnet 4 and 4.1):
# no output_config and no strict tools, everything else as above.
_ANTHROPIC_API_WITHOUT_FORMAT = ANTHROPIC_API.replace(native_json_schema=False, strict_tools=False)
_OLDER_MODELS = re.compile(r"claude-(instant|[123](\b|[-.])|(opus|sonnet)-4(-[01])?(-\d{8})?$)")

# llama.cpp's llama-server on /v1/messages with SmolLM2-135M: output_config is ignored (free
# text comes back), tools never reach the model, and there is no JSON mode; an assistant
# prefill is continued but echoed at the start of the answer (the adapter strips the echo).
LLAMA_SERVER_MESSAGES = Capabilities(
    name="llama-server-messages",
    native_json_schema=False,
    json_object=False,
    tools=False,
    forced_tool_choice=False,
    strict_tools=False,
    assistant_prefill=True,
    prefill_echoed=True,
    schema_profile="json-schema",
)

# Another server speaking the protocol: prefill is the one thing every implementation keeps.
ANTHROPIC_COMPATIBLE = Capabilities(
    name="anthropic-compatible",
    native_json_schema=False,
    json_object=False,
    tools=True,
    forced_tool_choice=True,
    strict_tools=False,
    assistant_prefill=True,
    schema_profile="anthropic",
)


def profile_for(base_url: str, model: str | None = None) -> Capabilities:
    """The profile for a base URL and model: the official API (by model), or a compatible server.

    Example: `profile_for("https://api.anthropic.com", "claude-haiku-4-5").native_json_schema` is True.
    """
    if "api.anthropic.com" not in base_url:
        return ANTHROPIC_COMPATIBLE
    if model is not None and _OLDER_MODELS.match(model):
        return _ANTHROPIC_API_WITHOUT_FORMAT
    return ANTHROPIC_API


def server_profile(info: ServerInfo, model: str | None = None) -> Capabilities:
    """The shipped profile for a discovered server on the Messages route; generic when unknown.

    Example: `server_profile(ServerInfo("llama.cpp")) is LLAMA_SERVER_MESSAGES`.
    """
    if info.kind == "llama.cpp":
        return LLAMA_SERVER_MESSAGES
    return ANTHROPIC_COMPATIBLE
