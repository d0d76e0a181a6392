"""The Converse request: `converse`'s keyword arguments for a call (see the package's table)."""

from __future__ import annotations

import json
from typing import Any

from ...core import (
    ChatMessage,
    ChatOptions,
    Content,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    FunctionTool,
    ReasoningContent,
    RefusalContent,
    ResponseFormat,
    TextContent,
    UserError,
    copy_json,
)
from ..common import chosen_model, tool_choice_to_wire, tools_to_wire

__all__ = ["block_to_wire", "output_format_to_wire", "request_to_wire"]

_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


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
        blocks = [block for content in message.contents if (block := block_to_wire(content)) is not None]
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
            tool_config["toolChoice"] = (
                {"auto": {}} if choice == "auto" else {"any": {}} if choice == "required" else choice
            )
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


def block_to_wire(content: Content) -> dict[str, Any] | None:
    """One content as a Converse content block (None: nothing of it is sent)."""
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
    # the one content left: a file the provider would hold by our id
    raise UserError(f"Amazon Bedrock cannot carry a file by our id ({content.file_id}): send its data")


def _data_block(content: DataContent) -> dict[str, Any]:
    data = content.data
    if content.media_type == "application/json" or content.media_type.startswith("text/"):
        return {"text": data if isinstance(data, str) else data.decode("utf-8", "replace")}
    if isinstance(data, str) and data.startswith("s3://"):
        source: dict[str, Any] = {"s3Location": {"uri": data}}
    elif isinstance(data, str) and data.startswith(("http://", "https://")):
        raise UserError(
            "Amazon Bedrock takes images as bytes or s3:// locations, not URLs: download it and send its bytes"
        )
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
