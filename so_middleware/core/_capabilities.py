"""`Capabilities`: what a backend honours, as facts the strategies choose by. A leaf module."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = ["Capabilities", "SchemaProfile"]

SchemaProfile = Literal[
    "openai-strict", "anthropic", "json-schema", "gemini", "gemini-openapi", "bedrock", "mistral", "ollama"
]
"""The JSON-schema dialect a backend accepts, and that `OutputSchema.json_schema` emits."""


@dataclass(frozen=True)
class Capabilities:
    """What a backend honours, so strategies are chosen by facts, not by provider names.

    Override per client: `OpenAIChatClient(sdk, model, capabilities=LLAMA_SERVER.replace(...))`.
    """

    name: str = "generic"
    native_json_schema: bool = False  # the schema is enforced (constrained decoding)
    json_object: bool = False  # JSON mode is enforced
    tools: bool = False  # function tools are supported
    forced_tool_choice: bool = False  # tool_choice naming one tool is honoured
    strict_tools: bool = False  # tool arguments are schema-enforced
    # tools are ignored, but the adapter emulates a required call through the enforced JSON schema
    tool_emulation: bool = False
    assistant_prefill: bool = False  # a trailing assistant message is continued
    prefill_echoed: bool = False  # ... and its text is echoed back at the start of the answer
    response_format_passthrough: bool = False  # Responses route honours a Chat Completions response_format key
    schema_profile: SchemaProfile = "json-schema"
    # The engine enforces a JSON schema by grammar but never shows it to the model: a native
    # request also carries an outline of the schema (descriptions, formats, examples) in its
    # instructions. Hosted APIs that read the schema themselves leave it off.
    schema_in_instructions: bool = False
    # The most output tokens the server gives a request that names no max_tokens (llama-server's
    # `-n`), or None: an answer that used them all was cut off, whatever its finish reason says.
    default_max_tokens: int | None = None
    # Request body fields (`extra_body`) that break a looping answer on this engine: a run whose
    # answer loops (or repeats the previous one word for word) is re-asked once with them. Empty:
    # the engine has none known, and a loop ends the run (`IncompleteOutputError`).
    loop_breaking: tuple[tuple[str, Any], ...] = ()
    # The model behind it loops often (a small local model): a streamed answer whose tail repeats
    # is closed once the tokens left cannot close its document, not waited for to the limit.
    prone_to_loops: bool = False
    # How the backend enforces a regex or grammar on a text answer (`Regex`, `Grammar`): llama.cpp's
    # GBNF `grammar` body field, vLLM's `structured_outputs`, or OpenAI's custom tool with a Lark or
    # regex grammar (GPT-5 and later); None: such answers are checked and re-asked only.
    text_constraint: Literal["llama.cpp", "vllm", "openai"] | None = None

    def replace(self, **changes: Any) -> Capabilities:
        """A copy with some flags changed."""
        return replace(self, **changes)
