"""Function tools on a backend that ignores them, answered through the schema it does enforce.

llama-server with a chat template that has no tools (SmolLM2) drops `tools` and `tool_choice`
and answers in text, but it grammar-enforces a `response_format` json_schema. A profile with
`tool_emulation` says so, and a call that must use a tool (a named `tool_choice`, or
`"required"`) is then sent as a request for `{"name": ..., "arguments": ...}` under a schema
with one object per tool offered (the name a `const`, the arguments that tool's parameters; an
`anyOf` when there are several), and the JSON that comes back is answered as a tool call.

Where the model would have to decide whether to call at all (`"auto"`, or no `tool_choice`),
nothing can decide for it: `UserError` names the backend's limit before any HTTP call.
`"none"` sends no tools. Earlier calls and their results in the history are sent as text.

Example:
    emulation = ToolEmulation.of(options, LLAMA_SERVER_CHAT)  # None when nothing is emulated
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    UsageDetails,
    UserError,
)

__all__ = ["ToolEmulation", "call_schema", "offered_tools"]

# The grammar writes the properties in the schema's order: the name comes first, so a cut answer
# still says which tool it was calling.
_CUT_CALL = re.compile(r'\s*\{\s*"name"\s*:\s*"(?P<name>[^"\\]*)"\s*(?:,\s*"arguments"\s*:\s*(?P<arguments>.*))?', re.S)


def offered_tools(tools: Sequence[FunctionTool | Mapping[str, Any]]) -> list[FunctionTool]:
    """The function tools of a call (a `FunctionTool`, or a Chat Completions or Responses tool
    dict); any other kind of tool cannot be emulated and raises `UserError`."""
    found: list[FunctionTool] = []
    for tool in tools:
        if isinstance(tool, FunctionTool):
            found.append(tool)
            continue
        spec = tool.get("function", tool) if tool.get("type") == "function" else None
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            kind = tool.get("type", "untyped")
            raise UserError(f"a {kind!r} tool cannot be emulated on this backend: only function tools can")
        found.append(FunctionTool(spec["name"], spec.get("parameters") or {"type": "object"}, spec.get("description")))
    return found


def call_schema(tools: Sequence[FunctionTool]) -> dict[str, Any]:
    """The JSON schema of one call to one of `tools`: `{"name": <const>, "arguments": <parameters>}`,
    an `anyOf` of one such object per tool when there are several.

    Each tool's `$defs` (or `definitions`) move to the root, where its `$ref`s point (prefixed by
    the tool's name when there are several tools, so two tools' `Address` stay apart)."""
    defs: dict[str, Any] = {}
    calls = [
        {
            "type": "object",
            "properties": {
                "name": {"const": tool.name},
                "arguments": _hoisted(tool.parameters, f"{tool.name}__" if len(tools) > 1 else "", defs),
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    schema = calls[0] if len(calls) == 1 else {"anyOf": calls}
    return {**schema, "$defs": defs} if defs else schema


def _hoisted(parameters: Mapping[str, Any], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """`parameters` without its definitions, which go into `defs` (renamed with `prefix`), its
    `$ref`s pointing at them there."""
    local = {**(parameters.get("definitions") or {}), **(parameters.get("$defs") or {})}

    def moved(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {key: _renamed(value, prefix) if key == "$ref" else moved(value) for key, value in node.items()}
        return [moved(item) for item in node] if isinstance(node, list) else node

    defs.update((prefix + name, moved(definition)) for name, definition in local.items())
    return {key: moved(value) for key, value in parameters.items() if key not in ("definitions", "$defs")}


def _renamed(ref: Any, prefix: str) -> Any:
    for base in ("#/$defs/", "#/definitions/"):
        if isinstance(ref, str) and ref.startswith(base):
            return f"#/$defs/{prefix}{ref[len(base) :]}"
    return ref


@dataclass(frozen=True)
class ToolEmulation:
    """One call's emulated tool choice: the options to send instead, and how to read the answer."""

    options: ChatOptions
    tools: tuple[FunctionTool, ...]

    @classmethod
    def of(cls, options: ChatOptions, capabilities: Capabilities) -> ToolEmulation | None:
        """The emulation for a call on a backend with `capabilities`, or None when the call has
        no tools or the backend needs no emulation; `UserError` when it cannot be emulated."""
        if not capabilities.tool_emulation or not options.tools:
            return None
        if options.tool_choice == "none":
            return cls(options.replace(tools=None, tool_choice=None), ())
        tools = offered_tools(options.tools)
        choice = options.tool_choice
        limit = f"the backend ({capabilities.name}) ignores function tools, and they are emulated only"
        if choice is None or choice == "auto":
            raise UserError(f'{limit} when a call is required: send tool_choice "required" or a named tool, or "none"')
        if options.response_format is not None:
            raise UserError(f"{limit} through a response format, so a call cannot have both")
        if isinstance(choice, ForcedTool):
            tools = [tool for tool in tools if tool.name == choice.name]
            if not tools:
                raise UserError(f"tool_choice names {choice.name!r}, which is not among the tools given")
        guide = "Answer with a JSON call of one of these functions, its arguments following its parameters:\n"
        guide += "\n".join(f"- {tool.name}: {tool.description or 'no description'}" for tool in tools)
        changed = options.replace(
            tools=None,
            tool_choice=None,
            response_format=ResponseFormat.json_schema(call_schema(tools), name="function_call"),
            instructions=f"{options.instructions}\n\n{guide}" if options.instructions else guide,
        )
        return cls(changed, tuple(tools))

    def messages(self, messages: list[ChatMessage]) -> list[ChatMessage]:
        """The history as this backend can read it: earlier calls and their results as text."""
        return [_as_text(message) for message in messages]

    def response(self, response: ChatResponse[Any]) -> ChatResponse[Any]:
        """The backend's answer with its JSON turned into the tool call it stands for."""
        if not self.tools:
            return response
        message = response.messages[-1] if response.messages else ChatMessage("assistant")
        kept = [c for c in message.contents if not isinstance(c, TextContent)]
        answer, finish = self._answer(message.text, response.finish_reason, response.usage)
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
        try:
            async for update in updates:
                if self.tools:
                    text.extend(c.text for c in update.contents if isinstance(c, TextContent))
                    update.contents = [c for c in update.contents if not isinstance(c, TextContent)]
                    if update.finish_reason is not None:
                        answer, update.finish_reason = self._answer("".join(text), update.finish_reason)
                        update.contents.extend(answer)
                        update.role = "assistant"
                    elif not update.contents and update.usage is None and text:
                        continue  # a piece of the JSON held back: nothing to say yet
                yield update
        finally:
            if isinstance(updates, AsyncGenerator):  # closing this stream closes the backend's at once
                await updates.aclose()

    def _answer(
        self, text: str, finish: FinishReason | None, usage: UsageDetails | None = None
    ) -> tuple[list[Content], FinishReason | None]:
        """The call `text` stands for, and the finish reason of an answer that is that call.

        An answer cut by the token limit is the call as far as it came (as a backend's own call
        would be), or its text when not even the tool's name came; any other answer that is no
        call raises `ProviderResponseError` keeping it (it was paid for)."""
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict) and value.get("name") in {tool.name for tool in self.tools}:
            arguments = json.dumps(value.get("arguments", {}), ensure_ascii=False)
            return [FunctionCallContent(call_id, value["name"], arguments)], FinishReason.TOOL_CALLS
        if finish == FinishReason.LENGTH:
            cut = _CUT_CALL.match(text)
            if cut is None:
                return [TextContent(text)] if text else [], finish
            return [FunctionCallContent(call_id, cut["name"], cut["arguments"] or "")], finish
        raise ProviderResponseError(
            f"the backend's answer to an emulated tool call is not a call of {', '.join(t.name for t in self.tools)}"
            f" (finish reason {finish.value if finish else 'none'})"
        ).with_answer(text, usage)


def _as_text(message: ChatMessage) -> ChatMessage:
    if not any(isinstance(c, (FunctionCallContent, FunctionResultContent)) for c in message.contents):
        return message
    parts: list[str] = []
    for content in message.contents:
        if isinstance(content, FunctionCallContent):
            parts.append(json.dumps({"name": content.name, "arguments": _parsed(content.arguments)}))
        elif isinstance(content, FunctionResultContent):
            outcome = "failed" if content.is_error else "returned"
            parts.append(f"The call of {content.name or content.call_id} {outcome}: {content.result_text}")
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
