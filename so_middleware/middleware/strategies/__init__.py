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

The list belongs to a client: `with_structured_output(client)` takes `DEFAULT_STRATEGIES`,
`with_structured_output(client, strategies=...)` its own list, fixed when the layer is made. A new
strategy (a grammar or regex constraint, say) is one file with a `Strategy` subclass, put in a
client's list with `with_strategy(DEFAULT_STRATEGIES, Grammar(), before="tool")`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

from ...core import UserError
from ._base import Answer, AttemptRequest, Strategy, Target
from .json_object import JsonObject
from .native import Native
from .prompted import Prompted
from .text import Text
from .tool import Tool

__all__ = [
    "DEFAULT_STRATEGIES",
    "MODES",
    "TEXT",
    "Answer",
    "JsonObject",
    "Mode",
    "Native",
    "AttemptRequest",
    "Prompted",
    "Strategy",
    "Target",
    "Tool",
    "check_strategies",
    "mode_names",
    "strategies_for",
    "with_strategy",
]

Mode = Literal["auto", "native", "tool", "json_object", "prompted"]
MODES: tuple[Mode, ...] = get_args(Mode)

# The order `mode="auto"` tries them in; the last one works everywhere.
DEFAULT_STRATEGIES: tuple[Strategy, ...] = (Native(), Tool(), JsonObject(), Prompted())
TEXT = Text()


def check_strategies(strategies: Sequence[Strategy]) -> tuple[Strategy, ...]:
    """`strategies` as a tuple, refused with `UserError` unless each is a `Strategy` with its own
    name (not `auto` or `text`) and the list is not empty."""
    listed = tuple(strategies) if not isinstance(strategies, (str, Strategy)) else ()
    if not listed:
        raise UserError(f"strategies must be a non-empty list of Strategy objects, got {strategies!r}")
    for strategy in listed:
        if not isinstance(strategy, Strategy):
            raise UserError(f"strategies must be Strategy objects, got {type(strategy).__name__}")
        if not strategy.name or strategy.name in ("auto", TEXT.name):
            raise UserError(f"a strategy needs a name other than 'auto' and 'text', got {strategy.name!r}")
    names = [s.name for s in listed]
    if len(set(names)) != len(names):
        raise UserError(f"strategy names must be unique, got {names}")
    return listed


def with_strategy(
    strategies: Sequence[Strategy], strategy: Strategy, *, before: str = "prompted"
) -> tuple[Strategy, ...]:
    """A new list: `strategies` with `strategy` (replacing one of the same name) before `before`;
    `mode=strategy.name` then asks for it, and `auto` tries it there. `strategies` is not changed.

    Example: `with_structured_output(client, strategies=with_strategy(DEFAULT_STRATEGIES, Grammar(), before="tool"))`.
    """
    check_strategies([strategy])
    if before not in [s.name for s in strategies]:
        raise UserError(f"unknown strategy {before!r}; expected one of {', '.join(s.name for s in strategies)}")
    others = [s for s in strategies if s.name != strategy.name]
    at = [s.name for s in others].index(before)
    return check_strategies([*others[:at], strategy, *others[at:]])


def mode_names(strategies: Sequence[Strategy] | None = None) -> tuple[str, ...]:
    """Every mode a run may ask for: `auto` and each strategy of the list (the default one if none)."""
    return ("auto", *(s.name for s in (DEFAULT_STRATEGIES if strategies is None else strategies)))


def strategies_for(
    mode: str, target: Target, *, plain_text: bool = False, strategies: Sequence[Strategy] | None = None
) -> list[Strategy]:
    """The strategies of a run, in order, from the client's list (the default one if none): the
    one asked for, or every one `auto` may try.

    A mode not in the list, or a forced mode the profile says cannot work, is refused here,
    before any call, naming the profile and the reason.
    """
    available = DEFAULT_STRATEGIES if strategies is None else tuple(strategies)
    if plain_text:
        return [TEXT]
    if mode != "auto":
        named = {s.name: s for s in available}
        if mode not in named:
            raise UserError(f"unknown mode {mode!r}; expected one of {', '.join(mode_names(available))}")
        strategy = named[mode]
        reason = strategy.unavailable(target)
        if reason is not None:
            raise UserError(
                f"mode={mode!r} cannot work with the capability profile {target.capabilities.name!r}: {reason}. "
                "Use mode='auto', or pass capabilities=... to the adapter if the backend does support it."
            )
        return [strategy]
    return [s for s in available if s.in_auto(target.capabilities) and s.unavailable(target) is None]
