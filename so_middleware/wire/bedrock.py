"""Amazon Bedrock Converse wire translation: so_middleware types to `converse`'s keyword arguments,
its answers (and ConverseStream's events) back.

Pure functions and one small stateful stream reader: no client, no I/O, no SDK import. The shapes
are those of botocore's service model (`botocore/data/bedrock-runtime/2023-09-30/service-2.json`:
`ConverseRequest`, `ConverseResponse`, `ConverseStreamOutput`), as boto3 takes and gives them.

Request mapping (`client.converse(modelId=, messages=, system=, ...)`):

| so_middleware                           | Converse                                                         |
|-----------------------------------------|------------------------------------------------------------------|
| `instructions` option + system messages | `system: [{"text"}]`                                             |
| user / assistant turns                  | `messages` with role `user` / `assistant` (a tool turn is a user turn) |
| text / image / PDF contents             | `{"text"}` / `{"image": {"format", "source": {"bytes"}}}` / `{"document": ...}` |
| `FunctionCallContent`                   | `{"toolUse": {"toolUseId", "name", "input"}}`                     |
| `FunctionResultContent`                 | `{"toolResult": {"toolUseId", "content": [{"text"}], "status"}}`  |
| `ReasoningContent` with a signature     | `{"reasoningContent": {"reasoningText": {"text", "signature"}}}` (without one: not sent) |
| `max_tokens`, `temperature`, `top_p`, `stop` | `inferenceConfig.maxTokens`, `.temperature`, `.topP`, `.stopSequences` |
| `FunctionTool`                          | `toolConfig.tools[].toolSpec` (`inputSchema.json`, `strict` where set) |
| `tool_choice`                           | `toolConfig.toolChoice` `{"auto": {}}` / `{"any": {}}` / `{"tool": {"name"}}`; `none`: no choice sent |
| `response_format` json_schema           | `outputConfig.textFormat` `{type: json_schema, structure: {jsonSchema: {schema: <a JSON string>, name, description}}}` |
| `response_format` json_object           | nothing: Converse has no JSON mode (the adapter warns)           |
| `seed`                                  | none on Converse: a `UserError` before any request               |
| `extra_body`                            | merged into the keyword arguments (`additionalModelRequestFields`, `guardrailConfig`, ...) |

Answer mapping: `text` blocks are the answer, `toolUse` blocks `FunctionCallContent`,
`reasoningContent` blocks `ReasoningContent`; `stopReason` through `STOP_REASONS`; usage
`inputTokens`, `outputTokens`, `totalTokens`, `cacheReadInputTokens`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    HostedFileContent,
    ProviderResponseError,
    ReasoningContent,
    RefusalContent,
    ResponseFormat,
    TextContent,
    UsageDetails,
    UserError,
    copy_json,
)
from .common import chosen_model, tool_choice_to_wire, tools_to_wire

__all__ = [
    "STOP_REASONS",
    "BedrockStreamReader",
    "output_format_to_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "usage_from_wire",
]

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
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp"}


def request_to_wire(messages: list[ChatMessage], options: ChatOptions, *, model: str | None) -> dict[str, Any]:
    """The keyword arguments of `converse` (and `converse_stream`) for this call."""
    if options.seed is not None:
        raise UserError(
            "Amazon Bedrock Converse has no `seed` option: drop it, or send a model's own field through "
            "extra_body={'additionalModelRequestFields': {...}}"
        )
    system = [{"text": options.instructions}] if options.instructions else []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.text:
                system.append({"text": message.text})
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [block for content in message.contents if (block := _block(content)) is not None]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    request: dict[str, Any] = {"modelId": chosen_model(options, model), "messages": turns}
    if system:
        request["system"] = system
    inference: dict[str, Any] = {}
    for ours, theirs in (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP")):
        value = getattr(options, ours)
        if value is not None:
            inference[theirs] = value
    if options.stop:
        inference["stopSequences"] = list(options.stop)
    if inference:
        request["inferenceConfig"] = inference
    if options.tools:
        tool_config: dict[str, Any] = {"tools": tools_to_wire(options.tools, _tool_to_wire)}
        if options.tool_choice is not None and options.tool_choice != "none":
            choice = tool_choice_to_wire(options.tool_choice, lambda name: {"tool": {"name": name}})
            tool_config["toolChoice"] = {"auto": {}} if choice == "auto" else {"any": {}} if choice == "required" else choice
        request["toolConfig"] = tool_config
    if options.response_format is not None:
        text_format = output_format_to_wire(options.response_format)
        if text_format is not None:
            request["outputConfig"] = {"textFormat": text_format}
    request.update(options.extra_body or {})
    return request


def output_format_to_wire(fmt: ResponseFormat) -> dict[str, Any] | None:
    """`outputConfig.textFormat` for `fmt`: the schema as a JSON *string*, as Converse takes it
    (`JsonSchemaDefinition.schema` is a `String`); None for text and json_object (no such form)."""
    if fmt.raw is not None:
        forwarded: dict[str, Any] = copy_json(dict(fmt.raw))
        return forwarded
    if fmt.type != "json_schema" or fmt.schema is None:
        return None
    definition: dict[str, Any] = {"schema": json.dumps(fmt.schema), "name": fmt.name or "response"}
    if fmt.description:
        definition["description"] = fmt.description
    return {"type": "json_schema", "structure": {"jsonSchema": definition}}


def _block(content: Content) -> dict[str, Any] | None:
    if isinstance(content, TextContent):
        return {"text": content.text} if content.text else None
    if isinstance(content, RefusalContent):
        return {"text": content.refusal}
    if isinstance(content, FunctionCallContent):
        call = {"toolUseId": content.call_id, "name": content.name, "input": content.parsed_arguments()}
        return {"toolUse": call}
    if isinstance(content, FunctionResultContent):
        status = "error" if content.is_error else "success"
        result = {"toolUseId": content.call_id, "content": [{"text": content.result_text}], "status": status}
        return {"toolResult": result}
    if isinstance(content, ReasoningContent):
        if content.signature is None:
            return None  # Converse takes back only signed reasoning
        return {"reasoningContent": {"reasoningText": {"text": content.text, "signature": content.signature}}}
    if isinstance(content, DataContent):
        return _data_block(content)
    if isinstance(content, HostedFileContent):
        raise UserError(f"Amazon Bedrock cannot carry a file by our id ({content.file_id}): send its data")
    return None


def _data_block(content: DataContent) -> dict[str, Any]:
    data = content.data
    if content.media_type == "application/json" or content.media_type.startswith("text/"):
        return {"text": data if isinstance(data, str) else data.decode("utf-8", "replace")}
    if isinstance(data, str) and data.startswith("s3://"):
        source: dict[str, Any] = {"s3Location": {"uri": data}}
    elif isinstance(data, str) and data.startswith(("http://", "https://")):
        raise UserError("Amazon Bedrock takes images as bytes or s3:// locations, not URLs: download it and send its bytes")
    else:
        source = {"bytes": data.encode() if isinstance(data, str) else data}
    image_format = _IMAGE_FORMATS.get(content.media_type)
    if image_format is not None:
        return {"image": {"format": image_format, "source": source}}
    if content.media_type == "application/pdf":
        return {"document": {"format": "pdf", "name": "document", "source": source}}
    raise UserError(
        f"Amazon Bedrock Converse takes no {content.media_type} content here: send png, jpeg, gif, webp or pdf"
    )


def _tool_to_wire(tool: FunctionTool) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": dict(tool.parameters)}}
    if tool.description:
        spec["description"] = tool.description
    if tool.strict is not None:
        spec["strict"] = tool.strict
    return {"toolSpec": spec}


# ---------------------------------------------------------------- answers


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
            found.append(FunctionCallContent(str(call.get("toolUseId")), str(call.get("name")), json.dumps(call.get("input") or {})))
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
        blocks.extend(block for content in message.contents if (block := _block(content)) is not None)
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
        "stopReason": _WRITTEN_REASONS.get(response.finish_reason, "end_turn") if response.finish_reason else "end_turn",
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
