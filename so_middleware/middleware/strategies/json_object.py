"""`json_object`: the backend's JSON mode plus the answer's shape in the instructions; the answer
is the text, read leniently."""

from __future__ import annotations

from typing import ClassVar

from ...core import Capabilities, ChatMessage, ChatOptions, ResponseFormat
from ._base import Answer, AttemptRequest, Strategy, Target, starts_like_json
from ._prompt import instructions_for

__all__ = ["JsonObject"]


class JsonObject(Strategy):
    name: ClassVar[str] = "json_object"
    lenient: ClassVar[bool] = True
    cut_off_is_final: ClassVar[bool] = False  # a complete value may precede the cut-off rambling

    def unavailable(self, target: Target) -> str | None:
        if not target.capabilities.json_object:
            return "it says the backend has no enforced JSON mode (json_object=False)"
        return None

    def in_auto(self, capabilities: Capabilities) -> bool:
        return capabilities.json_object

    def turned_off(self, capabilities: Capabilities) -> Capabilities:
        return capabilities.replace(json_object=False)

    def plan(self, target: Target, messages: list[ChatMessage], options: ChatOptions) -> AttemptRequest:
        changed = options.replace(
            response_format=ResponseFormat.json_object(),
            instructions=instructions_for(options, target.schema, target.profile),
        )
        return AttemptRequest(self, list(messages), changed)

    def ignored(self, plan: AttemptRequest, answer: Answer) -> bool:
        return not starts_like_json(answer)  # prose under JSON mode: the mode was not enforced
