"""A text answer in a grammar on OpenAI (GPT-5 and later): asked as a custom tool call, read as text.

OpenAI enforces a Lark grammar or a regular expression only on a custom tool's input. A profile
with `text_constraint="openai"` makes `Regex(...)` and `Grammar(lark=...)` send the Responses
body fields of such a tool and a `tool_choice` naming it (`schema.text.custom_tool_fields`):

    tools=[{"type": "custom", "name": "answer", "format": {"type": "grammar", "syntax": "lark", "definition": ...}}]
    tool_choice={"type": "custom", "name": "answer"}

The Responses API takes them as they are and answers with a `custom_tool_call` item whose
`input` is the text (streamed as `response.custom_tool_call_input.delta` events). Chat
Completions takes the same tool as `{"type": "custom", "custom": {"name", "format": {"type":
"grammar", "grammar": {"definition", "syntax"}}}}` and answers in `message.tool_calls[i].custom.input`;
its stream has no documented form of a custom tool call, so a streamed call is asked once and
its text given as one update. Either way the caller gets the input as the answer's text, which
the structured-output layer then checks against the same form.

Example:
    custom = CustomToolAnswer.of(options)  # None unless the call asks for such a tool
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...core import ChatOptions, ChatResponse, ChatResponseUpdate, FinishReason, FunctionCallContent, TextContent
from ...wire.responses import Event
from ...wire.responses_items import custom_input

__all__ = ["CustomToolAnswer", "CustomToolReader", "as_update"]


@dataclass(frozen=True)
class CustomToolAnswer:
    """One call whose answer is the input of the custom tool `name`."""

    name: str
    tool: Mapping[str, Any]

    @classmethod
    def of(cls, options: ChatOptions) -> CustomToolAnswer | None:
        """The custom tool a call must answer through (its `extra_body` names one in
        `tool_choice`), or None."""
        body = options.extra_body or {}
        choice = body.get("tool_choice")
        if not isinstance(choice, Mapping) or choice.get("type") != "custom" or not isinstance(choice.get("name"), str):
            return None
        name = choice["name"]
        tool = next(
            (t for t in body.get("tools") or () if isinstance(t, Mapping) and t.get("name") == name),
            None,
        )
        if tool is None or tool.get("type") != "custom":
            return None
        return cls(name, tool)

    def chat_options(self, options: ChatOptions) -> ChatOptions:
        """The call's options with the tool in Chat Completions' shape (a new `extra_body`)."""
        custom: dict[str, Any] = {"name": self.name}
        if "description" in self.tool:
            custom["description"] = self.tool["description"]
        form = self.tool.get("format")
        if isinstance(form, Mapping) and form.get("type") == "grammar":
            grammar = {"definition": form.get("definition"), "syntax": form.get("syntax")}
            custom["format"] = {"type": "grammar", "grammar": grammar}
        body = {
            **(options.extra_body or {}),
            "tools": [{"type": "custom", "custom": custom}],
            "tool_choice": {"type": "custom", "custom": {"name": self.name}},
        }
        return options.replace(extra_body=body)

    def from_chat(self, response: ChatResponse[Any]) -> ChatResponse[Any]:
        """A Chat Completions answer with the tool's input as its text."""
        completion = response.raw_representation
        texts = []
        for choice in (getattr(completion, "choices", None) or ())[:1]:
            for call in getattr(choice.message, "tool_calls", None) or ():
                custom: Any = getattr(call, "custom", None)
                if getattr(call, "type", None) == "custom" and getattr(custom, "name", None) == self.name:
                    texts.append(custom.input)
        return self._as_text(response, texts)

    def from_responses(self, response: ChatResponse[Any]) -> ChatResponse[Any]:
        """A Responses answer with the tool's input as its text (the adapter reads a
        `custom_tool_call` as a call with arguments `{"input": ...}`)."""
        texts = [
            custom_input(c.arguments)
            for message in response.messages
            for c in message.contents
            if isinstance(c, FunctionCallContent) and c.name == self.name
        ]
        return self._as_text(response, texts)

    def _as_text(self, response: ChatResponse[Any], texts: list[str]) -> ChatResponse[Any]:
        if not texts:  # no call came back: the answer is left as it is, for validation to judge
            return response
        messages = [
            type(message)(
                message.role,
                [
                    c
                    for c in message.contents
                    if not (isinstance(c, FunctionCallContent) and c.name == self.name)
                    and not isinstance(c, TextContent)
                ]
                + [TextContent("".join(texts))],
                raw_representation=message.raw_representation,
            )
            for message in response.messages[-1:]
        ]
        finish = FinishReason.STOP if response.finish_reason == FinishReason.TOOL_CALLS else response.finish_reason
        return ChatResponse(
            [*response.messages[:-1], *messages],
            usage=response.usage,
            finish_reason=finish,
            response_id=response.response_id,
            model_id=response.model_id,
            raw_representation=response.raw_representation,
        )


def as_update(response: ChatResponse[Any]) -> ChatResponseUpdate[Any]:
    """A whole answer as the one update of a stream."""
    contents = [c for message in response.messages for c in message.contents]
    return ChatResponseUpdate(
        contents,
        role="assistant",
        usage=response.usage,
        finish_reason=response.finish_reason,
        response_id=response.response_id,
        model_id=response.model_id,
        raw_representation=response.raw_representation,
    )


@dataclass
class CustomToolReader:
    """A Responses event reader whose custom tool's input streams as text: each
    `response.custom_tool_call_input.delta` is a text delta, and a call that comes whole (its
    `output_item.done` without deltas before it) is its text at once. Other events go to `inner`."""

    inner: Any
    name: str
    _items: set[str] | None = None
    _streamed: bool = False

    @property
    def text(self) -> list[str]:
        """The text read so far."""
        return self.inner.text  # type: ignore[no-any-return]

    @property
    def finished(self) -> bool:
        """Whether the terminal event came."""
        return bool(self.inner.finished)

    def read(self, event: Any) -> ChatResponseUpdate[Any] | None:
        """The update for one event, or None."""
        kind = getattr(event, "type", None)
        item: Any = getattr(event, "item", None)
        ours = getattr(item, "type", None) == "custom_tool_call" and getattr(item, "name", None) == self.name
        if kind == Event.OUTPUT_ITEM_ADDED and ours:
            self._items = (self._items or set()) | {item.id}
            return None
        if kind == Event.CUSTOM_TOOL_CALL_INPUT_DELTA and event.item_id in (self._items or ()):
            self._streamed = True
            return self._text(event.delta, event)
        if kind == Event.OUTPUT_ITEM_DONE and ours:
            return None if self._streamed else self._text(item.input or "", event)
        update: ChatResponseUpdate[Any] | None = self.inner.read(event)
        if update is not None and update.finish_reason == FinishReason.TOOL_CALLS:
            update.finish_reason = FinishReason.STOP  # the call was the answer
        return update

    def _text(self, delta: str, event: Any) -> ChatResponseUpdate[Any] | None:
        if not delta:
            return None
        self.inner.text.append(delta)
        return ChatResponseUpdate([TextContent(delta)], role="assistant", raw_representation=event)
