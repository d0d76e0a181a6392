"""Approvals at the agent level: a run pauses with its waiting calls and a token, is kept in a
store (memory, SQLite, PostgreSQL), and resumes once, by its tenant, also in another process
after the first one was killed."""

from __future__ import annotations

import base64
import hashlib
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from paused_runs import ASKING as ASKS
from paused_runs import Receipt, agent, lookup, store, transfer

from so_middleware import (
    AgentResponse,
    AgentThread,
    ApprovalRequest,
    ChatAgent,
    FunctionResultContent,
    UserError,
    tool,
)
from so_middleware.agents import MemoryPausedRuns, PausedRunStoreError, SQLitePausedRuns
from so_middleware.testing import FakeChatClient, Reply

pytestmark = pytest.mark.anyio
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["respond", "stream"])
SCRIPT = Path(__file__).with_name("paused_runs.py")


async def run(agent: ChatAgent, stream: bool, *args: Any, **kwargs: Any) -> AgentResponse[Any]:
    if not stream:
        return await agent.run(*args, **kwargs)
    response_stream = agent.run(*args, stream=True, **kwargs)
    async for _ in response_stream:
        pass
    return await response_stream.get_final_response()


def results_sent(fake: FakeChatClient) -> list[FunctionResultContent]:
    return [c for m in fake.calls[-1].messages for c in m.contents if isinstance(c, FunctionResultContent)]


@STREAM
@pytest.mark.parametrize(("decision", "result"), [
    (True, "sent 5 to acct-1"),
    ("too much", "The user declined this call: too much"),
])  # fmt: skip
async def test_a_run_pauses_with_the_waiting_calls_and_resumes_as_decided(
    stream: bool, decision: bool | str, result: str
) -> None:
    fake = FakeChatClient([*ASKS, "Done."])
    agent = ChatAgent(fake, tools=[transfer, lookup], instructions="Move money.")
    thread = AgentThread()
    paused = await run(agent, stream, "Send 5 to acct-1", thread=thread)
    assert paused.approval_requests == [ApprovalRequest("call_0", "transfer", {"account": "acct-1", "amount": 5})]
    assert paused.continuation_token is not None and len(thread) == 0
    assert [r.name for r in paused.secondary.tool_runs] == ["lookup"]

    resumed = await run(agent, stream, continuation_token=paused.continuation_token, approvals={"call_0": decision})
    assert resumed.text == "Done." and resumed.approval_requests == []
    assert [r.result_text for r in results_sent(fake)] == ["acct-1 belongs to Ada", result]  # every round's result
    assert fake.calls[-1].options.instructions == "Move money."
    assert [r.name for r in resumed.secondary.tool_runs] == ["lookup", "transfer"]


async def test_the_thread_given_to_the_resumed_run_gets_the_input_and_the_answer() -> None:
    agent = ChatAgent(FakeChatClient([*ASKS, "Done."]), tools=[transfer, lookup])
    paused = await agent.run("Send 5 to acct-1")
    thread = AgentThread()
    await agent.run(continuation_token=str(paused.continuation_token), approvals={"call_0": True}, thread=thread)
    assert [(m.role, m.text) for m in thread.messages] == [("user", "Send 5 to acct-1"), ("assistant", "Done.")]


async def test_a_token_resumes_once() -> None:
    agent = ChatAgent(FakeChatClient([*ASKS, "Done.", "Again."]), tools=[transfer, lookup])
    token = (await agent.run("Send 5")).continuation_token
    await agent.run(continuation_token=token, approvals={"call_0": True})
    with pytest.raises(UserError, match="already used"):
        await agent.run(continuation_token=token, approvals={"call_0": True})


async def test_approvals_for_a_call_the_run_does_not_wait_for_are_refused_before_any_call() -> None:
    fake = FakeChatClient([*ASKS, "Done."])
    agent = ChatAgent(fake, tools=[transfer, lookup])
    token = (await agent.run("Send 5")).continuation_token
    with pytest.raises(UserError, match=r"approvals name 'call_9', which the paused run does not wait for"):
        await agent.run(continuation_token=token, approvals={"call_9": True})
    assert len(fake.calls) == 2
    assert (await agent.run(continuation_token=token, approvals={"call_0": True})).text == "Done."  # not used up


