"""Typed partial values from a stream of JSON chunks, in linear total time.

The incremental parser reports events; this module keeps two trees side by side: the raw JSON
values (used to validate a subtree the moment it closes, once) and the value shown to the caller
(pydantic models built with `model_construct` while open, validated values once closed). Both
are updated in place, so a chunk costs time proportional to its own length; only reading
`value` joins the string currently being streamed.
"""

from __future__ import annotations

import codecs
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ._errors import json_error, validation_error
from ._plan import EnvelopePlan, PartialPlan, SequencePlan
from ._tokenizer import IncrementalJsonParser, JsonSyntaxError

__all__ = ["CompletedItem", "PartialParser", "TextPartialParser"]

Path = tuple[str | int, ...]
_COPIED = 512  # an open string shorter than this is copied as it grows (see `_grown_string`)


@dataclass(frozen=True)
class CompletedItem:
    """A list item that closed while streaming, validated as the list's item type.

    `path` locates the item in the value: `(2,)` is item 2 of a root `list[T]`, `("people", 0)`
    item 0 of the `people` list of a model. `list_path` says which list it belongs to.

    Example:
        for item in parser.pop_completed_items():
            if item.list_path == ("people",):
                handle(item.value)  # a validated Person
    """

    path: Path
    value: Any

    @property
    def list_path(self) -> Path:
        """The path of the list holding this item (`()` for a root list)."""
        return self.path[:-1]


class _Frame:
    __slots__ = ("collect", "display", "in_item", "is_object", "key", "path", "plan", "raw", "slot")

    def __init__(self, is_object: bool, raw: Any, display: Any, plan: PartialPlan | None, slot: Any) -> None:
        self.is_object = is_object
        self.raw = raw
        self.display = display
        self.plan = plan
        self.slot = slot  # this container's key or index in its parent
        self.key: str | None = None
        self.collect = False  # a typed list whose items pop as they close
        self.in_item = False  # inside an item of such a list (its own lists do not pop)
        self.path: Path = ()


def _put(container: Any, key: Any, value: Any) -> None:
    if isinstance(container, list):
        if key < len(container):
            container[key] = value
        else:
            container.append(value)
    else:
        container[key] = value


