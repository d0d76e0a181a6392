"""A re-ask that would only repeat itself is sampled otherwise, once, or not made.

An answer cut off in a loop, or a re-ask's answer equal word for word to the one before, shows
the request as sampled cannot do better. The backend's profile names the request fields that
break loops on its engine and route (`Capabilities.loop_breaking`: `frequency_penalty` where the
route has it, `temperature` on llama-server's Messages route, which drops every penalty); a run
sends them, from then on, for one more attempt. Without them, or
once they were sent, such an answer ends the run with its typed error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core import Attempt, ChatOptions, IncompleteOutputError, ModelBehaviorError
from ...schema import BOUND_IT, Loop

__all__ = ["loop_error", "repeated", "repeated_error", "resampled"]


def resampled(options: ChatOptions, fields: Sequence[tuple[str, Any]]) -> ChatOptions | None:
    """`options` with the loop-breaking `fields` in `extra_body` (the caller's own fields win), or
    None when there are none to add."""
    body = dict(options.extra_body or {})
    added = {name: value for name, value in fields if name not in body}
    return options.replace(extra_body={**body, **added}) if added else None


def repeated(attempts: Sequence[Attempt]) -> bool:
    """The last attempt's answer is the previous one's, word for word, from the same strategy."""
    if len(attempts) < 2:
        return False
    last, before = attempts[-1], attempts[-2]
    return last.strategy == before.strategy and last.text.strip() == before.text.strip()


def repeated_error(error: ModelBehaviorError, count: int) -> ModelBehaviorError:
    """The error ending a run whose re-ask repeated the answer before it."""
    return ModelBehaviorError(
        f"the model gave the same answer {count} times in a row, so another re-ask would too: {error}",
        raw_text=error.raw_text,
        errors=error.errors,
    )


def loop_error(loop: Loop, sent: Sequence[tuple[str, Any]] | None, growing: str | None = None) -> IncompleteOutputError:
    """The error of an answer cut off in `loop`; `sent`: the loop-breaking fields it was asked with;
    `growing`: the list it kept growing, if it was one ("the list 'tags' was still growing at 57 items")."""
    again = f" even when sampled with {dict(sent)}" if sent else ""
    bound = f"; {growing}: {BOUND_IT}" if growing else ""
    return IncompleteOutputError(f"the answer looped{again}: {loop.describe()} until the token limit cut it off{bound}")
