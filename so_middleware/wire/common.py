"""What every protocol's wire shares: the model a call goes to, data as a data URI, a function
tool's fields, a forced tool choice, the warning for a format a server will not enforce."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core import ChatOptions, DataContent, ForcedTool, FunctionTool, UserError

__all__ = ["chosen_model", "data_uri", "function_fields", "tool_choice_to_wire", "tools_to_wire", "warn_unenforced"]


def chosen_model(options: ChatOptions, model: str | None) -> str:
    """The call's model (the options' over the adapter's); none at all is a `UserError` before any request."""
    chosen = options.model or model
    if not chosen:
        raise UserError("no model given: pass model=... to the adapter or options={'model': ...}")
    return chosen


def data_uri(content: DataContent) -> str:
    """`data:<media type>;base64,<data>`."""
    raw = content.data.encode() if isinstance(content.data, str) else content.data
    return f"data:{content.media_type};base64,{base64.b64encode(raw).decode()}"


def function_fields(tool: FunctionTool, *, parameters: str = "parameters") -> dict[str, Any]:
    """A function tool's `name`, its schema under `parameters` (the protocol's key for it), and its
    `description` and `strict` where set."""
    fields: dict[str, Any] = {"name": tool.name, parameters: dict(tool.parameters)}
    if tool.description:
        fields["description"] = tool.description
    if tool.strict is not None:
        fields["strict"] = tool.strict
    return fields


def tools_to_wire(
    tools: Sequence[FunctionTool | Mapping[str, Any]], shape: Callable[[FunctionTool], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each tool in the protocol's `shape`; a tool given as a dict is the caller's wire form, sent as is."""
    return [dict(tool) if isinstance(tool, Mapping) else shape(tool) for tool in tools]


def tool_choice_to_wire(choice: str | ForcedTool, forced: Callable[[str], dict[str, Any]]) -> Any:
    """A forced tool in the protocol's `forced` shape; `auto`/`none`/`required` as they are."""
    return forced(choice.name) if isinstance(choice, ForcedTool) else choice


def warn_unenforced(format_type: str, reason: str) -> None:
    """Warn that a response format `reason` (is not enforced by ..., has no form here): the
    answer may not follow it. Raised from the adapter's request building, pointed at the caller."""
    warnings.warn(
        f"the {format_type} response format {reason}: the answer may not follow it; "
        "validate it (with_structured_output does)",
        UserWarning,
        stacklevel=6,
    )
