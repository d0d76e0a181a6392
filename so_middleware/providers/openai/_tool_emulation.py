"""Function tools on a backend that ignores them, answered through the schema it does enforce.

llama-server with a chat template that has no tools (SmolLM2) drops `tools` and `tool_choice`
and answers in text, but it grammar-enforces a `response_format` json_schema. A profile with
`tool_emulation` says so, and a call that must use a tool (a named `tool_choice`, or
`"required"`) is then sent as a request for `{"name": ..., "arguments": ...}` under a schema
with one object per tool offered (the name a `const`, the arguments that tool's parameters; an
`anyOf` when there are several), and the JSON that comes back is answered as a tool call. A
response format beside a required call is not sent: that call's answer is a call, never a reply.

Where the model decides whether to call at all (`"auto"`, or no `tool_choice`), the schema
offers one more object, `{"answer": ...}`, which comes back as plain assistant text: a string,
or, when the call has a response format, a value of that format (sent back as its JSON text,
so structured output reads it as it would read any answer). A stream holds the JSON back and
sends the call or the answer when the backend's answer ends: until the first key is written
nothing says which it is, and an answer's text arrives escaped inside a JSON string.
`"none"` sends no tools. Earlier calls and their results in the history are sent as text.

A model that calls the same tool with the same arguments again after it has read that call's
result will not progress (a small model does it until the client gives up): when the history
ends with `repeats` such identical calls in a row, each answered, an `"auto"` turn is offered the
answer alone, and a warning on the `so_middleware.tool_emulation` logger says so. A required
call is still a call: the caller asked for one. A backend that calls tools itself is never
emulated, so never guarded.

Example:
    emulation = ToolEmulation.of(options, LLAMA_SERVER_CHAT, messages)  # None when nothing is emulated
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

import jiter

from ...core import (
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FinishReason,
    ForcedTool,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ProviderResponseError,
    ResponseFormat,
    TextContent,
    UserError,
)
from ._tool_schema import ANSWER, call_schema, offered_tools

__all__ = ["REPEATED_CALLS", "ToolEmulation", "call_schema", "offered_tools"]

REPEATED_CALLS = 2  # identical answered calls in a row after which an "auto" turn must answer

_log = logging.getLogger("so_middleware.tool_emulation")

# The grammar writes the properties in the schema's order: the name comes first, so a cut answer
# still says which tool it was calling.
# The name is a whole JSON string, escapes and all (a tool's name may hold a quote or a backslash).
_CUT_CALL = re.compile(
    r'\s*\{\s*"name"\s*:\s*(?P<name>"(?:[^"\\]|\\.)*")\s*(?:,\s*"arguments"\s*:\s*(?P<arguments>.*))?', re.S
)
_CUT_ANSWER = re.compile(rf'\s*\{{\s*"{ANSWER}"\s*:\s*(?P<content>.*)', re.S)


@dataclass(frozen=True)
class ToolEmulation:
    """One call's emulated tool choice: the options to send instead, and how to read the answer."""

    options: ChatOptions
    tools: tuple[FunctionTool, ...]
    answers: bool = False  # the model may answer without a call (`"auto"`)

    @classmethod
    def of(
        cls,
        options: ChatOptions,
        capabilities: Capabilities,
        messages: list[ChatMessage] | None = None,
        repeats: int = REPEATED_CALLS,
    ) -> ToolEmulation | None:
        """The emulation for a call on a backend with `capabilities`, or None when the call has
        no tools or the backend needs no emulation; `UserError` when it cannot be emulated.
        When `messages` end with `repeats` identical answered calls, an `"auto"` turn may only answer."""
        if not capabilities.tool_emulation or not options.tools:
            return None
        if options.tool_choice == "none":
            return cls(options.replace(tools=None, tool_choice=None), ())
        tools = offered_tools(options.tools)
        choice = options.tool_choice
        limit = f"the backend ({capabilities.name}) ignores function tools, and they are emulated"
        names = [tool.name for tool in tools]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:  # an emulated call says which tool by its name alone
            raise UserError(f"{limit}: a call names its tool, so two tools cannot both be named {twice[0]!r}")
        answers = choice is None or choice == "auto"
        answer = _answer_schema(options.response_format, limit) if answers else None
        # A required call's answer is a call, never a reply: a response format asked beside it has
        # nothing to shape in this call (a tool loop sends it again, with the tool choice lifted).
        if isinstance(choice, ForcedTool):
            tools = [tool for tool in tools if tool.name == choice.name]
            if not tools:
                raise UserError(f"tool_choice names {choice.name!r}, which is not among the tools given")
        repeated = _repeated_call(messages or [])
        if answers and repeated is not None and repeated[1] >= repeats:
            _log.warning(
                "the model called %s %d times in a row with the same arguments after reading its result:"
                " this turn may only answer, without a call",
                repeated[0],
                repeated[1],
            )
            guide = (
                f"You called {repeated[0]} {repeated[1]} times with the same arguments and have its result: "
                f'do not call it again; answer with {{"{ANSWER}": ...}} holding your reply.'
            )
            changed = options.replace(
                tools=None,
                tool_choice=None,
                response_format=ResponseFormat.json_schema(call_schema([], answer), name="function_call"),
                instructions=f"{options.instructions}\n\n{guide}" if options.instructions else guide,
            )
            return cls(changed, tuple(tools), answers)
        listed = "\n".join(f"- {tool.name}: {tool.description or 'no description'}" for tool in tools)
        guide = (
            f"When one of these functions is needed, answer with a JSON call of it, its arguments following its "
            f'parameters; otherwise answer with {{"{ANSWER}": ...}} holding your reply:\n{listed}'
            if answers
            else f"Answer with a JSON call of one of these functions, its arguments following its parameters:\n{listed}"
        )
        changed = options.replace(
            tools=None,
            tool_choice=None,
            response_format=ResponseFormat.json_schema(call_schema(tools, answer), name="function_call"),
            instructions=f"{options.instructions}\n\n{guide}" if options.instructions else guide,
        )
        return cls(changed, tuple(tools), answers)

    def messages(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """The history as this backend can read it: earlier calls and their results as text.

        A result that does not name its tool (a Responses `function_call_output` has only the
        call's id) is named after its call: the model reads which tool answered, not an id."""
        called = {c.call_id: c.name for m in messages for c in m.contents if isinstance(c, FunctionCallContent)}
        return [_as_text(message, called) for message in messages]

    def response(self, response: ChatResponse[Any]) -> ChatResponse[Any]:
        """The backend's answer with its JSON turned into the tool call it stands for."""
        if not self.tools:
            return response
        message = response.messages[-1] if response.messages else ChatMessage("assistant")
        kept = [c for c in message.contents if not isinstance(c, TextContent)]
        try:
            answer, finish = self._answer(message.text, response.finish_reason)
        except ProviderResponseError as error:
            error.with_answer(message.text, response.usage)
            raise
        response.messages[-1:] = [
            ChatMessage("assistant", [*kept, *answer], raw_representation=message.raw_representation)
        ]
        response.finish_reason = finish
        return response

    async def updates(
        self, updates: AsyncIterator[ChatResponseUpdate[Any]]
    ) -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        """The backend's stream with its JSON text held back and sent as one tool call when it ends."""
        text: list[str] = []
        failed: ProviderResponseError | None = None  # an answer that is no call, raised once its usage is in
        counted: list[ChatResponseUpdate[Any]] = []
        try:
            async for update in updates:
                if update.usage is not None:
                    counted.append(update)
                if failed is not None:
                    continue
                if self.tools:
                    text.extend(c.text for c in update.contents if isinstance(c, TextContent))
                    update.contents = [c for c in update.contents if not isinstance(c, TextContent)]
                    if update.finish_reason is not None:
                        try:
                            answer, update.finish_reason = self._answer("".join(text), update.finish_reason)
                        except ProviderResponseError as error:
                            failed = error
                            continue
                        update.contents.extend(answer)
                        update.role = "assistant"
                    elif not update.contents and update.usage is None and text:
                        continue  # a piece of the JSON held back: nothing to say yet
                yield update
            if failed is not None:  # the stream's usage, which comes after its finish, is kept too
                raise failed.with_answer("".join(text), ChatResponse.from_updates(counted).usage)
        finally:
            if isinstance(updates, AsyncGenerator):  # closing this stream closes the backend's at once
                await updates.aclose()

    def _answer(self, text: str, finish: FinishReason | None) -> tuple[list[Content], FinishReason | None]:
        """The call or the answer `text` stands for, and the finish reason that goes with it.

        An answer cut by the token limit is the call or the answer as far as it came (as a
        backend's own would be), or its text when not even which one came; any other answer
        that is neither raises `ProviderResponseError` (its caller keeps the answer on it: it was paid for)."""
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict) and value.get("name") in {tool.name for tool in self.tools}:
            arguments = json.dumps(value.get("arguments", {}), ensure_ascii=False)
            return [FunctionCallContent(call_id, value["name"], arguments)], FinishReason.TOOL_CALLS
        if self.answers and isinstance(value, dict) and ANSWER in value:
            return _text(value[ANSWER]), finish
        if finish == FinishReason.LENGTH:
            return _cut(text, call_id, self.answers), finish
        expected = ", ".join(tool.name for tool in self.tools) + (f" nor an {ANSWER!r}" if self.answers else "")
        raise ProviderResponseError(
            f"the backend's answer to an emulated tool call is not a call of {expected}"
            f" (finish reason {finish.value if finish else 'none'})"
        )