async def test_a_resumed_run_whose_tools_changed_is_refused(tmp_path: Path) -> None:
    paused_runs = SQLitePausedRuns(tmp_path / "runs.db")
    token = (
        await ChatAgent(FakeChatClient(ASKS), tools=[transfer, lookup], paused_runs=paused_runs).run("x")
    ).continuation_token

    @tool(requires_approval=True, name="transfer")
    def transfer_in_cents(account: str, cents: int) -> str:
        """Send money."""
        return "sent"

    changed = ChatAgent(FakeChatClient("Done."), tools=[transfer_in_cents, lookup], paused_runs=paused_runs)
    with pytest.raises(UserError, match=r"tools changed since the run paused \('transfer' \(changed\)\)"):
        await changed.run(continuation_token=token, approvals={"call_0": True})
    fewer = ChatAgent(FakeChatClient("Done."), tools=[transfer], paused_runs=paused_runs)
    with pytest.raises(UserError, match=r"'lookup' \(gone\)"):
        await fewer.run(continuation_token=token, approvals={"call_0": True})


async def test_a_token_of_another_tenant_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    token = (await agent(ASKS, SQLitePausedRuns(path, tenant="acme")).run("x", output_type=Receipt)).continuation_token
    other = agent(['{"sent": 5}'], SQLitePausedRuns(path, tenant="globex"))
    with pytest.raises(UserError, match="names no paused run of tenant 'globex'"):
        await other.run(continuation_token=token, approvals={"call_0": True}, output_type=Receipt)


async def test_resuming_asks_for_the_output_type_the_run_paused_with() -> None:
    paused_runs = MemoryPausedRuns()
    token = (await agent(ASKS, paused_runs).run("x", output_type=Receipt)).continuation_token
    with pytest.raises(UserError, match="paused run asked for output_type Receipt"):
        await agent([], paused_runs).run(continuation_token=token, approvals={"call_0": True})


def test_approvals_without_a_paused_runs_token_are_refused() -> None:
    with pytest.raises(UserError, match="approvals= resumes a paused run"):
        ChatAgent(FakeChatClient("x"), tools=[lookup]).run("hi", approvals={"call_0": True})


def test_paused_runs_must_be_a_store() -> None:
    with pytest.raises(UserError, match="paused_runs must be a paused-run store"):
        ChatAgent(FakeChatClient("x"), paused_runs="runs.db")  # type: ignore[arg-type]


async def test_a_store_that_cannot_write_is_a_typed_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The database's own message is logged, not raised."""
    paused_runs = SQLitePausedRuns(tmp_path)  # a directory: SQLite cannot open it as a file
    with pytest.raises(PausedRunStoreError, match=r"could not save the run \(OperationalError\)$"):
        await ChatAgent(FakeChatClient(ASKS), tools=[transfer, lookup], paused_runs=paused_runs).run("x")
    assert "unable to open database file" in caplog.text


