"""Capability profiles of OpenAI-protocol backends: what each one really enforces.

Picked from the base URL (and model), overridable on every adapter with `capabilities=...`.
The llama-server profile is checked against the real server by the test suite.
"""

from __future__ import annotations

from typing import Literal

from ..._client import Capabilities

__all__ = ["LLAMA_SERVER", "OPENAI_API", "OPENAI_COMPATIBLE", "profile_for"]

OPENAI_API = Capabilities(
    name="openai",
    native_json_schema=True,
    json_object=True,
    tools=True,
    forced_tool_choice=True,
    strict_tools=True,
    assistant_prefill=False,
    schema_profile="openai-strict",
)

# llama.cpp's llama-server: response_format json_schema / json_object are grammar-enforced on
# /v1/chat/completions; forced tool choice is not honoured by small models; an assistant
# prefill is continued and echoed back; /v1/responses ignores text.format but honours a
# Chat Completions response_format key in the same body.
LLAMA_SERVER = Capabilities(
    name="llama-server",
    native_json_schema=True,
    json_object=True,
    tools=True,
    forced_tool_choice=False,
    strict_tools=False,
    assistant_prefill=True,
    prefill_echoed=True,
    response_format_passthrough=True,
    schema_profile="json-schema",
)

# Anything else speaking the protocol (vLLM, Ollama, gateways): formats are accepted, not
# trusted; every answer is validated anyway.
OPENAI_COMPATIBLE = Capabilities(
    name="openai-compatible",
    native_json_schema=True,
    json_object=True,
    tools=True,
    forced_tool_choice=True,
    strict_tools=False,
    schema_profile="json-schema",
)


def profile_for(base_url: str, model: str | None = None, *, route: Literal["chat", "responses"] = "chat") -> Capabilities:
    """The profile for a base URL: the official API, or a generic compatible server."""
    if "api.openai.com" in base_url or ".openai.azure.com" in base_url:
        return OPENAI_API
    return OPENAI_COMPATIBLE