def _repeated_call(messages: list[ChatMessage]) -> tuple[str, int] | None:
    """The tool the history ends by calling, answered, with the same arguments each time, and how
    many times in a row; None when the history does not end with a call's result."""
    if not messages or not any(isinstance(c, FunctionResultContent) for c in messages[-1].contents):
        return None
    last: tuple[str, Any] | None = None
    count = 0
    for message in reversed(messages):
        for content in reversed(message.contents):
            if isinstance(content, FunctionResultContent):
                continue
            if not isinstance(content, FunctionCallContent):  # a message between: the run ends here
                return (last[0], count) if last else None
            call = (content.name, _parsed(content.arguments))
            if last is not None and call != last:
                return last[0], count
            last, count = call, count + 1
    return (last[0], count) if last else None


def _answer_schema(response_format: ResponseFormat | None, limit: str) -> dict[str, Any]:
    """The schema of an answer without a call: a string, or a value of the call's response format."""
    if response_format is None or response_format.type == "text":
        return {"type": "string"}
    if response_format.type == "json_object":
        return {"type": "object"}
    if response_format.type == "json_schema" and response_format.schema is not None:
        return dict(response_format.schema)
    raise UserError(f"{limit}, which cannot carry a {response_format.type!r} response format")


def _text(content: Any) -> list[Content]:
    """An answer's content as assistant text: a string as it is, a structured value as its JSON."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return [TextContent(text)] if text else []


def _cut(text: str, call_id: str, answers: bool) -> list[Content]:
    """A call or an answer cut by the token limit, as far as it came; its text when neither shows."""
    call = _CUT_CALL.match(text)
    name = _string(call["name"]) if call is not None else None
    if call is not None and name is not None:
        return [FunctionCallContent(call_id, name, call["arguments"] or "")]
    answer = _CUT_ANSWER.match(text) if answers else None
    if answer is None:
        return [TextContent(text)] if text else []
    content = answer["content"]
    if content.startswith('"'):  # a string as far as it came, unescaped
        content = jiter.from_json(content.encode(), partial_mode="trailing-strings")
    return _text(content)


def _string(literal: str) -> str | None:
    """A JSON string literal's value; None when it is no valid one (a bad escape)."""
    try:
        value = json.loads(literal)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _as_text(message: ChatMessage, called: dict[str, str]) -> ChatMessage:
    if not any(isinstance(c, (FunctionCallContent, FunctionResultContent)) for c in message.contents):
        return message
    parts: list[str] = []
    for content in message.contents:
        if isinstance(content, FunctionCallContent):
            parts.append(json.dumps({"name": content.name, "arguments": _parsed(content.arguments)}))
        elif isinstance(content, FunctionResultContent):
            outcome = "failed" if content.is_error else "returned"
            name = content.name or called.get(content.call_id) or content.call_id
            parts.append(f"The call of {name} {outcome}: {content.result_text}")
        elif isinstance(content, TextContent):
            parts.append(content.text)
    return ChatMessage(
        "assistant" if message.role == "assistant" else "user", "\n".join(parts), author_name=message.author_name
    )


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:  # sent back as it came
        return arguments
