"""The Converse answers: a `ConverseResponse` and ConverseStream's events read as ours, and a
response written back as a `ConverseResponse`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core import (
    ChatMessage,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FinishReason,
    FunctionCallContent,
    ProviderResponseError,
    ReasoningContent,
    TextContent,
    UsageDetails,
)
from ._request import block_to_wire

__all__ = ["STOP_REASONS", "BedrockStreamReader", "response_from_wire", "response_to_wire", "usage_from_wire"]

STOP_REASONS: Mapping[str, FinishReason] = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "content_filtered": FinishReason.CONTENT_FILTER,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
}
"""Converse's `stopReason` read as ours; `malformed_model_output` and `malformed_tool_use` (and any
other) give no reason: the answer as it came, which validation then judges."""

_WRITTEN_REASONS = {
    FinishReason.STOP: "end_turn",
    FinishReason.TOOL_CALLS: "tool_use",
    FinishReason.LENGTH: "max_tokens",
    FinishReason.CONTENT_FILTER: "content_filtered",
    FinishReason.REFUSAL: "end_turn",
}


def usage_from_wire(usage: Any) -> UsageDetails | None:
    """Map `TokenUsage`."""
    if not isinstance(usage, Mapping):
        return None
    return UsageDetails(
        input_tokens=usage.get("inputTokens"),
        output_tokens=usage.get("outputTokens"),
        total_tokens=usage.get("totalTokens"),
        cached_input_tokens=usage.get("cacheReadInputTokens"),
    )


def _contents(blocks: Any) -> list[Content]:
    if not isinstance(blocks, list):
        raise ProviderResponseError("the server's answer could not be read: `output.message.content` is not a list")
    found: list[Content] = []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        if isinstance(block.get("text"), str):
            if block["text"]:
                found.append(TextContent(block["text"]))
        elif isinstance(block.get("toolUse"), Mapping):
            call = block["toolUse"]
            found.append(
                FunctionCallContent(
                    str(call.get("toolUseId")), str(call.get("name")), json.dumps(call.get("input") or {})
                )
            )
        elif isinstance(block.get("reasoningContent"), Mapping):
            reasoning = block["reasoningContent"].get("reasoningText")
            if isinstance(reasoning, Mapping) and isinstance(reasoning.get("text"), str):
                found.append(ReasoningContent(reasoning["text"], reasoning.get("signature")))
    return found


def _request_id(answer: Mapping[str, Any]) -> str | None:
    metadata = answer.get("ResponseMetadata")
    return metadata.get("RequestId") if isinstance(metadata, Mapping) else None


def response_from_wire(answer: Mapping[str, Any], *, model: str | None = None) -> ChatResponse[Any]:
    """Map a `converse` answer (`ConverseResponse`, as boto3 gives it) to a `ChatResponse`."""
    output = answer.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    if not isinstance(message, Mapping):
        raise ProviderResponseError("the server's answer could not be read: it has no `output.message`")
    reason = answer.get("stopReason")
    return ChatResponse(
        ChatMessage("assistant", _contents(message.get("content")), raw_representation=answer),
        usage=usage_from_wire(answer.get("usage")),
        finish_reason=STOP_REASONS.get(reason) if isinstance(reason, str) else None,
        response_id=_request_id(answer),
        model_id=model,
        raw_representation=answer,
    )


def response_to_wire(response: ChatResponse[Any]) -> dict[str, Any]:
    """A `ChatResponse` as a `ConverseResponse` body (metrics are not ours to know: zero)."""
    blocks: list[dict[str, Any]] = []
    for message in response.messages:
        blocks.extend(block for content in message.contents if (block := block_to_wire(content)) is not None)
    usage = response.usage or UsageDetails()
    wire_usage: dict[str, Any] = {
        "inputTokens": usage.input_tokens or 0,
        "outputTokens": usage.output_tokens or 0,
        "totalTokens": usage.total_tokens or 0,
    }
    if usage.cached_input_tokens is not None:
        wire_usage["cacheReadInputTokens"] = usage.cached_input_tokens
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": _WRITTEN_REASONS.get(response.finish_reason, "end_turn")
        if response.finish_reason
        else "end_turn",
        "usage": wire_usage,
        "metrics": {"latencyMs": 0},
    }


class BedrockStreamReader:
    """Reads ConverseStream's events (`{"messageStart": ...}`, `{"contentBlockDelta": ...}`, ...).

    Text and reasoning arrive as deltas; a tool call's input arrives in pieces of a JSON string
    and is given whole at its `contentBlockStop`. The finish comes with `messageStop`, usage with
    the `metadata` event after it.
    """

    def __init__(self, model: str | None = None) -> None:
        self.text: list[str] = []
        self.finished = False
        self._model = model
        self._calls: dict[int, tuple[str, str, list[str]]] = {}

    def read(self, event: Mapping[str, Any]) -> ChatResponseUpdate[Any] | None:
        """The update for one event (None when it carries nothing of ours)."""
        contents: list[Content] = []
        finish: FinishReason | None = None
        usage: UsageDetails | None = None
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            call = start.get("start", {}).get("toolUse")
            if isinstance(call, Mapping):
                self._calls[start.get("contentBlockIndex", 0)] = (str(call.get("toolUseId")), str(call.get("name")), [])
            return None
        if "contentBlockDelta" in event:
            contents = self._delta(event["contentBlockDelta"])
        elif "contentBlockStop" in event:
            taken = self._calls.pop(event["contentBlockStop"].get("contentBlockIndex", 0), None)
            if taken is None:
                return None
            call_id, name, pieces = taken
            contents = [FunctionCallContent(call_id, name, "".join(pieces) or "{}")]
        elif "messageStop" in event:
            reason = event["messageStop"].get("stopReason")
            finish = STOP_REASONS.get(reason) if isinstance(reason, str) else None
            self.finished = True
        elif "metadata" in event:
            usage = usage_from_wire(event["metadata"].get("usage"))
        if not contents and finish is None and usage is None:
            return None
        return ChatResponseUpdate(
            contents=contents,
            role="assistant",
            usage=usage,
            finish_reason=finish,
            model_id=self._model,
            raw_representation=event,
        )

    def _delta(self, event: Mapping[str, Any]) -> list[Content]:
        delta = event.get("delta") or {}
        if isinstance(delta.get("text"), str) and delta["text"]:
            self.text.append(delta["text"])
            return [TextContent(delta["text"])]
        call = self._calls.get(event.get("contentBlockIndex", 0))
        if call is not None and isinstance(delta.get("toolUse"), Mapping):
            call[2].append(str(delta["toolUse"].get("input", "")))
            return []
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, Mapping):
            if isinstance(reasoning.get("text"), str) and reasoning["text"]:
                return [ReasoningContent(reasoning["text"])]
            if isinstance(reasoning.get("signature"), str):
                return [ReasoningContent("", reasoning["signature"])]
        return []
