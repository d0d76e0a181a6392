"""Chat Completions request fields: tools, tool choice, content parts and usage, as a client sends
and reads them (the gateway speaks Chat Completions only as a client, through the adapter)."""

from __future__ import annotations

from typing import Any

from ..core import (
    Content,
    DataContent,
    ForcedTool,
    FunctionTool,
    HostedFileContent,
    TextContent,
    UsageDetails,
    UserError,
)
from .common import data_uri, function_fields
from .common import tool_choice_to_wire as _choice

__all__ = ["part_to_wire", "tool_choice_to_wire", "tool_to_wire", "usage_from"]


def tool_to_wire(tool: FunctionTool) -> dict[str, Any]:
    """`{"type": "function", "function": {"name", "parameters", "description"?, "strict"?}}`."""
    return {"type": "function", "function": function_fields(tool)}


def tool_choice_to_wire(choice: str | ForcedTool) -> Any:
    """A forced tool as `{"type": "function", "function": {"name"}}`; the others as they are."""
    return _choice(choice, lambda name: {"type": "function", "function": {"name": name}})


def part_to_wire(content: Content) -> dict[str, Any]:
    """A user content part: text, an image (URL or data URI), a file (`file_data` or `file_id`).

    A text or JSON file goes as a text part holding the file's text: Chat Completions documents its
    `file` part for PDFs, and OpenAI-compatible servers (llama-server, vLLM) read text parts but
    refuse `file` ones. Bytes that are not UTF-8 cannot be that text unchanged, so they go as a file.
    Any other file is a `file` part whose `file_data` is a base64 data URL of the file's bytes.
    """
    if isinstance(content, TextContent):
        return {"type": "text", "text": content.text}
    if isinstance(content, HostedFileContent):
        return {"type": "file", "file": {"file_id": content.file_id}}
    if isinstance(content, DataContent):
        data = content.data
        if content.media_type.startswith("image/"):
            url = data if isinstance(data, str) and _is_url(data) else data_uri(content)
            return {"type": "image_url", "image_url": {"url": url}}
        if content.media_type == "application/json" or content.media_type.startswith("text/"):
            text = data if isinstance(data, str) else _utf8(data)
            if text is not None:
                return {"type": "text", "text": text}
        uri = data if isinstance(data, str) and data[:5].lower() == "data:" else data_uri(content)
        return {"type": "file", "file": {"file_data": uri, "filename": content.name or "file"}}
    raise UserError(f"Chat Completions cannot carry {type(content).__name__} ({getattr(content, 'media_type', '')})")


def _is_url(data: str) -> bool:
    return data[:5].lower() == "data:" or data[:7].lower() == "http://" or data[:8].lower() == "https://"


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def usage_from(usage: Any) -> UsageDetails | None:
    """A `CompletionUsage` (or None)."""
    if usage is None:
        return None
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return UsageDetails(
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        total_tokens=getattr(usage, "total_tokens", None),
        cached_input_tokens=getattr(prompt_details, "cached_tokens", None),
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None),
    )