def pause_in_a_process_then_kill_it(kind: str, where: str) -> str:
    process = subprocess.Popen([sys.executable, str(SCRIPT), kind, where], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        token = process.stdout.readline().strip()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    return token


async def resume_here(kind: str, where: str, token: str) -> None:
    resumed = await agent(['{"sent": 5}'], store(kind, where)).run(
        continuation_token=token, approvals={"call_0": True}, output_type=Receipt
    )
    assert resumed.value == Receipt(sent=5)
    assert [(r.name, r.result) for r in resumed.secondary.tool_runs] == [
        ("lookup", "acct-1 belongs to Ada"),
        ("transfer", "sent 5 to acct-1"),
    ]
    with pytest.raises(UserError, match="already used"):
        await agent([], store(kind, where)).run(
            continuation_token=token, approvals={"call_0": True}, output_type=Receipt
        )
    with pytest.raises(UserError, match="names no paused run of tenant 'globex'"):
        await agent([], store(kind, where, "globex")).run(continuation_token=token, output_type=Receipt)


async def test_a_run_paused_on_sqlite_resumes_in_another_process_after_a_sigkill(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    await resume_here("sqlite", path, pause_in_a_process_then_kill_it("sqlite", path))


async def test_a_run_paused_on_postgres_resumes_in_another_process_after_a_sigkill(postgres_url: str) -> None:
    await resume_here("postgres", postgres_url, pause_in_a_process_then_kill_it("postgres", postgres_url))


async def test_every_waiting_call_needs_a_decision() -> None:
    two = Reply(
        tool_calls=[("transfer", '{"account": "a", "amount": 1}'), ("transfer", '{"account": "b", "amount": 2}')]
    )
    fake = FakeChatClient([two, "Done."])
    agent = ChatAgent(fake, tools=[transfer])
    token = (await agent.run("Pay a and b")).continuation_token
    with pytest.raises(UserError, match="approvals has no decision for 'call_1': decide every waiting call"):
        await agent.run(continuation_token=token, approvals={"call_0": True})
    resumed = await agent.run(continuation_token=token, approvals={"call_0": True, "call_1": "not b"})
    assert [(r.result, r.error) for r in resumed.secondary.tool_runs] == [
        ("sent 1 to a", None),
        (None, "The user declined this call: not b"),
    ]


async def test_a_run_that_asks_again_pauses_again_with_a_new_token() -> None:
    again = Reply(tool_calls=[("transfer", '{"account": "acct-1", "amount": 3}')])
    agent = ChatAgent(FakeChatClient([*ASKS, again, "Done."]), tools=[transfer, lookup])
    first = await agent.run("Send 5")
    second = await agent.run(continuation_token=first.continuation_token, approvals={"call_0": "too much"})
    assert [r.arguments for r in second.approval_requests] == [{"account": "acct-1", "amount": 3}]
    assert second.continuation_token not in (None, first.continuation_token)
    done = await agent.run(continuation_token=second.continuation_token, approvals={"call_0": True})
    assert done.text == "Done." and [r.name for r in done.secondary.tool_runs] == ["lookup", "transfer", "transfer"]


async def test_the_store_keeps_a_hash_of_the_token_not_the_token(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    token = (await agent(ASKS, SQLitePausedRuns(path)).run("x", output_type=Receipt)).continuation_token
    assert token is not None
    secret = token.response_id.removeprefix("paused_")
    assert len(base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4))) == 24  # 192 random bits
    with sqlite3.connect(path) as conn:
        (key,) = conn.execute("SELECT key FROM so_middleware_paused_runs").fetchone()
    assert key == hashlib.sha256(token.response_id.encode()).hexdigest()
    assert secret not in path.read_bytes().decode("latin-1")


@STREAM
async def test_a_typed_run_pauses_and_resumes_to_its_typed_value(stream: bool) -> None:
    paused_runs = MemoryPausedRuns(tenant="acme")
    paused = await run(agent(ASKS, paused_runs), stream, "Send 5", output_type=Receipt)
    assert [r.name for r in paused.approval_requests] == ["transfer"]
    resumed = await run(
        agent(['{"sent": 5}'], paused_runs),
        stream,
        continuation_token=paused.continuation_token,
        approvals={"call_0": True},
        output_type=Receipt,
    )
    assert resumed.value == Receipt(sent=5)


def test_run_sync_pauses_and_resumes_with_approvals() -> None:
    """The blocking entry point takes the same `approvals=` as `run`."""
    fake = FakeChatClient([*ASKS, "Done."])
    agent = ChatAgent(fake, tools=[transfer, lookup])
    paused = agent.run_sync("Send 5 to acct-1")
    assert [request.call_id for request in paused.approval_requests] == ["call_0"]
    resumed = agent.run_sync(continuation_token=paused.continuation_token, approvals={"call_0": "no"})
    assert resumed.text == "Done."
    assert results_sent(fake)[-1].result_text == "The user declined this call: no"
