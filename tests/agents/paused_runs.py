"""A run that pauses for approval in a process of its own, for the restart tests: it prints the
paused run's token and waits to be killed (`python paused_runs.py sqlite PATH` or `postgres URL`)."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from pydantic import BaseModel

from so_middleware import ChatAgent, tool, with_structured_output
from so_middleware.agents import PostgresPausedRuns, SQLitePausedRuns
from so_middleware.testing import FakeChatClient, Reply

TENANT = "acme"
ASKING = [  # a lookup, then a transfer, which waits for approval
    Reply(tool_calls=[("lookup", '{"account": "acct-1"}')]),
    Reply(tool_calls=[("transfer", '{"account": "acct-1", "amount": 5}')]),
]


class Receipt(BaseModel):
    """The typed end of the run."""

    sent: int


@tool(requires_approval=True)
def transfer(account: str, amount: int) -> str:
    """Send money to an account."""
    return f"sent {amount} to {account}"


def lookup(account: str) -> str:
    """An account's owner."""
    return f"{account} belongs to Ada"


def store(kind: str, where: str, tenant: str = TENANT) -> Any:
    """The store both processes open."""
    return SQLitePausedRuns(where, tenant=tenant) if kind == "sqlite" else PostgresPausedRuns(where, tenant=tenant)


def agent(replies: list[Any], paused_runs: Any) -> ChatAgent:
    """The agent both processes build: the same tools, so the resumed run may go on."""
    return ChatAgent(with_structured_output(FakeChatClient(replies)), tools=[transfer, lookup], paused_runs=paused_runs)


async def pause(kind: str, where: str) -> None:
    response = await agent(ASKING, store(kind, where)).run("Send 5 to acct-1", output_type=Receipt)
    print(response.continuation_token, flush=True)


if __name__ == "__main__":
    asyncio.run(pause(sys.argv[1], sys.argv[2]))
    time.sleep(300)  # paused: the test kills this process here
