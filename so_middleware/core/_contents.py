"""Message contents: text, data, tool calls and results, reasoning, refusals.

Provider-neutral: every adapter maps its SDK's content parts onto these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from ._exceptions import UserError

__all__ = [
    "Content",
    "DataContent",
    "FunctionCallContent",
    "FunctionResultContent",
    "HostedFileContent",
    "ReasoningContent",
    "RefusalContent",
    "TextContent",
]


@dataclass(frozen=True)
class TextContent:
    """Plain text; the final answer of an assistant message is made of these."""

    text: str
    type: Literal["text"] = "text"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise UserError(f"TextContent needs a str, not {type(self.text).__name__}")


@dataclass(frozen=True)
class DataContent:
    """Binary or JSON data with a media type (an image, a document, a JSON value).

    Example: `DataContent(b"...", "image/png")` or `DataContent.from_json({"a": 1})`.
    """

    data: bytes | str
    media_type: str
    type: Literal["data"] = "data"
    name: str | None = None  # a file name, for the providers that take one (a document's)

    @classmethod
    def from_json(cls, value: Any) -> DataContent:
        """A JSON value as `application/json` data."""
        return cls(json.dumps(value), "application/json")

    def json(self) -> Any:
        """The data parsed as JSON (for `application/json` contents)."""
        return json.loads(self.data)


@dataclass(frozen=True)
class FunctionCallContent:
    """A tool (function) call the model asked for; `arguments` is the raw JSON text, and
    `signature` the opaque token a provider signed the call with (Gemini's thought signature),
    sent back as it came when the call returns to the model."""

    call_id: str
    name: str
    arguments: str = ""
    type: Literal["function_call"] = "function_call"
    signature: str | None = None

    def parsed_arguments(self) -> Any:
        """The arguments parsed as JSON (`{}` when empty)."""
        return json.loads(self.arguments) if self.arguments else {}


@dataclass(frozen=True)
class FunctionResultContent:
    """The result of a tool call, sent back to the model; `is_error` flags a failed call."""

    call_id: str
    result: Any
    is_error: bool = False
    name: str | None = None
    type: Literal["function_result"] = "function_result"

    @property
    def result_text(self) -> str:
        """The result as the text the wire carries."""
        return self.result if isinstance(self.result, str) else json.dumps(self.result)


@dataclass(frozen=True)
class ReasoningContent:
    """Model reasoning ("thinking"): secondary output, never part of `.text`."""

    text: str
    signature: str | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True)
class HostedFileContent:
    """A file the provider already holds, named by its id (an uploaded file, `file-...`).

    Example: `HostedFileContent("file-abc123", name="report.pdf")`.
    """

    file_id: str
    name: str | None = None
    type: Literal["hosted_file"] = "hosted_file"


@dataclass(frozen=True)
class RefusalContent:
    """The model's refusal to answer."""

    refusal: str
    type: Literal["refusal"] = "refusal"


Content = (
    TextContent
    | DataContent
    | HostedFileContent
    | FunctionCallContent
    | FunctionResultContent
    | ReasoningContent
    | RefusalContent
)
