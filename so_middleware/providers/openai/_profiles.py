"""Capability profiles of OpenAI-protocol backends, per route: what each one really enforces.

Picked from the base URL (and model), overridable on every adapter with `capabilities=...`.
The llama-server profiles are re-checked against the real server by tests/integration/test_profiles_local.py.
"""

from __future__ import annotations

import re
from typing import Literal

from ...core import Capabilities
from .._discovery import ServerInfo

__all__ = [
    "LLAMA_SERVER",
    "LLAMA_SERVER_CHAT",
    "LLAMA_SERVER_RESPONSES",
    "OPENAI_API",
    "OPENAI_API_RESPONSES",
    "OPENAI_COMPATIBLE",
    "llama_server_profile",
    "GATEWAY_RESPONSES",
    "OLLAMA_CHAT",
    "VLLM_CHAT",
    "profile_for",
    "server_profile",
    "takes_grammar_tools",
]

Route = Literal["chat", "responses"]

# api.openai.com, Chat Completions: response_format json_schema (strict) enforced, strict
# function tools, forced tool choice; no assistant prefill. `frequency_penalty` is a Chat
# Completions parameter (`completion_create_params`), sent to break a loop.
OPENAI_API = Capabilities(
    name="openai",
    native_json_schema=True,
    json_object=True,
    tools=True,
    forced_tool_choice=True,
    strict_tools=True,
    assistant_prefill=False,
    schema_profile="openai-strict",
    loop_breaking=(("frequency_penalty", 0.5),),
)

# api.openai.com, Responses: the same constraints through `text.format`. The Responses API has no
# penalty parameter (`response_create_params` has neither `frequency_penalty` nor
# `presence_penalty`, and the API refuses a parameter it does not know), and its one sampling
# knob left, `temperature`, is refused by reasoning models: nothing known breaks a loop there, so
# a looping answer ends the run (`IncompleteOutputError`).
OPENAI_API_RESPONSES = OPENAI_API.replace(name="openai-responses", loop_breaking=())

# llama.cpp's llama-server on /v1/chat/completions with SmolLM2-135M: response_format json_schema
# and json_object are grammar-enforced; tools never reach the model (its chat template has no
# tool support: the prompt is the same with and without them), so no tool call comes back, and
# the adapter emulates a required call through the enforced schema (`_tool_emulation`); an
# assistant prefill is continued and echoed at the start of the answer.
LLAMA_SERVER_CHAT = Capabilities(
    name="llama-server",
    native_json_schema=True,
    json_object=True,
    tools=False,
    forced_tool_choice=False,
    strict_tools=False,
    tool_emulation=True,
    assistant_prefill=True,
    prefill_echoed=True,
    response_format_passthrough=False,
    schema_profile="json-schema",
    # The grammar enforces the schema unseen, but SmolLM2-135M does no better with its outline
    # (bench/quality.py --outline, BENCHMARKS.md section 4): at temperature 0 the runs repeat, and
    # the outline changes 11 of the 32 answers, 6 to right and 5 to wrong (12 -> 13 exactly
    # correct on Chat and on Responses), no direction; after the user's text it costs two valid
    # answers, its field lines alone change 8 answers, 4 each way, and on Messages it costs two
    # exact ones. Off here; on where the models are larger (vLLM, Ollama, generic servers).
    schema_in_instructions=False,
    # Measured on the bench tasks that loop (bench/loop_rescue.py): `frequency_penalty` 0.5 ends
    # both loops; llama.cpp's DRY sampler does nothing to a JSON loop with its default sequence
    # breakers (`"`, `:`, newline split every repeat), and with none it rescued one of two.
    loop_breaking=(("frequency_penalty", 0.5),),
    prone_to_loops=True,  # the small models it serves loop (two of the bench's tasks, at temperature 0)
    # a GBNF `grammar` body field, honoured on /v1/chat/completions and /v1/responses, ignored on
    # /v1/messages (bench/route_constraints.py)
    text_constraint="llama.cpp",
)
LLAMA_SERVER = LLAMA_SERVER_CHAT

