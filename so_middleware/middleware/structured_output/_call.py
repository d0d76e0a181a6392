"""One streamed model call of a structured-output run; retried alone under a retry layer.

On a backend prone to loops, a stream whose answer loops with too few tokens left to close it
(`_loops.LoopWatch`) is closed there and then: the rest would be waited for and thrown away. Its
response is what arrived, marked cut off (`length`); its usage is unknown.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable
from typing import Any

from ...core import ChatClient, ChatResponse, ChatResponseUpdate, FinishReason, TextContent, streams_fresh_updates
from ...schema import LoopWatch
from ...schema.text import text_format_of
from ..retries import CallRetries
from ..strategies import AttemptRequest, Strategy, Target
from ._partial import PartialReader

__all__ = ["Call"]


class Call:
    """One streamed model call of a run: its updates, then its response."""

    def __init__(
        self, inner: ChatClient, plan: AttemptRequest, attempt: int, target: Target, retries: CallRetries | None = None
    ) -> None:
        self.inner, self.plan, self.attempt, self.target = inner, plan, attempt, target
        self.retries = retries  # a retry layer's, above: this HTTP call is retried, not the run
        self.response: ChatResponse[Any] = ChatResponse()
        self._stream: Any = None

    @property
    def received(self) -> list[ChatResponseUpdate[Any]]:
        """The updates the server sent so far ([] before the first)."""
        return list(getattr(self._stream, "updates", None) or [])

    async def updates(self) -> AsyncGenerator[ChatResponseUpdate[Any], None]:
        """The call's updates, streamed; then its response is `response`."""
        plan = self.plan
        call: Callable[..., Any] = functools.partial(self.inner.get_response, plan.messages, options=plan.options)
        reader = PartialReader(
            self.target.schema, plan, self.attempt, text_so_far=text_format_of(self.target.text_type) is not None
        )
        caps = self.target.capabilities  # only a backend prone to loops is watched: no call per update elsewhere
        budget = plan.options.max_tokens or caps.default_max_tokens
        watch = LoopWatch(budget, plan.prefill) if caps.prone_to_loops else None
        text_delta = type(plan.strategy).delta is Strategy.delta  # the answer is the text
        own = self.retries is None and streams_fresh_updates(self.inner)  # its updates are filled in, not copied
        inner = self._stream = self.retries.stream(call) if self.retries else call(stream=True)
        async with inner:  # leaving it closes the stream, a looping one too
            async for update in inner:
                one = update.contents[0] if len(update.contents) == 1 else None  # most updates: one text piece
                delta = one.text if text_delta and type(one) is TextContent else plan.strategy.delta(plan, update)
                if delta or update.usage or update.finish_reason or reader.prefill_pending:
                    yield reader.update(delta, update, own)
                if watch is not None and watch.add(delta) is not None:
                    self.response = ChatResponse.from_updates(self.received)
                    self.response.finish_reason = FinishReason.LENGTH
                    return
            self.response = await inner.get_final_response()
