"""`native`: the backend's own JSON-schema format (`response_format` / `text.format` /
`output_config.format`); the answer is the text, read strictly."""

from __future__ import annotations

from typing import ClassVar

from ...core import Capabilities, ChatMessage, ChatOptions, ResponseFormat
from ._base import Answer, AttemptRequest, Strategy, Target, schema_problem, starts_like_json
from ._prompt import outlined_instructions

__all__ = ["Native"]


class Native(Strategy):
    name: ClassVar[str] = "native"

    def unavailable(self, target: Target) -> str | None:
        if not target.capabilities.native_json_schema:
            return "it says the backend does not enforce a JSON-schema response format (native_json_schema=False)"
        return schema_problem(target)

    def in_auto(self, capabilities: Capabilities) -> bool:
        return capabilities.native_json_schema

    def turned_off(self, capabilities: Capabilities) -> Capabilities:
        return capabilities.replace(native_json_schema=False)

    def plan(self, target: Target, messages: list[ChatMessage], options: ChatOptions) -> AttemptRequest:
        schema, profile = target.schema, target.profile
        # Only OpenAI's and Mistral's dialects have a strict switch; elsewhere `strict` is left unsent.
        strict = schema.is_strict_json_schema() if profile in ("openai-strict", "mistral") else None
        fmt = ResponseFormat.json_schema(  # the shared schema: each request renders its own copy
            schema.json_schema_view(profile),
            name=schema.wire_name(profile),
            strict=strict,
            description=target.description,
        )
        if target.capabilities.schema_in_instructions:
            changed = options.replace(response_format=fmt, instructions=outlined_instructions(options, schema))
        else:
            changed = options.replace(response_format=fmt)
        return AttemptRequest(self, list(messages), changed, strict=bool(strict))

    def ignored(self, plan: AttemptRequest, answer: Answer) -> bool:
        return not starts_like_json(answer)
