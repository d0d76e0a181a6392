"""One model call of a structured-output run, on either path."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from ..core import ChatClient, ChatResponse, ChatResponseUpdate
from ._partial import PartialReader
from .strategies import Plan, Target

__all__ = ["Call"]


class Call:
    """One model call of a run: its updates when streaming, then its response."""

    def __init__(self, inner: ChatClient, plan: Plan, attempt: int, target: Target) -> None:
        self.inner, self.plan, self.attempt, self.target = inner, plan, attempt, target
        self.response: ChatResponse[Any] = ChatResponse()

    async def updates(self, stream: bool) -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        plan = self.plan
        if not stream:
            self.response = await self.inner.get_response(plan.messages, options=plan.options)
            return
        reader = PartialReader(self.target.schema, plan, self.attempt)
        inner = self.inner.get_response(plan.messages, options=plan.options, stream=True)
        async with inner:
            async for update in inner:
                delta = plan.strategy.delta(plan, update)
                if delta or update.usage or update.finish_reason or reader.prefill_pending:
                    yield reader.update(delta, update)
            self.response = await inner.get_final_response()
