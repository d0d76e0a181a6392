"""A tool that requires approval: the run stops with the waiting calls, and resumes as decided."""

from __future__ import annotations

from typing import Any

import pytest

from so_middleware import (
    ApprovalRequest,
    Approvals,
    ChatMessage,
    ChatResponse,
    FunctionResultContent,
    UserError,
    tool,
    with_function_invocation,
)
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["respond", "stream"])
sent: list[int] = []


@tool(requires_approval=True, description="Send money to an account.")
def transfer(account: str, amount: int) -> str:
    sent.append(amount)
    return f"sent {amount} to {account}"


def lookup(account: str) -> str:
    """An account's owner."""
    return f"{account} belongs to Ada"


async def ask(client: Any, messages: Any, stream: bool, **kwargs: Any) -> ChatResponse[Any]:
    if not stream:
        return await client.get_response(messages, **kwargs)  # type: ignore[no-any-return]
    response_stream = client.get_response(messages, stream=True, **kwargs)
    async for _ in response_stream:
        pass
    return await response_stream.get_final_response()  # type: ignore[no-any-return]


def results_in(messages: list[ChatMessage]) -> list[FunctionResultContent]:
    return [c for m in messages if m.role == "tool" for c in m.contents if isinstance(c, FunctionResultContent)]


@pytest.fixture(autouse=True)
def _nothing_sent() -> None:
    sent.clear()


@STREAM
@pytest.mark.parametrize(("decision", "ran", "result"), [
    (True, [5], "sent 5 to acct-1"),
    (False, [], "The user declined this call."),
    ("too much", [], "The user declined this call: too much"),
])  # fmt: skip
async def test_a_call_waits_for_approval_then_runs_or_is_declined_as_decided(
    stream: bool, decision: bool | str, ran: list[int], result: str
) -> None:
    fake = FakeChatClient(
        [
            Reply(tool_calls=[("lookup", '{"account": "acct-1"}'), ("transfer", '{"account": "acct-1", "amount": 5}')]),
            "Done.",
        ]
    )
    client = with_function_invocation(fake, tools=[transfer, lookup])
    history: list[ChatMessage] = [ChatMessage("user", "Send 5 to acct-1")]
    paused = await ask(client, history, stream)
    (request,) = paused.additional_properties["approval_requests"]
    assert request == ApprovalRequest("call_1", "transfer", {"account": "acct-1", "amount": 5})
    assert sent == [] and len(fake.calls) == 1  # nothing ran, not even the call that needs no approval

    resumed = await ask(
        client, [*history, *paused.messages], stream, options={"features": [Approvals({"call_1": decision})]}
    )
    assert resumed.text == "Done."
    assert sent == ran
    results = results_in(fake.calls[1].messages)
    assert [(r.call_id, r.result) for r in results] == [("call_0", "acct-1 belongs to Ada"), ("call_1", result)]
    assert results[1].is_error is (decision is not True)


async def test_a_resumed_call_without_a_decision_keeps_waiting() -> None:
    fake = FakeChatClient([Reply(tool_calls=[("transfer", '{"account": "a", "amount": 1}')]), "Done."])
    client = with_function_invocation(fake, tools=[transfer])
    paused = await client.get_response("Send 1 to a")
    again = await client.get_response([ChatMessage("user", "Send 1 to a"), *paused.messages])
    assert [r.call_id for r in again.additional_properties["approval_requests"]] == ["call_0"]
    assert len(fake.calls) == 1 and sent == []


async def test_a_decision_about_a_call_that_does_not_wait_is_a_user_error_before_any_call() -> None:
    fake = FakeChatClient("x")
    client = with_function_invocation(fake, tools=[transfer])
    with pytest.raises(UserError, match="'call_9', which no call waits for"):
        await client.get_response("Hi", options={"features": [Approvals({"call_9": True})]})
    assert fake.calls == []


async def test_a_call_with_invalid_arguments_needs_no_approval_it_is_answered_with_the_error() -> None:
    fake = FakeChatClient([Reply(tool_calls=[("transfer", '{"account": "a"}')]), "Sorry."])
    response = await with_function_invocation(fake, tools=[transfer]).get_response("Send")
    assert "approval_requests" not in response.additional_properties
    (result,) = results_in(fake.calls[1].messages)
    assert result.is_error and "invalid arguments for transfer" in result.result


@pytest.mark.parametrize("decisions", [["call_0"], {"call_0": 1}, {3: True}])
def test_approvals_that_are_not_decisions_are_a_user_error(decisions: Any) -> None:
    with pytest.raises(UserError, match="Approvals"):
        Approvals(decisions)


@STREAM
async def test_decisions_hold_for_the_calls_that_waited_not_for_later_ones(stream: bool) -> None:
    """A later answer's call waits for its own decision, even under an id a decision named."""
    asks = [Reply(tool_calls=[("transfer", f'{{"account": "acct-1", "amount": {n}}}')]) for n in (5, 3)]
    fake = FakeChatClient([*asks, "Done."])
    client = with_function_invocation(fake, tools=[transfer])
    history: list[ChatMessage] = [ChatMessage("user", "Send 5 to acct-1")]
    paused = await ask(client, history, stream)
    decided = {"features": [Approvals({"call_0": True})]}
    again = await ask(client, [*history, *paused.messages], stream, options=decided)
    assert [r.arguments for r in again.additional_properties["approval_requests"]] == [
        {"account": "acct-1", "amount": 3}
    ]
    assert sent == [5]
