"""Approvals: a call of a tool marked `requires_approval` waits for the caller's decision.

The layer does not run such a call: it ends the run with the answer that asked, its
`additional_properties["approval_requests"]` listing an `ApprovalRequest` per waiting call (the
arguments validated) and `["approval_conversation"]` the whole conversation ending with that
answer (earlier rounds' calls and results included). The caller decides and sends that conversation
again with an `Approvals` feature: `options={"features": [Approvals({call_id: True})]}`. The
layer then runs the approved calls, answers a declined one with a refusal the model reads
(`False`, or a reason as a str), and goes on with the loop. The decisions hold for those calls
only: a call of a later answer waits for its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...core import ChatMessage, FunctionCallContent, FunctionResultContent, ModelBehaviorError, UserError
from ._tools import Tool

__all__ = [
    "APPROVALS_KEY",
    "CONVERSATION_KEY",
    "ApprovalRequest",
    "Approvals",
    "awaiting",
    "check_decisions",
    "declined",
    "waiting",
]

APPROVALS_KEY = "approval_requests"
CONVERSATION_KEY = "approval_conversation"  # the whole conversation, ending with the answer that asked


@dataclass(frozen=True)
class ApprovalRequest:
    """A call waiting for approval: its id, its tool, and its arguments, validated."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, init=False)
class Approvals:
    """A feature: the caller's decision per call id, `True` to run the call, `False` or a reason
    (a str) to decline it. Example: `Approvals({"call_1": True, "call_2": "not today"})`."""

    decisions: Mapping[str, bool | str]

    def __init__(self, decisions: Mapping[str, bool | str]) -> None:
        if not isinstance(decisions, Mapping):
            raise UserError(
                f"Approvals takes a dict of call id -> True, False or a reason, not {type(decisions).__name__}"
            )
        for call_id, decision in decisions.items():
            if not isinstance(call_id, str) or not isinstance(decision, bool | str):
                raise UserError(
                    f"Approvals: {call_id!r} -> {decision!r}: a decision is True, False or a reason (a str)"
                )
        object.__setattr__(self, "decisions", dict(decisions))


def awaiting(history: list[ChatMessage], tools: Mapping[str, Tool]) -> list[FunctionCallContent]:
    """The calls of this layer's tools in the history's last message, when it is an answer whose
    calls have no results yet: a run resumed after approvals."""
    if not history or history[-1].role != "assistant":
        return []
    return [c for c in history[-1].contents if isinstance(c, FunctionCallContent) and c.name in tools]


def waiting(
    calls: Sequence[FunctionCallContent], tools: Mapping[str, Tool], approvals: Approvals | None
) -> list[ApprovalRequest]:
    """The calls that need a decision and have none (a call whose arguments are invalid needs none:
    it is answered with the error)."""
    found: list[ApprovalRequest] = []
    for call in calls:
        tool = tools.get(call.name)
        if tool is None or not tool.requires_approval or (approvals and call.call_id in approvals.decisions):
            continue
        try:
            arguments = tool.schema.validate_arguments(call.arguments)
        except ModelBehaviorError:
            continue
        found.append(ApprovalRequest(call.call_id, call.name, arguments))
    return found


def check_decisions(approvals: Approvals | None, calls: Sequence[FunctionCallContent]) -> None:
    """`UserError` for a decision about a call that does not wait for one."""
    if approvals is None:
        return
    ids = {call.call_id for call in calls}
    unknown = sorted(set(approvals.decisions) - ids)
    if unknown:
        raise UserError(
            f"Approvals name {', '.join(map(repr, unknown))}, which no call waits for: send the conversation "
            "that ends with the answer that asked"
        )


def declined(call: FunctionCallContent, approvals: Approvals | None, tool: Tool) -> FunctionResultContent | None:
    """The refusal a declined call is answered with, or None when it may run."""
    if not tool.requires_approval or approvals is None:
        return None
    decision = approvals.decisions.get(call.call_id)
    if decision is True or decision is None:
        return None
    reason = f": {decision}" if isinstance(decision, str) and decision else "."
    return FunctionResultContent(call.call_id, f"The user declined this call{reason}", is_error=True, name=call.name)