# llama-server on /v1/responses: `text.format` is ignored (free text comes back), but a Chat
# Completions `response_format` key in the same body is enforced, so the adapter sends both and
# the format is enforced end to end. Tools are dropped as on chat; a trailing assistant message
# (with "type": "message") is continued and echoed. The server reports `status: completed`
# even when max_output_tokens cut the answer, so truncation shows as `stop` on this route. The
# body's sampling fields reach the sampler as on chat: `frequency_penalty` 0.5 ended all three
# looping answers of bench/loop_sampling.py here too.
LLAMA_SERVER_RESPONSES = LLAMA_SERVER_CHAT.replace(
    name="llama-server-responses", response_format_passthrough=True, tool_emulation=False
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
    # vLLM, Ollama and LM Studio enforce the schema by grammar without showing it to the model
    # (Ollama's docs advise putting it in the prompt too).
    schema_in_instructions=True,
    loop_breaking=(("frequency_penalty", 0.5),),  # OpenAI's sampling field; vLLM and Ollama read it too
)


def llama_server_profile(route: Route = "chat", model: str | None = None) -> Capabilities:
    """The llama-server profile of an OpenAI route (`"chat"` or `"responses"`).

    Example: `OpenAIResponsesClient(sdk, model, capabilities=llama_server_profile("responses"))`.
    """
    return LLAMA_SERVER_RESPONSES if route == "responses" else LLAMA_SERVER_CHAT


def profile_for(base_url: str, model: str | None = None, *, route: Route = "chat") -> Capabilities:
    """The profile for a base URL: the official API (per route), or a generic compatible server.

    A local server cannot be recognised from its URL; pass `capabilities=` (or use
    `so_middleware.local.chat_client`, which does).
    """
    if "api.openai.com" in base_url or ".openai.azure.com" in base_url:
        profile = OPENAI_API_RESPONSES if route == "responses" else OPENAI_API
        return profile.replace(text_constraint="openai") if takes_grammar_tools(model) else profile
    return OPENAI_COMPATIBLE


# GPT-5 and later take a custom tool whose input is held to a Lark grammar or a regex.
_GRAMMAR_TOOL_MODELS = re.compile(r"(?:^|/)gpt-(\d+)")


def takes_grammar_tools(model: str | None) -> bool:
    """Whether an OpenAI model enforces a custom tool's grammar: GPT-5 and later.

    Example: `takes_grammar_tools("gpt-5-mini")` is True, `takes_grammar_tools("gpt-4.1")` False.
    """
    found = _GRAMMAR_TOOL_MODELS.search((model or "").lower())
    return found is not None and int(found.group(1)) >= 5


# vLLM's /v1/chat/completions: response_format json_schema and json_object are enforced by its
# structured-output backend, and a named tool_choice is enforced the same way; a trailing
# assistant message is not continued without vLLM's own `continue_final_message` flag. A regex or
# grammar on a text answer goes in its `structured_outputs` body field (`regex`, `grammar`).
VLLM_CHAT = OPENAI_COMPATIBLE.replace(name="vllm", text_constraint="vllm")

# Ollama's OpenAI-compatible /v1/chat/completions: response_format json_schema and json_object
# become its `format` (enforced); tools reach models whose template has them, but tool_choice is
# not honoured.
OLLAMA_CHAT = OPENAI_COMPATIBLE.replace(name="ollama", forced_tool_choice=False)

# so-middleware's own gateway on /v1/responses: `text.format` is forwarded to the backend's
# `response_format` unchanged (seed 004), so the format is as enforced as the backend makes it.
GATEWAY_RESPONSES = OPENAI_COMPATIBLE.replace(name="so-middleware-gateway")


def server_profile(info: ServerInfo, route: Route = "chat", model: str | None = None) -> Capabilities:
    """The shipped profile for a discovered server on an OpenAI route; generic when unknown.

    A llama.cpp server whose chat template has tools (`/props` says so) gets tools on top of the
    llama-server profile, which was observed with a template that has none.

    Example: `server_profile(ServerInfo("llama.cpp"), "responses") is LLAMA_SERVER_RESPONSES`.
    """
    if info.kind == "llama.cpp":
        profile = llama_server_profile(route, model)
        if info.facts.get("supports_tools") is True:
            profile = profile.replace(tools=True, tool_emulation=False)
        return profile
    if info.kind == "vllm":
        return VLLM_CHAT if route == "chat" else OPENAI_COMPATIBLE
    if info.kind == "ollama":
        return OLLAMA_CHAT if route == "chat" else OPENAI_COMPATIBLE
    if info.kind == "so-middleware-gateway" and route == "responses":
        return GATEWAY_RESPONSES
    return OPENAI_COMPATIBLE
