"""`text`: plain text (`str`, `Annotated[str, ...]`, `Regex(...)`, `Grammar(...)`). The request is
the caller's own; the answer is the text, validated against the type's constraints (if any) and
re-asked when it breaks them. Used for plain-text types whatever the mode: there is no JSON to ask
for. A regex or grammar is also put in the instructions, and in the request body where the
profile says the backend enforces it (`Capabilities.text_constraint`)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import TypeAdapter, ValidationError

from ...core import ChatMessage, ChatOptions, ModelBehaviorError, TextContent
from ...schema.text import text_format_of
from ._base import Answer, AttemptRequest, Strategy, Target, history_of

__all__ = ["Text"]


class Text(Strategy):
    name: ClassVar[str] = "text"

    def plan(self, target: Target, messages: list[ChatMessage], options: ChatOptions) -> AttemptRequest:
        form = text_format_of(target.text_type)
        if form is None:
            return AttemptRequest(self, list(messages), options)
        fields = form.request_fields(target.capabilities.text_constraint)
        asked = form.instructions()
        changes: dict[str, Any] = {
            "instructions": f"{options.instructions}\n\n{asked}" if options.instructions else asked
        }
        if fields:
            changes["extra_body"] = {**(options.extra_body or {}), **fields}
        return AttemptRequest(self, list(messages), options.replace(**changes))

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
