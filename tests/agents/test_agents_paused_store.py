"""The paused-run stores: what they keep is strict JSON that reads back the same, and a token is
taken once even by two resumes at the same time."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest
from paused_runs import ASKING, Receipt, agent, store

from so_middleware import (
    ApprovalRequest,
    ChatMessage,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ToolActivity,
    UserError,
)
from so_middleware.agents import PausedRunStoreError
from so_middleware.agents._paused import PausedRun

pytestmark = pytest.mark.anyio


def paused_run(arguments: dict[str, object]) -> PausedRun:
    inner = ToolActivity("today", "call_9", "{}", "the 28th", None, 0.5, 1)
    return PausedRun(
        messages=[
            ChatMessage("user", [DataContent(b"\x00\xffpng", "image/png", name="a.png")]),
            ChatMessage("assistant", [FunctionCallContent("call_0", "transfer", '{"amount": 5}')]),
            ChatMessage("tool", [FunctionResultContent("call_1", "ok", is_error=True, name="lookup")]),
        ],
        new=[ChatMessage("user", "Send 5")],
        requests=[ApprovalRequest("call_0", "transfer", arguments)],
        tools={"transfer": "abc"},
        output_type="Receipt",
        options={"temperature": 0.0, "stop": ["\n"]},
        activities=[ToolActivity("calendar", "call_1", "{}", "ok", None, 1.0, 1, (inner,))],
    )


def test_a_paused_run_reads_back_as_it_was_written() -> None:
    written = paused_run({"amount": 5})
    assert PausedRun.from_json(written.to_json()) == written


def test_a_value_json_cannot_hold_is_refused_naming_it() -> None:
    with pytest.raises(PausedRunStoreError, match="must be JSON to be kept"):
        paused_run({"amount": math.nan}).to_json()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_two_resumes_at_once_take_the_token_once(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = str(tmp_path / "runs.db") if kind == "sqlite" else request.getfixturevalue("postgres_url")
    token = (await agent(ASKING, store(kind, where)).run("Send 5", output_type=Receipt)).continuation_token

    async def resume() -> Receipt:
        answer = agent(['{"sent": 5}'], store(kind, where))
        response = await answer.run(continuation_token=token, approvals={"call_0": True}, output_type=Receipt)
        return response.value

    outcomes = await asyncio.gather(resume(), resume(), return_exceptions=True)
    assert sorted(type(o).__name__ for o in outcomes) == ["Receipt", "UserError"]
    assert all("already used" in str(o) for o in outcomes if isinstance(o, UserError))
