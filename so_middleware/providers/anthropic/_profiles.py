"""Capability profiles of Anthropic-protocol backends: what each one really enforces.

Picked from the base URL and model (or, for a server of its own, by discovery: llama.cpp, vLLM,
Ollama), overridable on the adapter with `capabilities=...`. The llama-server profile is
re-checked against the real server by tests/integration/test_profiles_local.py; the vLLM and
Ollama ones follow each engine's own Messages source, cited on each.

What an engine honours on its Messages route is its own fact, not its Chat Completions one: an
engine that converts the Messages request into its chat request keeps only the fields its
Messages request model declares, so its own constraint fields (vLLM's `structured_outputs` and
`guided_json`, Ollama's `format`, llama-server's `json_schema` and `grammar`) are dropped there. None of these engines takes an engine-only constraint on this route:
vLLM enforces the route's own `output_config.format` (so `native`), the others nothing (so
`prompted`).
"""

from __future__ import annotations

import re

from ...core import Capabilities
from .._discovery import ServerInfo

__all__ = [
    "ANTHROPIC_API",
    "ANTHROPIC_COMPATIBLE",
    "LLAMA_SERVER_MESSAGES",
    "OLLAMA_MESSAGES",
    "VLLM_MESSAGES",
    "profile_for",
    "rejects_prefill",
    "server_profile",
]

# api.anthropic.com: output_config.format json_schema is enforced, tools (strict too) and a
# forced tool choice (the adapter turns it to auto when extended thinking is on). There is no
# JSON mode. Schemas follow Anthropic's subset (additionalProperties false, no numeric or length
# bounds). No assistant prefill: Claude Opus/Sonnet 4.6 and every later model answer a trailing
# assistant message with 400 "This model does not support assistant message prefill"; the
# profiles of the models known to continue one (below) add it back.
ANTHROPIC_API = Capabilities(
    name="anthropic",
    native_json_schema=True,
    json_object=False,
    tools=True,
    forced_tool_choice=True,
    strict_tools=True,
    assistant_prefill=False,
    prefill_echoed=False,
    schema_profile="anthropic",
)

# The 4.5 family (Opus, Sonnet, Haiku 4.5) continues a prefill (without echoing it).
_ANTHROPIC_API_WITH_PREFILL = ANTHROPIC_API.replace(assistant_prefill=True)
# Models older than the structured-outputs release (Claude 2, 3, 3.5, 3.7, Opus/Sonnet 4 and 4.1):
# no output_config and no strict tools, a prefill is continued, everything else as above.
_ANTHROPIC_API_WITHOUT_FORMAT = _ANTHROPIC_API_WITH_PREFILL.replace(native_json_schema=False, strict_tools=False)
_OLDER_MODELS = re.compile(r"claude-(instant|[123](\b|[-.])|(opus|sonnet)-4(-[01])?(-\d{8})?$)")
# Claude models known to continue a prefill: Claude 1 to 3.7, and Opus/Sonnet/Haiku 4, 4.1 and 4.5,
# by any platform's spelling (`claude-sonnet-4-5-20250929`, `anthropic.claude-3-5-sonnet-20240620-v1:0`,
# `claude-opus-4-5@20251101`, `anthropic/claude-opus-4.5`). A version digit after the family
# (`claude-opus-4-6`, `claude-sonnet-4.6`) is a later model; an 8-digit date is not.
_PREFILL_MODELS = re.compile(r"claude-(instant|[123](?!\d)|(opus|sonnet|haiku)-4([-.][015])?(?![-.]\d(?!\d)))")

# llama.cpp's llama-server on /v1/messages with SmolLM2-135M: output_config is ignored (free
# text comes back), tools never reach the model, and there is no JSON mode; an assistant
# prefill is continued but echoed at the start of the answer (the adapter strips the echo).
# The engine's own constraints, honoured on its other routes, are ignored here too: the
# `json_schema`, `grammar` and `response_format` body fields (bench/route_constraints.py), so
# `prompted` with its prefill is the one strategy left. So are its penalties: the route passes
# `temperature`, `top_p` and `top_k` on to the sampler and drops `frequency_penalty`,
# `presence_penalty`, `repeat_penalty` and `dry_multiplier` (bench/loop_sampling.py: each left
# all three looping answers byte for byte the same), so a loop is re-asked at `temperature` 0.8,
# which ended two of the three.
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
    loop_breaking=(("temperature", 0.8),),
    prone_to_loops=True,
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

