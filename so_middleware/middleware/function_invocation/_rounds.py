"""The steps of a tool loop's rounds: the run's set-up, reading an answer's calls, the last answer."""

from __future__ import annotations

from typing import Any

from ...core import ChatMessage, ChatOptions, ChatResponse, FunctionCallContent, FunctionTool, UserError, find_feature
from ._approvals import APPROVALS_KEY, CONVERSATION_KEY, Approvals, awaiting, check_decisions, waiting
from ._calls import Calls
from ._records import ACTIVITIES_KEY, Run, ToolBudget
from ._tools import Tool, Tools, merged

__all__ = ["after_round", "calls_in", "finished", "foreign", "resume", "start", "waits"]


def start(own: list[Tool], options: ChatOptions) -> tuple[Run, ChatOptions]:
    """A run's tools (the layer's and the options' `Tools`) and budget, and the options that
    declare the tools to the model; `UserError` when a name is both declared and run here."""
    per_run = find_feature(options, Tools)
    tools = merged(own, per_run.tools if per_run else ())
    budget = find_feature(options, ToolBudget) or ToolBudget()
    approvals = find_feature(options, Approvals)
    declared = list(options.tools or ())
    names = {_declared_name(item) for item in declared}
    for name, item in tools.items():
        if name in names:
            raise UserError(f"tool {name!r} is both declared in the options and run by this layer: rename one")
        declared.append(item.declaration())
    return Run(tools, budget, approvals=approvals), options.replace(tools=declared or None)


def after_round(options: ChatOptions, run: Run, calls: int) -> ChatOptions:
    """The options for the call after a round of tool calls: a forced `tool_choice` lifted, and
    no tool offered (`"none"`) when every call of the round repeated an earlier one: the model
    has every result it asked for, and the next answer is the reply."""
    if run.repeats == calls:
        return options.replace(tool_choice="none")
    if options.tool_choice is None or options.tool_choice in ("auto", "none"):
        return options
    return options.replace(tool_choice=None)


def waits(response: ChatResponse[Any], calls: list[FunctionCallContent], run: Run, before: list[ChatMessage]) -> bool:
    """Whether calls of the answer wait for approval: then they are listed on it, with the whole
    conversation (`before` it, then it: what a resumed run sends again), and the run ends."""
    requests = waiting(calls, run.tools, run.approvals)
    if requests:
        response.additional_properties[APPROVALS_KEY] = requests
        response.additional_properties[CONVERSATION_KEY] = [*before, *response.messages]
    return bool(requests)


async def resume(
    run: Run, history: list[ChatMessage], calls_runner: Calls
) -> tuple[list[ChatMessage], ChatResponse[Any] | None]:
    """A conversation that ends with calls waiting for approval: run them as decided (the history
    then goes on with their results), or, still undecided, the answer to return (else None)."""
    calls = awaiting(history, run.tools)
    check_decisions(run.approvals, calls)
    if not calls:
        return history, None
    asked: ChatResponse[Any] = ChatResponse(history[-1])
    if waits(asked, calls, run, history[:-1]):
        return history, finished(asked, run)
    results = await calls_runner.run_calls(run, calls, 0)
    run.approvals = None  # the decisions were for these calls: a later call waits for its own
    return [*history, ChatMessage("tool", list(results))], None


def calls_in(response: ChatResponse[Any]) -> list[FunctionCallContent]:
    """The tool calls an answer asks for, in its order."""
    return [c for m in response.messages for c in m.contents if isinstance(c, FunctionCallContent)]


def foreign(calls: list[FunctionCallContent], tools: dict[str, Tool], options: ChatOptions) -> bool:
    """Whether the answer calls a tool the options declare that this layer does not run."""
    declared = {_declared_name(item) for item in options.tools or ()}
    return any(call.name not in tools and call.name in declared for call in calls)


def _declared_name(item: Any) -> str | None:
    if isinstance(item, FunctionTool):
        return item.name
    if isinstance(item, dict):
        inner = item.get("function")
        return inner.get("name") if isinstance(inner, dict) else item.get("name")
    return None


def finished(response: ChatResponse[Any], run: Run) -> ChatResponse[Any]:
    """The last answer, with the run's activities and the usage summed over every call on it."""
    response.additional_properties[ACTIVITIES_KEY] = list(run.activities)
    if run.usage is not None:
        response.usage = run.usage
    return response
