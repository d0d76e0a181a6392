"""The records of a tool loop: each call's `ToolActivity`, the run's `ToolBudget`, `ToolLoopError`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ...core import Attempt, ChatResponse, OutputError, UsageDetails, UserError
from ._tools import Tool

__all__ = [
    "ACTIVITIES_KEY",
    "ACTIVITY_KEY",
    "Run",
    "ToolActivity",
    "ToolBudget",
    "ToolLoopError",
    "ToolScope",
    "running_tool",
    "tool_scope",
]

ACTIVITIES_KEY = "tool_activities"
ACTIVITY_KEY = "tool_activity"


@dataclass(frozen=True)
class ToolActivity:
    """One tool call the layer ran (secondary output): what was asked, what came back, how long.

    `error` is the text sent back to the model when the call failed (then `result` is None);
    `nested` the tool calls made inside this one (an agent used as a tool: its run's activities).
    """

    name: str
    call_id: str
    arguments: str
    result: str | None
    error: str | None
    seconds: float
    iteration: int
    nested: tuple[ToolActivity, ...] = ()


@dataclass(frozen=True)
class ToolScope:
    """The tool call running in the current task: its run's budget, and where the activities of
    a run made inside it go (`ChatAgent.as_tool` adds its run's). See `running_tool()`."""

    budget: ToolBudget
    nested: list[ToolActivity]


_SCOPE: ContextVar[ToolScope | None] = ContextVar("so_middleware_tool_scope", default=None)


def running_tool() -> ToolScope | None:
    """The scope of the tool call this code runs inside, or None outside any: a tool that runs a
    model itself (an agent) shares the run's budget through it and reports its own tool calls.

    Example:
        scope = running_tool()
        options = {"features": [scope.budget]} if scope else None
    """
    return _SCOPE.get()


@contextlib.contextmanager
def tool_scope(budget: ToolBudget, nested: list[ToolActivity]) -> Iterator[None]:
    """Within the block, `running_tool()` is this scope (around one tool's run)."""
    token = _SCOPE.set(ToolScope(budget, nested))
    try:
        yield
    finally:
        _SCOPE.reset(token)


@dataclass
class ToolBudget:
    """Limits across every model call of a run (None: no limit), and what was spent so far.

    As a feature (`options={"features": [ToolBudget(max_tokens=20_000)]}`) one budget is shared
    by every call made with those options; the layer counts into it (`spent_*`).
    """

    max_tokens: int | None = None
    max_requests: int | None = None
    max_tool_calls: int | None = None
    spent_tokens: int = 0
    spent_requests: int = 0
    spent_tool_calls: int = 0

    def __post_init__(self) -> None:
        for name in ("max_tokens", "max_requests", "max_tool_calls"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise UserError(f"ToolBudget {name} must be a positive int or None, not {value!r}")

    def exceeded(self) -> str | None:
        """Which limit is reached, if any (checked before each model call)."""
        if self.max_requests is not None and self.spent_requests >= self.max_requests:
            return f"the budget of {self.max_requests} requests is spent"
        if self.max_tokens is not None and self.spent_tokens >= self.max_tokens:
            return f"the budget of {self.max_tokens} tokens is spent ({self.spent_tokens} used)"
        return None


class ToolLoopError(OutputError):
    """A tool loop reached a bound before the model answered without a call.

    Attributes (beside `attempts` and `usage`, one attempt per model call):
        activities: every `ToolActivity` of the run, in order.
        bound: which bound ended it (`"iterations"`, `"consecutive_errors"`, `"budget"`).
    """

    def __init__(
        self,
        message: str,
        *,
        bound: str,
        activities: Sequence[ToolActivity] = (),
        attempts: Sequence[Attempt] = (),
        usage: UsageDetails | None = None,
        response: Any = None,
    ) -> None:
        super().__init__(message, attempts=attempts, usage=usage, response=response)
        self.bound = bound
        self.activities = list(activities)


@dataclass
class Run:
    """One run's state: its tools, budget and records."""

    tools: dict[str, Tool]
    budget: ToolBudget
    activities: list[ToolActivity] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    usage: UsageDetails | None = None
    consecutive_errors: int = 0
    answered: dict[tuple[str, str], str] = field(default_factory=dict)  # (name, arguments) -> result
    repeats: int = 0  # calls of this round answered from an earlier one
    approvals: Any = None  # the caller's `Approvals`, when the run was resumed with them

    def record(self, response: ChatResponse[Any]) -> None:
        self.attempts.append(
            Attempt(len(self.attempts) + 1, response.text, usage=response.usage, finish_reason=response.finish_reason)
        )
        if response.usage is not None:
            self.usage = response.usage + self.usage if self.usage else response.usage
            self.budget.spent_tokens += response.usage.total_tokens or 0
        self.budget.spent_requests += 1

    def check_budget(self) -> None:
        """`ToolLoopError` when a limit of the budget is reached (before a model call)."""
        spent = self.budget.exceeded()
        if spent is not None:
            raise self.fail(f"{spent} (ToolBudget)", "budget")

    def check_errors(self, results: Sequence[Any], response: Any, limit: int) -> None:
        """Count an answer whose every call failed; `ToolLoopError` at `limit` in a row."""
        self.consecutive_errors = self.consecutive_errors + 1 if all(r.is_error for r in results) else 0
        if self.consecutive_errors >= limit:
            raise self.fail(
                f"every tool call failed in {self.consecutive_errors} answers in a row (max_consecutive_errors); "
                f"the last: {results[-1].result_text[:200]}",
                "consecutive_errors",
                response,
            )

    def out_of_iterations(self, limit: int) -> ToolLoopError:
        """The error of a run whose model still asked for tools after `limit` model calls."""
        return self.fail(f"the model still asked for tools after {limit} iterations (max_iterations)", "iterations")

    def fail(self, message: str, bound: str, response: Any = None) -> ToolLoopError:
        return ToolLoopError(
            message,
            bound=bound,
            activities=self.activities,
            attempts=self.attempts,
            usage=self.usage,
            response=response,
        )
