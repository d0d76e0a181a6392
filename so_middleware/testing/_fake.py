"""`FakeChatClient`: scripted replies, recorded calls, both streaming and not."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..core import (
    BaseChatClient,
    Capabilities,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FinishReason,
    FunctionCallContent,
    RefusalContent,
    TextContent,
    UsageDetails,
)

__all__ = ["FakeCall", "FakeChatClient", "Reply"]


@dataclass
class Reply:
    """One scripted model reply.

    `text` is streamed in `chunk_size` pieces; `tool_calls` are `(name, arguments_json)` pairs;
    `error` is raised instead of answering (after `fail_after` streamed chunks when streaming).
    """

    text: str = ""
    tool_calls: Sequence[tuple[str, str]] = ()
    refusal: str | None = None
    finish_reason: FinishReason = FinishReason.STOP
    usage: UsageDetails | None = field(default_factory=lambda: UsageDetails(10, 5, 15))
    error: BaseException | None = None
    fail_after: int | None = None
    chunk_size: int = 4

    def contents(self) -> list[Content]:
        contents: list[Content] = []
        if self.text:
            contents.append(TextContent(self.text))
        if self.refusal is not None:
            contents.append(RefusalContent(self.refusal))
        for index, (name, arguments) in enumerate(self.tool_calls):
            contents.append(FunctionCallContent(f"call_{index}", name, arguments))
        return contents


Script = str | Reply | BaseException | Callable[[list[ChatMessage], ChatOptions], str | Reply]


@dataclass(frozen=True)
class FakeCall:
    """What one call received."""

    messages: list[ChatMessage]
    options: ChatOptions
    stream: bool


class FakeChatClient(BaseChatClient):
    """A ChatClient that answers from a script and records every call.

    Each call takes the next script entry: a string (the reply text), a `Reply`, an exception
    to raise, or a function `(messages, options) -> str | Reply`. The last entry repeats.
    """

    provider_name: ClassVar[str] = "fake"

    def __init__(
        self,
        script: Sequence[Script] | Script = "",
        *,
        model: str = "fake-model",
        capabilities: Capabilities | None = None,
    ) -> None:
        self._script: list[Script] = list(script) if isinstance(script, (list, tuple)) else [script]  # type: ignore[list-item]
        self.model = model
        self.capabilities = capabilities or Capabilities(
            name="fake",
            native_json_schema=True,
            json_object=True,
            tools=True,
            forced_tool_choice=True,
            strict_tools=True,
            schema_profile="openai-strict",
        )
        self.calls: list[FakeCall] = []
        self.closed_streams = 0

    def _next_reply(self, messages: list[ChatMessage], options: ChatOptions, stream: bool) -> Reply:
        self.calls.append(FakeCall(list(messages), options, stream))
        entry = self._script[min(len(self.calls) - 1, len(self._script) - 1)]
        if isinstance(entry, BaseException):
            return Reply(error=entry)
        if callable(entry):
            entry = entry(messages, options)
        return entry if isinstance(entry, Reply) else Reply(text=entry)

    async def _respond(self, messages: list[ChatMessage], options: ChatOptions) -> ChatResponse[Any]:
        reply = self._next_reply(messages, options, stream=False)
        if reply.error is not None:
            raise reply.error
        return ChatResponse(
            ChatMessage("assistant", reply.contents()),
            usage=reply.usage,
            finish_reason=reply.finish_reason,
            response_id=f"fake-{len(self.calls)}",
            model_id=options.model or self.model,
        )

    async def _stream(
        self, messages: list[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate[Any]]:
        reply = self._next_reply(messages, options, stream=True)
        try:
            if reply.error is not None and reply.fail_after is None:
                raise reply.error
            for sent, start in enumerate(range(0, len(reply.text), max(1, reply.chunk_size))):
                if reply.error is not None and sent == reply.fail_after:
                    raise reply.error
                yield ChatResponseUpdate([TextContent(reply.text[start : start + reply.chunk_size])], role="assistant")
            if reply.error is not None:
                raise reply.error
            tail: list[Content] = [c for c in reply.contents() if not isinstance(c, TextContent)]
            yield ChatResponseUpdate(
                tail,
                role="assistant",
                usage=reply.usage,
                finish_reason=reply.finish_reason,
                response_id=f"fake-{len(self.calls)}",
                model_id=options.model or self.model,
            )
        finally:
            self.closed_streams += 1