class PartialParser:
    """Feed JSON chunks; read the value so far; pop list items as they complete.

    Items pop from a root list (`list[Item]`) and from the lists inside a model, a dict or a
    dataclass (`People(people: list[Person])`), but not from lists inside an item that pops: a
    `Person`'s own `addresses` come with the `Person`.

    Example:
        parser = OutputSchema(list[Item]).partial_parser()
        for chunk in stream:
            if parser.feed(chunk):
                show(parser.value)
            for item in parser.pop_completed():
                handle(item)  # a validated Item
        result = parser.finish()  # list[Item], fully validated
    """

    def __init__(
        self,
        plan: PartialPlan,
        finish: Callable[[str], Any],
        *,
        what: str,
        lenient: bool = False,
        allow_non_finite: bool = False,
    ) -> None:
        self._plan = plan
        self._allow_non_finite = allow_non_finite
        self._finish = finish
        self._what = what
        self._lenient = lenient
        self._wrapped = isinstance(plan, EnvelopePlan)
        self._unwrapped_root = False
        self._parser = IncrementalJsonParser(self, skip_prefix=lenient, allow_trailing=lenient)
        self._decoder: codecs.IncrementalDecoder | None = None  # made for the first bytes chunk: most streams are str
        self._chunks: list[str] = []
        self._stack: list[_Frame] = []
        self._root: _Frame | None = None
        self._root_value: Any = None
        self._has_root_value = False
        self._string_parts: list[str] | None = None  # the open string's pieces not shown yet
        self._string_text = ""  # the open string as shown so far
        self._string_slot: tuple[_Frame | None, Any] = (None, None)
        self._string_dirty = False
        self._completed: list[CompletedItem] = []
        self._popped = 0
        self._changed = False
        self._broken: str | None = None

    @property
    def text(self) -> str:
        """All text fed so far."""
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    @property
    def completed_items(self) -> list[Any]:
        """Every list item that has closed so far, each validated as the item type."""
        return [item.value for item in self._completed]

    def pop_completed(self) -> list[Any]:
        """The items completed since the last call (of this or `pop_completed_items`)."""
        if self._popped == len(self._completed):  # most chunks close no item: asked after every one
            return []
        return [item.value for item in self.pop_completed_items()]

    def pop_completed_items(self) -> list[CompletedItem]:
        """The items completed since the last call, each with the path saying which list."""
        fresh = self._completed[self._popped :]
        self._popped = len(self._completed)
        return fresh

    def feed(self, chunk: str | bytes) -> bool:
        """Consume a chunk; return True if the partial value changed.

        Raises `ModelBehaviorError` when the text can no longer be valid JSON (except in lenient
        mode, where `finish()` decides) or a completed list item does not validate.
        """
        if isinstance(chunk, bytes | bytearray):
            try:
                self._decoder = self._decoder or codecs.getincrementaldecoder("utf-8")("strict")
                chunk = self._decoder.decode(bytes(chunk))
            except UnicodeDecodeError as exc:
                raise json_error(f"invalid UTF-8 ({exc.reason})", self.text, self._what) from None
        self._chunks.append(chunk)
        if self._broken is not None:
            return False
        self._changed = False
        try:
            self._parser.feed(chunk)
        except JsonSyntaxError as exc:
            if not self._lenient:
                raise json_error(f"Invalid JSON: {exc}", self.text, self._what) from None
            self._broken = str(exc)
        return self._changed

    @property
    def value(self) -> Any:
        """The value so far: typed where complete, partial where open; None before any value."""
        if self._string_dirty:  # read after every chunk: no call when no string grew
            self._flush_string()
        if self._has_root_value:
            value = self._root_value
        elif self._root is not None:
            value = self._root.display
        else:
            return None
        if self._wrapped and not self._unwrapped_root:
            return value.get("response") if isinstance(value, dict) else None
        return value

    def finish(self) -> Any:
        """Validate the whole text; return the final value or raise `ModelBehaviorError`."""
        return self._finish(self.text)

    # Sink events, called by the incremental parser.

    def _child(self) -> tuple[_Frame | None, PartialPlan | None, Any]:
        if not self._stack:
            return None, self._plan, None
        parent = self._stack[-1]
        slot = parent.key if parent.is_object else len(parent.raw)
        plan = parent.plan.child(parent.key if parent.is_object else None) if parent.plan is not None else None
        return parent, plan, slot

    def open_container(self, is_object: bool) -> None:
        parent, plan, slot = self._child()
        if parent is None and self._wrapped and not is_object and self._lenient:
            assert isinstance(self._plan, EnvelopePlan)
            plan = self._plan.inner
            self._unwrapped_root = True
        raw: Any = {} if is_object else []
        display = plan.new_display(is_object, raw) if plan is not None else raw
        frame = _Frame(is_object, raw, display, plan, slot)
        if parent is not None:
            envelope = parent is self._root and isinstance(parent.plan, EnvelopePlan)
            frame.path = parent.path if envelope else (*parent.path, slot)
            frame.in_item = parent.in_item or parent.collect
        frame.collect = (
            not is_object
            and isinstance(plan, SequencePlan)
            and not frame.in_item
            and (parent is not None or self._unwrapped_root)
        )
        if parent is None:
            self._root = frame
        else:
            self._show(parent, slot, display, raw)
        self._stack.append(frame)
        self._changed = True

    def key(self, key: str) -> None:
        self._stack[-1].key = key

    def string(self, text: str) -> None:
        self._complete(text)

    def string_start(self) -> None:
        parent, _, slot = self._child()
        self._string_parts = []
        self._string_text = ""
        self._string_slot = (parent, slot)
        self._string_dirty = True
        self._changed = True

    def string_chunk(self, text: str) -> None:
        assert self._string_parts is not None
        self._string_parts.append(text)
        self._string_dirty = True
        self._changed = True

    def string_end(self) -> None:
        self._string_dirty = False
        self._complete(self._grown_string())
        self._string_parts = None

    def scalar(self, value: Any) -> None:
        if isinstance(value, float) and not math.isfinite(value) and not self._allow_non_finite:
            # 1e999: the tokenizer reads it as a float, but JSON has no infinite numbers.
            raise JsonSyntaxError("a number too large for a float", len(self.text))
        self._complete(value)

    def close_container(self) -> None:
        frame = self._stack.pop()
        self._attach(self._stack[-1] if self._stack else None, frame.slot, frame.raw, frame.plan, frame.display)

    # Internals.

    def _complete(self, raw: Any) -> None:
        stack = self._stack
        if stack and stack[-1].is_object:  # a property's value, most of all: `_attach`'s steps for it, in one call
            frame = stack[-1]
            key, plan = frame.key, frame.plan
            child = plan.child(key) if plan is not None else None
            typed = child.typed(raw, raw) if child is not None else raw
            self._changed = True
            frame.raw[key] = raw
            if plan is not None and frame.display is not frame.raw:
                plan.show(frame.display, key, typed)
            return
        parent, plan, slot = self._child()
        self._attach(parent, slot, raw, plan, raw)

    def _attach(self, parent: _Frame | None, slot: Any, raw: Any, plan: PartialPlan | None, fallback: Any) -> None:
        """Record a closed value: validated once here, then placed in both trees."""
        self._changed = True
        if parent is not None and parent.collect:
            typed = self._item(raw, plan, (*parent.path, slot))
        else:
            typed = plan.typed(raw, fallback) if plan is not None else raw
        if parent is None:
            self._root_value = typed
            self._has_root_value = True
            return
        _put(parent.raw, slot, raw)
        self._show(parent, slot, typed, raw)

    def _item(self, raw: Any, plan: PartialPlan | None, path: Path) -> Any:
        """A list item: it must validate on its own, as list[T] validates each T alone."""
        typed = raw
        if plan is not None:
            try:
                typed = plan.validate_or_raise(raw)
            except ValidationError as exc:
                where = ".".join(str(part) for part in path[:-1])
                what = f"item {path[-1]} of {where + ' in ' if where else ''}{self._what}"
                raise validation_error(exc, self.text, what) from None
            except (RecursionError, TypeError, ValueError) as exc:
                raise json_error(f"unusable item ({type(exc).__name__})", self.text, self._what) from None
        self._completed.append(CompletedItem(path, typed))
        return typed

    def _show(self, parent: _Frame, slot: Any, display: Any, raw: Any) -> None:
        if parent.display is parent.raw:
            _put(parent.raw, slot, raw)
        elif parent.plan is not None:
            parent.plan.show(parent.display, slot, display)

    def _flush_string(self) -> None:
        if self._string_parts is None or not self._string_dirty:
            return
        self._string_dirty = False
        text = self._string_text = self._grown_string()
        parent, slot = self._string_slot
        if parent is None:
            self._root_value = text
            self._has_root_value = True
        else:
            self._show(parent, slot, text, text)

    def _grown_string(self) -> str:
        """The open string with its pending pieces appended. Past `_COPIED` characters the value's
        own references to the string are dropped first: a `str` that nothing else holds grows in
        place (CPython's `+=` on a local), so reading the value after every piece costs O(piece),
        not O(length); a shorter one is copied, which costs less than dropping them. A caller who
        keeps an earlier string keeps it unchanged: then the append copies."""
        pending = "".join(self._string_parts or ())
        self._string_parts = []
        text, self._string_text = self._string_text, ""
        if len(text) >= _COPIED:
            parent, slot = self._string_slot
            if parent is None:
                self._root_value = None
            else:
                self._show(parent, slot, "", "")
        text += pending
        return text