# vLLM's /v1/messages (vllm/entrypoints/anthropic/protocol.py and serving.py, vllm-project/vllm
# pull request 42396, 2026): `output_config.format` json_schema becomes the `response_format` its
# structured-output backend enforces, and `tool_choice` "any" / "tool" become "required" / a named
# function, enforced the same way. `AnthropicMessagesRequest` is a plain pydantic model that
# declares neither `structured_outputs` / `guided_json` nor any penalty, so those body fields are
# dropped (no loop-breaking sampling reaches the engine); the chat request it builds adds a
# generation prompt, so a trailing assistant message is closed, not continued. A vLLM from
# before that change drops `output_config` too: the first answer shows it, and `auto` moves on
# to the forced tool and remembers it (`client.learned`).
VLLM_MESSAGES = ANTHROPIC_COMPATIBLE.replace(
    name="vllm-messages",
    native_json_schema=True,
    assistant_prefill=False,
    schema_profile="json-schema",
    schema_in_instructions=True,  # enforced by its grammar, unseen by the model
)

# Ollama's /v1/messages (ollama/ollama anthropic/anthropic.go, `MessagesRequest` and
# `FromMessagesRequest`; docs/api/anthropic-compatibility.mdx): the request it builds for the
# engine carries the messages, tools, thinking and `temperature` / `top_p` / `top_k` / `stop`
# only. `output_config` has `effort` alone, there is no `format` field (Ollama's own constraint,
# honoured on /api/chat and /v1/chat/completions), `tool_choice` is documented unsupported, and
# no penalty is read: `prompted` is the one strategy that works, with nothing to break a loop.
OLLAMA_MESSAGES = ANTHROPIC_COMPATIBLE.replace(name="ollama-messages", forced_tool_choice=False)


def rejects_prefill(model: str | None) -> bool:
    """True for a Claude model not known to continue an assistant prefill: Claude 4.6 and later,
    and any Claude model newer than this list. Other models (llama-server's, Ollama's) are not
    Claude: their server's profile decides.

    Example: `rejects_prefill("claude-opus-4-6")` is True, `rejects_prefill("claude-haiku-4-5")` False.
    """
    name = (model or "").lower()
    return "claude" in name and _PREFILL_MODELS.search(name) is None


def profile_for(base_url: str, model: str | None = None) -> Capabilities:
    """The profile for a base URL and model: the official API (by model), or a compatible server.

    Only models known to continue an assistant prefill get one on the official API (a model not
    given or not known gets none); a compatible server keeps it unless the model is a Claude
    model that rejects it.

    Example: `profile_for("https://api.anthropic.com", "claude-haiku-4-5").native_json_schema` is True.
    """
    if "api.anthropic.com" not in base_url:
        return _without_rejected_prefill(ANTHROPIC_COMPATIBLE, model)
    if model is not None and _OLDER_MODELS.match(model):
        return _ANTHROPIC_API_WITHOUT_FORMAT
    if model is not None and _PREFILL_MODELS.search(model.lower()):
        return _ANTHROPIC_API_WITH_PREFILL
    return ANTHROPIC_API


def server_profile(info: ServerInfo, model: str | None = None) -> Capabilities:
    """The shipped profile for a discovered server on the Messages route; generic when unknown.

    Example: `server_profile(ServerInfo("llama.cpp")) is LLAMA_SERVER_MESSAGES`.
    """
    if info.kind == "llama.cpp":
        return LLAMA_SERVER_MESSAGES
    if info.kind == "vllm":
        return VLLM_MESSAGES
    if info.kind == "ollama":
        return _without_rejected_prefill(OLLAMA_MESSAGES, model)
    return _without_rejected_prefill(ANTHROPIC_COMPATIBLE, model)


def _without_rejected_prefill(profile: Capabilities, model: str | None) -> Capabilities:
    return profile.replace(assistant_prefill=False) if rejects_prefill(model) else profile
