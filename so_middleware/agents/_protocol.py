"""The agents' call contract, declared once: `Agent` (the `run` signature), `AgentRuns` (it as a
base class), `AgentCall` (a run's arguments, as the `_run` hook gets them) and `SyncRuns` (the
blocking `run_sync`), with the thread and stream types they name."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Generic, Literal, ParamSpec, Protocol, TypeVar, cast, overload, runtime_checkable

from typing_extensions import TypeVar as DefaultedTypeVar

if TYPE_CHECKING:
    from typing_extensions import TypeForm

from ..core import (
    ChatMessage,
    ContinuationToken,
    MessageInput,
    OptionsInput,
    ResponseStream,
    UserError,
    run_sync,
    show_parameters_of,
    typed_as,
)
from ._response import AgentResponse, AgentResponseUpdate

__all__ = ["Agent", "AgentCall", "AgentRuns", "AgentStream", "AgentThread", "SyncRuns", "TypedAgentStream"]

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")
# A typed agent's input (`ChatAgent(..., input_type=Order)`: `ChatAgent[Order]`); a chat agent's,
# messages. Contravariant: an agent that takes any input may stand where one taking `Order` is asked.
TIn = DefaultedTypeVar("TIn", contravariant=True, default=MessageInput)

TypedAgentStream = ResponseStream[AgentResponseUpdate[T], AgentResponse[T]]
Decisions = Mapping[str, bool | str] | None  # a paused run's decisions, per call id
AgentStream = TypedAgentStream[Any]


class AgentThread:
    """The conversation so far, for multi-turn runs: pass the same thread to each `run`.

    Only primary output is kept (the user's input and the agent's final answers).
    """

    def __init__(self, messages: Sequence[ChatMessage] = ()) -> None:
        self.messages: list[ChatMessage] = list(messages)

    def __len__(self) -> int:
        return len(self.messages)


@dataclass(frozen=True)
class AgentCall:
    """One `run`'s arguments, as `Agent.run` hands them to a class's `_run` hook (the hook's one
    parameter, so the argument list is written out once more here and nowhere else)."""

    input: Any = None
    thread: AgentThread | None = None
    options: OptionsInput = None
    output_type: Any = None
    stream: bool = False
    continuation_token: ContinuationToken | str | None = None
    approvals: Decisions = None

    def given(self) -> dict[str, Any]:
        """The keyword arguments given a value (not left at their defaults), to pass the run on to
        an agent whose `run` may take fewer of them."""
        values = {f.name: (getattr(self, f.name), f.default) for f in fields(self) if f.name != "input"}
        return {name: value for name, (value, default) in values.items() if value is not default}


@runtime_checkable
class Agent(Protocol[TIn]):
    """What `StructuredOutputAgent` and agent decorators wrap: anything with this `run`.

    The run signature is declared here once: the overloads (what a type checker sees) and the one
    implementation, which hands the run to the class's `_run(call)` hook as one `AgentCall`.
    `AgentRuns` is this protocol as a base class; `ChatAgent` and `DelegatingAgent` inherit it.
    """

    @overload
    def run(
        self,
        input: TIn | MessageInput | None = None,
        *,
        thread: AgentThread | None = None,
        options: OptionsInput = None,
        output_type: None = None,
        stream: Literal[False] = False,
        continuation_token: ContinuationToken | str | None = None,
        approvals: Decisions = None,
    ) -> Awaitable[AgentResponse[Any]]: ...

    @overload
    def run(
        self,
        input: TIn | MessageInput | None = None,
        *,
        thread: AgentThread | None = None,
        options: OptionsInput = None,
        output_type: None = None,
        stream: Literal[True],
        continuation_token: ContinuationToken | str | None = None,
        approvals: Decisions = None,
    ) -> AgentStream: ...

    @overload
    def run(
        self,
        input: TIn | MessageInput | None = None,
        *,
        thread: AgentThread | None = None,
        options: OptionsInput = None,
        output_type: TypeForm[T],
        stream: Literal[False] = False,
        continuation_token: ContinuationToken | str | None = None,
        approvals: Decisions = None,
    ) -> Awaitable[AgentResponse[T]]: ...

    @overload
    def run(
        self,
        input: TIn | MessageInput | None = None,
        *,
        thread: AgentThread | None = None,
        options: OptionsInput = None,
        output_type: TypeForm[T],
        stream: Literal[True],
        continuation_token: ContinuationToken | str | None = None,
        approvals: Decisions = None,
    ) -> TypedAgentStream[T]: ...

    def run(
        self,
        input: TIn | MessageInput | None = None,
        *,
        thread: AgentThread | None = None,
        options: OptionsInput = None,
        output_type: Any = None,
        stream: bool = False,
        continuation_token: ContinuationToken | str | None = None,
        approvals: Decisions = None,
    ) -> Awaitable[AgentResponse[Any]] | AgentStream:
        """Run the agent on `input` (a string, a message or several), continuing `thread`.

        Long-running runs (seed 001, option 2: a property on the agent's own response type):
        `options={"background": True}` returns at once an `AgentResponse` whose `finish_reason`
        is `LONG_RUNNING` and whose `continuation_token` names the run; `run(continuation_token=
        token, thread=thread)` polls it (or with `stream=True` resumes its stream) and, once it
        completes, gives the answer like any run. A property rather than a content item (option
        1) because the token is not part of the answer: `.text` and `.messages` stay the final
        answer only, and the token is one attribute away instead of a search through contents.
        The thread gets the input when the run starts and the answer when it completes.
        A run whose tool calls wait for approval ends with `approval_requests` and a
        `continuation_token`; `run(continuation_token=token, approvals={call_id: True | False |
        "reason"})` resumes it, in this process or another one (see `ChatAgent`).
        `output_type=T` types the result as `AgentResponse[T]`, for any type form (see `ChatClient`).
        """
        call = AgentCall(input, thread, options, output_type, stream, continuation_token, approvals)
        return cast(_Running, self)._run(call)


class _Running(Protocol):
    """What `Agent.run` calls: the hook of the class that inherits `AgentRuns`."""

    def _run(self, call: AgentCall) -> Awaitable[AgentResponse[Any]] | AgentStream: ...


if TYPE_CHECKING:
    AgentRuns = Agent
else:

    class AgentRuns(Generic[TIn]):
        """`Agent`'s typed `run` as a plain base class: a class inherits it and implements `_run(call)`.
        Plain because wrapt's pure-Python proxy cannot take a `Protocol` among its bases."""

        run = Agent.run


def _blocking(signature: Callable[P, Awaitable[R]]) -> Callable[P, R]:
    """`signature`'s overloads that return an awaitable, each returning what it awaits: `run`'s
    non-streaming overloads as `run_sync` has them (a `ParamSpec` keeps overloads apart, and
    drops the streaming ones, whose result is not awaitable)."""
    return cast("Callable[P, R]", signature)


class SyncRuns(Generic[TIn]):
    """`run_sync`, the blocking `run`, for the agents that have a typed `run`: typed from `Agent.run`,
    so its parameters are `run`'s (`stream` aside)."""

    # named before use: pyright infers a nested `typed_as(_blocking(...))` from the decorator's
    # expected type and loses `T`; `Agent[TIn]`, so that a `ChatAgent[Order]` takes an `Order`
    _signature = _blocking(Agent[TIn].run)

    @typed_as(_signature)
    def run_sync(self, *args: Any, **kwargs: Any) -> Any:
        """Blocking `run` for scripts (raises `UserError` inside a running event loop): typed input
        and approvals as `run` takes them."""
        if kwargs.get("stream"):
            raise UserError("run_sync() does not stream: iterate run(..., stream=True) with async for")
        run: Callable[..., Awaitable[AgentResponse[Any]]] = cast("Agent[Any]", self).run
        return run_sync(lambda: run(*args, **kwargs))

    del _signature  # a name for the type checkers only, not an attribute of every agent


show_parameters_of(Agent.run, vars(SyncRuns)["run_sync"])