class TextPartialParser:
    """The partial parser of a plain-text output: the value is the text so far.

    Example:
        parser = OutputSchema(str).partial_parser()
        parser.feed("Hel"); parser.feed("lo")
        parser.value  # "Hello"
    """

    def __init__(self) -> None:
        self._chunks: list[str] = []
        self._decoder: codecs.IncrementalDecoder | None = None  # made for the first bytes chunk

    @property
    def text(self) -> str:
        """All text fed so far."""
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    @property
    def value(self) -> str:
        """The text so far."""
        return self.text

    @property
    def completed_items(self) -> list[Any]:
        """Always empty: plain text has no items."""
        return []

    def pop_completed(self) -> list[Any]:
        """Always empty: plain text has no items."""
        return []

    def pop_completed_items(self) -> list[CompletedItem]:
        """Always empty: plain text has no items."""
        return []

    def feed(self, chunk: str | bytes) -> bool:
        """Append a chunk; True when it added text."""
        if isinstance(chunk, bytes | bytearray):
            self._decoder = self._decoder or codecs.getincrementaldecoder("utf-8")("replace")
            chunk = self._decoder.decode(bytes(chunk))
        self._chunks.append(chunk)
        return bool(chunk)

    def finish(self) -> str:
        """The whole text."""
        return self.text
