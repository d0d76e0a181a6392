"""`typing.TypedDict` on Python < 3.12: pydantic refuses it there, so it is rebuilt, fields and all,
as the `typing_extensions.TypedDict` pydantic asks for. A value is a plain dict either way.

Found at the top of an output type, in a TypedDict's fields and in generic arguments (`list[TD]`,
`TD | None`, `Annotated[TD, ...]`). A self-referencing TypedDict, or one inside a model or
dataclass field, is left as it is: pydantic's error then says what to use instead.
"""

from __future__ import annotations

import sys
import types
import typing
from typing import Any

import typing_extensions

__all__ = ["pydantic_ready"]

_REQUIRED = (typing_extensions.Required, typing_extensions.NotRequired)  # typing's own on 3.11


class _Probe(typing.TypedDict):
    pass


_TYPING_META = type(_Probe)  # typing's TypedDict metaclass (typing_extensions has its own below 3.12)


def pydantic_ready(tp: Any) -> Any:
    """`tp` with every `typing.TypedDict` it holds rebuilt as a `typing_extensions.TypedDict`;
    `tp` itself when there is none (or on Python 3.12 and later, where pydantic takes both)."""
    if sys.version_info >= (3, 12):
        return tp
    return _rebuilt(tp, set())


def _rebuilt(tp: Any, seen: set[int]) -> Any:
    if type(tp) is _TYPING_META and id(tp) not in seen:
        return _typed_dict(tp, seen | {id(tp)})
    alias: Any = tp  # a parameterised type (no TypedDict: pyright narrows `tp` by the test above)
    origin, args = typing.get_origin(alias), typing.get_args(alias)
    if origin is None or not args or origin is typing.Literal:
        return tp
    if origin is typing.Annotated:
        first = _rebuilt(args[0], seen)
        annotated: Any = typing.Annotated  # subscripted with a computed tuple
        items = (first, *alias.__metadata__)
        return tp if first is args[0] else annotated[items]
    new = tuple(_rebuilt(arg, seen) for arg in args)
    if all(a is b for a, b in zip(new, args, strict=True)):
        return tp
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[new]  # noqa: UP007 - a union of computed members
    if isinstance(tp, types.GenericAlias):
        return types.GenericAlias(origin, new)
    return alias.copy_with(new)


def _typed_dict(tp: Any, seen: set[int]) -> Any:
    hints = typing.get_type_hints(tp, include_extras=True)
    fields: dict[str, Any] = {}
    for name, hint in hints.items():
        # A `Required[...]`/`NotRequired[...]` written as a string annotation (`from __future__ import
        # annotations`) is missed by 3.11's `__required_keys__`: the resolved hint says it.
        wrapper = typing_extensions.Required if name in tp.__required_keys__ else typing_extensions.NotRequired
        if typing.get_origin(hint) in _REQUIRED:
            wrapper, hint = typing.get_origin(hint), typing.get_args(hint)[0]
        fields[name] = wrapper[_rebuilt(hint, seen)]
    make: Any = typing_extensions.TypedDict  # called with a computed name: mypy takes only literals
    rebuilt: Any = make(tp.__name__, fields)
    rebuilt.__doc__, rebuilt.__module__, rebuilt.__qualname__ = tp.__doc__, tp.__module__, tp.__qualname__
    return rebuilt
