"""`prompted`: the answer's shape in the instructions, and a JSON prefill where the backend
continues one; the answer is prefill + text, read leniently. Every backend can be prompted, so
this is the last resort of `mode="auto"`."""

from __future__ import annotations

from typing import Any, ClassVar

from ...core import ChatMessage, ChatOptions, ChatResponse
from ._base import Answer, AttemptRequest, Strategy, Target
from ._prompt import instructions_for, prefill_for

__all__ = ["Prompted"]


class Prompted(Strategy):
    name: ClassVar[str] = "prompted"
    lenient: ClassVar[bool] = True
    cut_off_is_final: ClassVar[bool] = False  # a complete value may precede the cut-off rambling

    def plan(self, target: Target, messages: list[ChatMessage], options: ChatOptions) -> AttemptRequest:
        changed = options.replace(instructions=instructions_for(options, target.schema, target.profile))
        if not target.capabilities.assistant_prefill:
            return AttemptRequest(self, list(messages), changed)
        prefill = prefill_for(target.schema, target.profile)
        return AttemptRequest(self, [*messages, ChatMessage("assistant", prefill)], changed, prefill=prefill)

    def answer(self, plan: AttemptRequest, response: ChatResponse[Any]) -> Answer:
        text = response.text
        if plan.prefill and text.startswith(plan.prefill):
            return Answer(text)  # the server echoed the prefill and the profile did not say so
        return Answer(plan.prefill + text)
