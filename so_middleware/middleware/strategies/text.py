"""`text`: plain text (`str`, `Annotated[str, ...]`). The request is the caller's own; the answer
is the text, validated against the type's constraints (if any) and re-asked when it breaks them.
Used for plain-text types whatever the mode: there is no JSON to ask for."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import TypeAdapter, ValidationError

from ...core import ChatMessage, ChatOptions, ModelBehaviorError, TextContent
from ._base import Answer, AttemptRequest, Strategy, Target, history_of

__all__ = ["Text"]


class Text(Strategy):
    name: ClassVar[str] = "text"

    def plan(self, target: Target, messages: list[ChatMessage], options: ChatOptions) -> AttemptRequest:
        return AttemptRequest(self, list(messages), options)

    def validate(self, target: Target, answer: Answer) -> Any:
        if target.text_type in (None, str):
            return answer.text
        try:
            return TypeAdapter(target.text_type).validate_python(answer.text)
        except ValidationError as error:
            problems = "; ".join(e["msg"] for e in error.errors())
            raise ModelBehaviorError(f"the text does not fit: {problems}", raw_text=answer.text[:1000]) from None

    def reask(self, plan: AttemptRequest, answer: Answer, error: Exception) -> list[ChatMessage]:
        return [
            *history_of(plan),
            ChatMessage("assistant", [TextContent(answer.text or "(no answer)")]),
            ChatMessage("user", f"That answer is not valid: {error}\nReply again, fixing that."),
        ]
