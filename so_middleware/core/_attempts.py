"""`Attempt`: the record of one model call made for a structured-output run."""

from __future__ import annotations

from dataclasses import dataclass

from ._usage import FinishReason, UsageDetails

__all__ = ["Attempt"]


@dataclass(frozen=True)
class Attempt:
    """One model call made for a structured-output run (secondary output).

    `text` is the raw text the model produced, `error` why it was rejected (None when accepted),
    `strategy` how the type was asked for (`native`, `tool`, `json_object`, `prompted`).
    """

    index: int
    text: str
    error: BaseException | None = None
    usage: UsageDetails | None = None
    strategy: str | None = None
    finish_reason: FinishReason | None = None
