"""The engine of one structured-output run: plan → call → judge → finish, fall back or re-ask.

Two loops, one decision: `Run.steps` streams each call's updates, `Run.respond` makes plain calls
(no generator in between), and both ask `Run._next` what follows a response. Everything that
depends on the strategy is asked of the strategy object (`strategies/`); the loop only decides what
comes next from a named verdict. Per-run state lives on the `Run` made for the call.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ...core import (
    RETRIES_KEY,
    STRUCTURED_OUTPUT_KEY,
    Attempt,
    Capabilities,
    ChatClient,
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    ContentFilterError,
    FinishReason,
    ModelBehaviorError,
    OutputError,
    ProviderResponseError,
    RefusalError,
    TextContent,
    UsageDetails,
    UserError,
    mend_surrogates,
)
from ..retries import CallRetries
from ..strategies import Answer, AttemptRequest, Strategy, Target, strategies_for
from ._annotate import keep_attempts
from ._call import Call
from ._feature import StructuredOutput, without
from ._learned import Learned, Lesson, route_of
from ._resample import repeated, repeated_error, resampled
from ._verdicts import (
    Ignored,
    Invalid,
    Looped,
    Stopped,
    Valid,
    Verdict,
    brief,
    calls_callers_tools,
    cut_off,
    outcome_of,
    used_up,
)

__all__ = ["StructuredRun"]


class StructuredRun:
    """The state of one structured-output run: its strategies, its attempts, its final response."""

    def __init__(
        self,
        inner: ChatClient,
        feature: StructuredOutput[Any],
        messages: list[ChatMessage],
        options: ChatOptions,
        learned: Learned | None = None,
        strategies: Sequence[Strategy] | None = None,
        retries: CallRetries | None = None,
        features: Sequence[Any] | None = None,
    ) -> None:
        self.inner = inner
        self.available = strategies  # the client's list (None: the default one)
        self.feature = feature
        self.messages = messages
        self.retries = retries  # a retry layer's above: each model call is retried with them, not the run
        # the calls carry the other features on, not the run's own, not the retries it applies
        self.options = without(options, feature, retries, features=features)
        self.key = (route_of(inner), options.model or getattr(inner, "model", None))
        self._memory = learned
        self._use(getattr(inner, "capabilities", None))
        self.index = 0  # the strategy in use
        self.reasks = 0
        self.resampled = False  # the loop-breaking fields were sent (`_resample`)
        self.attempts: list[Attempt] = []
        self.retried: list[dict[str, Any]] = []  # what a retry layer below retried, over every call
        self.final: ChatResponse[Any] | None = None

    def _use(self, capabilities: object) -> None:
        """The strategies for this backend's profile, less those learned to be ignored."""
        profile = capabilities if isinstance(capabilities, Capabilities) else Capabilities()
        per_model = getattr(self.inner, "capabilities_for", None)  # a call's own model may take less
        if self.options.model and callable(per_model):
            narrowed = per_model(self.options.model, profile)
            profile = narrowed if isinstance(narrowed, Capabilities) else profile
        feature = self.feature
        self.target = Target(feature.output_schema, profile, feature.description, feature.text_type)
        every = strategies_for(feature.mode, self.target, plain_text=feature.is_plain_text(), strategies=self.available)
        self.learned = self._memory if len(every) > 1 else None  # only `auto` has anything to learn
        lesson = self.learned.get(self.key, run=True) if self.learned else Lesson()
        self.strategies: list[Strategy] = [s for s in every if s.name not in lesson.ignored] or every[-1:]

    async def _discover(self) -> None:
        """Identify the backend first, as the adapter has yet to (`discover_capabilities`); asked
        only then, to make no coroutine on a call to a known backend."""
        self._use(await self.inner.discover_capabilities())  # type: ignore[attr-defined]

    # ---------------------------------------------------------------- the loop

    async def steps(self) -> AsyncIterator[ChatResponseUpdate[Any]]:
        """The streamed run: call, judge, then finish, fall back or re-ask; yields each call's updates."""
        if getattr(self.inner, "discovery_pending", False):
            await self._discover()
        plan: AttemptRequest | None = self._plan(self.messages)
        while plan is not None:
            call = Call(self.inner, plan, len(self.attempts), self.target, self.retries)
            try:
                async with contextlib.aclosing(call.updates()) as updates:  # closing the run closes the call
                    async for update in updates:
                        yield update
            except Exception as error:
                self._record_broken(plan, call.received, error)
                keep_attempts(error, self.attempts)
                raise
            plan = self._next(plan, call.response)

    async def respond(self) -> ChatResponse[Any]:
        """The non-streaming run: the same steps as `steps()`, made with plain calls."""
        if getattr(self.inner, "discovery_pending", False):
            await self._discover()
        plan: AttemptRequest | None = self._plan(self.messages)
        while plan is not None:
            try:
                if self.retries is None:
                    response = await self.inner.get_response(plan.messages, options=plan.options)
                else:  # this HTTP call is retried, not the run
                    call = functools.partial(self.inner.get_response, plan.messages, options=plan.options)
                    response = await self.retries.respond(call)
            except Exception as error:
                self._record_broken(plan, [], error)
                keep_attempts(error, self.attempts)
                raise
            plan = self._next(plan, response)
        return await self.final_response(())

    def _next(self, plan: AttemptRequest, response: ChatResponse[Any]) -> AttemptRequest | None:
        """After a call: None when the run is done (`final` set), else the next attempt's plan;
        raises the run's error when it fails."""
        if response.finish_reason == FinishReason.LONG_RUNNING:  # judged once the run completes
            self.final = response
            return None
        if calls_callers_tools(response, plan):  # not the answer yet: the caller runs those tools and asks again
            self.final = response
            return None
        verdict = self._judge(plan, response)
        self._record(plan, response, verdict)
        if isinstance(verdict, Valid):
            self._finish(plan, response, verdict)
            return None
        if self.options.starts_background_run or self.options.continuation_token is not None:
            raise self._fail(verdict, response, plan)  # another call would start a second background job
        if isinstance(verdict, Ignored):
            self.index += 1
            return self._plan(self.messages)
        if isinstance(verdict, Looped) and self._resample():  # the same request, sampled otherwise
            self.reasks += 1
            return self._plan(self.messages)
        if isinstance(verdict, Invalid) and self.reasks < self.feature.max_retries:
            if repeated(self.attempts) and not self._resample():
                raise self._fail(Stopped(verdict.answer, repeated_error(verdict.error, 2)), response, plan)
            self.reasks += 1
            return self._plan(mend_surrogates(plan.strategy.reask(plan, verdict.answer, verdict.error)))
        raise self._fail(verdict, response, plan)

    def _resample(self) -> bool:
        """Send the profile's loop-breaking fields from now on: once, and only with a re-ask left."""
        fields = self.target.capabilities.loop_breaking
        changed = resampled(self.options, fields) if self.reasks < self.feature.max_retries else None
        if self.resampled or changed is None:
            return False
        self.options, self.resampled = changed, True
        return True

    async def final_response(self, updates: Sequence[ChatResponseUpdate[Any]]) -> ChatResponse[Any]:
        if self.final is None:
            raise UserError("the structured-output stream ended without a final response")
        return self.final

    # ---------------------------------------------------------------- the steps

    def _plan(self, messages: list[ChatMessage]) -> AttemptRequest:
        return self.strategies[self.index].plan(self.target, messages, self.options)

    def _judge(self, plan: AttemptRequest, response: ChatResponse[Any]) -> Verdict:
        strategy = plan.strategy
        answer = strategy.answer(plan, response)
        if response.refusal or response.finish_reason == FinishReason.REFUSAL:
            reason = brief(response.refusal or "(no reason given)")
            return Stopped(answer, RefusalError(f"the model refused: {reason}", refusal=response.refusal or ""))
        if response.finish_reason == FinishReason.CONTENT_FILTER:
            return Stopped(answer, ContentFilterError("the answer was withheld by the provider's content filter"))
        # A cut-off answer is never evidence that the strategy was ignored: a server may withhold
        # its start (llama-server's "```json"), or report it `completed` with every token used.
        verdict = None if response.finish_reason == FinishReason.LENGTH else self._validate(strategy, answer)
        limit = plan.options.max_tokens or self.target.capabilities.default_max_tokens
        if verdict is None or (isinstance(verdict, Invalid) and used_up(limit, response.usage)):
            return cut_off(
                strategy, self.target, answer, self.target.capabilities.loop_breaking if self.resampled else ()
            )
        ignored = self.index + 1 < len(self.strategies) and strategy.ignored(plan, answer)
        if isinstance(verdict, Invalid) and ignored:
            return Ignored(answer, verdict.error)
        return verdict

    def _validate(self, strategy: Strategy, answer: Answer) -> Valid | Invalid:
        try:
            return Valid(answer, strategy.validate(self.target, answer))
        except ModelBehaviorError as error:
            return Invalid(answer, error)

    def _record(self, plan: AttemptRequest, response: ChatResponse[Any], verdict: Verdict) -> None:
        error = None if isinstance(verdict, Valid) else verdict.error
        usage, finish = response.usage, response.finish_reason
        name = plan.strategy.name
        self.attempts.append(Attempt(len(self.attempts), verdict.answer.text, error, usage, name, finish, plan.strict))
        self.retried.extend(response.additional_properties.get(RETRIES_KEY) or [])  # a retry layer below
        if self.learned is not None and isinstance(verdict, Ignored):
            self.learned.ignored(
                self.key, name, f"{brief(verdict.answer.text, 80)!r}: {brief(str(verdict.error), 200)}"
            )
        if self.learned is not None and isinstance(verdict, Valid):
            self.learned.worked(self.key, name)

    def _record_broken(self, plan: AttemptRequest, received: list[ChatResponseUpdate[Any]], error: Exception) -> None:
        """A call that failed after the server answered is an attempt too: the text and usage a
        stream received so far (the usage the error kept when it has some: a failure event reports
        it, no update does), or the unusable answer a `ProviderResponseError` kept."""
        kept = error.attempts[-1] if isinstance(error, ProviderResponseError) and error.attempts else None
        if received:
            response = ChatResponse.from_updates(received)
            usage = kept.usage if kept is not None and kept.usage is not None else response.usage
            text, finish = plan.strategy.answer(plan, response).text, response.finish_reason
        elif kept is not None:
            text, usage, finish = kept.text, kept.usage, None
        else:
            return
        self.attempts.append(Attempt(len(self.attempts), text, error, usage, plan.strategy.name, finish, plan.strict))

    def _usage(self) -> UsageDetails | None:
        return UsageDetails.total(a.usage for a in self.attempts)

    def _info(self, plan: AttemptRequest, outcome: str) -> dict[str, Any]:
        return {
            "name": self.target.schema.name(),
            "strategy": plan.strategy.name,
            "strict": plan.strict,
            "attempts": len(self.attempts),
            "outcome": outcome,
        }

    def _finish(self, plan: AttemptRequest, response: ChatResponse[Any], verdict: Valid) -> None:
        finish = response.finish_reason
        self.final = self.feature.response = ChatResponse(
            ChatMessage("assistant", [TextContent(verdict.answer.text)], raw_representation=response.messages),
            usage=self._usage(),
            finish_reason=FinishReason.STOP if finish == FinishReason.TOOL_CALLS else finish,
            response_id=response.response_id,
            model_id=response.model_id,
            raw_representation=response.raw_representation,
            additional_properties={
                **response.additional_properties,
                **({RETRIES_KEY: self.retried} if self.retried else {}),
                STRUCTURED_OUTPUT_KEY: self._info(plan, "valid"),
            },
            attempts=self.attempts,
            value=verdict.value,
        )
        self.final.share_format(plan.options.response_format)  # a plan's format shares the cached schema

    def _fail(
        self, verdict: Invalid | Ignored | Looped | Stopped, response: ChatResponse[Any], plan: AttemptRequest
    ) -> OutputError:
        error: OutputError = verdict.error
        error.with_attempts(self.attempts, self._usage())
        error.response = error.response if error.response is not None else response
        response.additional_properties[STRUCTURED_OUTPUT_KEY] = self._info(plan, outcome_of(error))
        response.attempts = list(self.attempts)
        return error
