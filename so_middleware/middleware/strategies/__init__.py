"""How a type reaches a model: one object per strategy, one file each.

| strategy      | the request                                                          | the answer                |
|---------------|----------------------------------------------------------------------|---------------------------|
| `native`      | `response_format` json_schema (strict where the profile has it)      | the text, strictly        |
| `tool`        | one function tool with the schema as parameters, forced when allowed | the call's arguments      |
| `json_object` | JSON mode plus the answer's shape in the instructions                | the text, leniently       |
| `prompted`    | the answer's shape in the instructions, and a JSON prefill if allowed | prefill + text, leniently |
| `text`        | the caller's request (plain-text types)                              | the text                  |

`mode="auto"` tries them in that order, keeping those the capability profile allows and the
type fits; a later one is used when an answer shows the backend ignored the constraint.
A new strategy (a grammar or regex constraint, say) is one file with a `Strategy` subclass,
added with `register(...)`.
"""

from __future__ import annotations

from typing import Literal

from ...core import UserError
from ._base import Answer, Plan, Strategy, Target
from .json_object import JsonObject
from .native import Native
from .prompted import Prompted
from .text import Text
from .tool import Tool

__all__ = [
    "MODES",
    "STRATEGIES",
    "TEXT",
    "Answer",
    "Mode",
    "Plan",
    "Strategy",
    "Target",
    "mode_names",
    "register",
    "strategies_for",
]

Mode = Literal["auto", "native", "tool", "json_object", "prompted"]
MODES: tuple[Mode, ...] = ("auto", "native", "tool", "json_object", "prompted")

# The order `mode="auto"` tries them in; the last one works everywhere.
STRATEGIES: dict[str, Strategy] = {s.name: s for s in (Native(), Tool(), JsonObject(), Prompted())}
TEXT = Text()


def register(strategy: Strategy, *, before: str = "prompted") -> None:
    """Add a strategy: `mode=strategy.name` then asks for it, and `auto` tries it before `before`.

    Example: `register(Grammar(), before="tool")` for a `Grammar(Strategy)` in its own file.
    """
    if not strategy.name or strategy.name in ("auto", TEXT.name):
        raise UserError(f"a strategy needs a name other than 'auto' and 'text', got {strategy.name!r}")
    if before not in STRATEGIES:
        raise UserError(f"unknown strategy {before!r}; expected one of {', '.join(STRATEGIES)}")
    others = [s for s in STRATEGIES.values() if s.name != strategy.name]
    at = [s.name for s in others].index(before)
    ordered = [*others[:at], strategy, *others[at:]]
    STRATEGIES.clear()
    STRATEGIES.update((s.name, s) for s in ordered)


def mode_names() -> tuple[str, ...]:
    """Every mode a run may ask for: `auto` and each registered strategy."""
    return ("auto", *STRATEGIES)


def strategies_for(mode: str, target: Target, *, plain_text: bool = False) -> list[Strategy]:
    """The strategies of a run, in order: the one asked for, or every one `auto` may try.

    A forced mode the profile says cannot work is refused here, before any call, naming the
    profile and the reason.
    """
    if plain_text:
        return [TEXT]
    if mode != "auto":
        strategy = STRATEGIES[mode]
        reason = strategy.unavailable(target)
        if reason is not None:
            raise UserError(
                f"mode={mode!r} cannot work with the capability profile {target.capabilities.name!r}: {reason}. "
                "Use mode='auto', or pass capabilities=... to the adapter if the backend does support it."
            )
        return [strategy]
    return [s for s in STRATEGIES.values() if s.in_auto(target.capabilities) and s.unavailable(target) is None]
