"""Plans: how the partial parser shows and validates each part of a typed value.

A plan mirrors the output type as far as the JSON layout is predictable: a pydantic model, a
dataclass or TypedDict (fixed keys), a sequence (list, set, variadic tuple) and a `dict[str, T]`.
Everything else is a leaf: shown raw while open, validated once it closes. Child plans are built
lazily, so recursive types cost nothing until the data actually nests.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import types
import typing
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

from ._typeinfo import cache_key

__all__ = ["MISSING", "EnvelopePlan", "PartialPlan", "SequencePlan", "plan_for"]

_SEQUENCES = (
    list,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Set,
    collections.abc.MutableSet,
)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
MISSING: Any = object()


class PartialPlan:
    """A leaf: open containers are shown as the raw JSON so far; closed values are validated."""

    def __init__(self, output_type: Any) -> None:
        self.output_type = output_type
        self._adapter: TypeAdapter[Any] | None = None

    def child(self, key: str | None) -> PartialPlan | None:
        """The plan for a property (`key`) or an item (`None`); None means "raw only"."""
        return None

    def new_display(self, is_object: bool, raw: Any) -> Any:
        """The object shown for this container while it is open."""
        return raw

    def show(self, display: Any, key: Any, value: Any) -> None:
        """Put a child's current value into the shown container."""
        if isinstance(display, list):
            if key == len(display):
                display.append(value)
            else:
                display[key] = value
        else:
            display[key] = value

    def validate_or_raise(self, raw: Any) -> Any:
        """The typed value of a closed subtree; raises pydantic's `ValidationError`."""
        if self._adapter is None:
            self._adapter = TypeAdapter(self.output_type)
        return self._adapter.validate_python(raw)

    def validate(self, raw: Any) -> Any:
        """The typed value of a closed subtree, or `MISSING` if it does not validate alone."""
        try:
            return self.validate_or_raise(raw)
        except (ValidationError, RecursionError, TypeError, ValueError):
            return MISSING

    def typed(self, raw: Any, fallback: Any) -> Any:
        """`validate(raw)`, or `fallback` when it does not validate on its own."""
        value = self.validate(raw)
        return fallback if value is MISSING else value


class _RawPlan(PartialPlan):
    """No type information (raw JSON-schema outputs): never validates during streaming."""

    def validate_or_raise(self, raw: Any) -> Any:
        return raw


class _ScalarPlan(PartialPlan):
    """`str`, `int`, `float` or `bool`: a JSON value of that very type is its own typed value
    (what pydantic would return), read without a validator call on every value that closes."""

    def validate_or_raise(self, raw: Any) -> Any:
        if type(raw) is self.output_type:
            return raw
        return super().validate_or_raise(raw)

    def typed(self, raw: Any, fallback: Any) -> Any:
        if type(raw) is self.output_type:  # every closing value of a typed field: one call, not three
            return raw
        return super().typed(raw, fallback)


_SCALARS = (str, int, float, bool)


class EnvelopePlan(PartialPlan):
    """The `{"response": ...}` wrapper: shows a dict, validates nothing itself."""

    def __init__(self, inner: PartialPlan) -> None:
        super().__init__(None)
        self.inner = inner

    def child(self, key: str | None) -> PartialPlan | None:
        return self.inner if key == "response" else None

    def new_display(self, is_object: bool, raw: Any) -> Any:
        return {} if is_object else raw

    def validate(self, raw: Any) -> Any:
        return MISSING


class SequencePlan(PartialPlan):
    def __init__(self, output_type: Any, item_type: Any) -> None:
        super().__init__(output_type)
        self.item_type = item_type
        self._item: PartialPlan | None = None

    def child(self, key: str | None) -> PartialPlan | None:
        if key is not None:
            return None
        if self._item is None:
            self._item = plan_for(self.item_type)
        return self._item

    def new_display(self, is_object: bool, raw: Any) -> Any:
        return [] if not is_object else raw


class _MappingPlan(PartialPlan):
    def __init__(self, output_type: Any, value_type: Any) -> None:
        super().__init__(output_type)
        self.value_type = value_type
        self._value: PartialPlan | None = None

    def child(self, key: str | None) -> PartialPlan | None:
        if key is None:
            return None
        if self._value is None:
            self._value = plan_for(self.value_type)
        return self._value

    def new_display(self, is_object: bool, raw: Any) -> Any:
        return {} if is_object else raw


class _RecordPlan(PartialPlan):
    """Fixed keys: pydantic models, dataclasses and TypedDicts."""

    def __init__(self, output_type: Any, shape: type, fields: dict[str, tuple[str, Any]]) -> None:
        super().__init__(output_type)
        self.shape = shape
        self.fields = fields  # JSON key -> (attribute name, annotation)
        self._is_model = isinstance(shape, type) and issubclass(shape, BaseModel)
        self._children: dict[str, PartialPlan] = {}

    def child(self, key: str | None) -> PartialPlan | None:
        if key is None or key not in self.fields:
            return None
        if key not in self._children:
            self._children[key] = plan_for(self.fields[key][1])
        return self._children[key]

    def new_display(self, is_object: bool, raw: Any) -> Any:
        if not is_object:
            return raw
        cls: Any = self.shape
        try:
            if self._is_model:
                # model_construct skips validation, which an incomplete object would fail.
                instance: Any = cls.model_construct()
                values = {name: instance.__dict__.get(name) for name in cls.model_fields}
                instance.__dict__.clear()
                instance.__dict__.update(values)
                return instance
            if dataclasses.is_dataclass(cls) and isinstance(cls, type):
                instance = object.__new__(cls)
                for name in {name for name, _ in self.fields.values()}:
                    object.__setattr__(instance, name, None)
                return instance
        except Exception:
            return {}
        return {}

    def show(self, display: Any, key: Any, value: Any) -> None:
        if type(display) is self.shape and self._is_model:  # the model made by `new_display`: most calls
            field = self.fields.get(key)
            if field is not None:
                model: Any = display  # a model (`type(display) is self.shape` narrows it to `object`)
                vars(model)[field[0]] = value
                model.__pydantic_fields_set__.add(field[0])
            return
        if isinstance(display, dict):
            display[key] = value
            return
        name = self.fields.get(key, (None, None))[0]
        if name is None:
            return
        if isinstance(display, BaseModel):
            vars(display)[name] = value
            display.__pydantic_fields_set__.add(name)
        else:
            object.__setattr__(display, name, value)


def _strip_optional(output_type: Any) -> Any:
    """`X | None` → `X` (the shape while open is X's); anything else unchanged."""
    origin = typing.get_origin(output_type)
    if origin is typing.Annotated:
        return _strip_optional(typing.get_args(output_type)[0])
    if origin is typing.Union or origin is types.UnionType:
        members = [arg for arg in typing.get_args(output_type) if arg is not type(None)]
        if len(members) == 1:
            return _strip_optional(members[0])
    return output_type


def _record_fields(cls: Any) -> dict[str, tuple[str, Any]] | None:
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        fields: dict[str, tuple[str, Any]] = {}
        for name, info in cls.model_fields.items():
            annotation: Any = info.annotation
            if info.metadata:
                params = (annotation, *info.metadata)
                annotation = typing.Annotated[params]
            alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
            fields[alias or name] = (name, annotation)
            fields.setdefault(name, (name, annotation))
        return fields
    pydantic_fields = getattr(cls, "__pydantic_fields__", None)
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:
        return None
    if dataclasses.is_dataclass(cls):
        result = {}
        for item in dataclasses.fields(cls):
            alias = getattr((pydantic_fields or {}).get(item.name), "alias", None) or item.name
            result[alias] = (item.name, hints.get(item.name, Any))
        return result
    return {name: (name, hint) for name, hint in hints.items()}


_PLANS: dict[Any, PartialPlan] = {}
_MAX_PLANS = 512


def plan_for(output_type: Any) -> PartialPlan:
    """The (cached) plan for a type; a raw-schema dict gets a plan that never validates."""
    if isinstance(output_type, dict):
        return _RawPlan(output_type)
    key = cache_key(output_type)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _build(output_type)
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.pop(next(iter(_PLANS)))
        _PLANS[key] = plan
    return plan


def _build(output_type: Any) -> PartialPlan:
    if any(output_type is kind for kind in _SCALARS):  # by identity: a type form may define ==
        return _ScalarPlan(output_type)
    shape = _strip_optional(output_type)
    origin = typing.get_origin(shape)
    args = typing.get_args(shape)
    if isinstance(shape, type) and (
        (issubclass(shape, BaseModel) and "root" not in shape.model_fields)
        or dataclasses.is_dataclass(shape)
        or is_typeddict(shape)
    ):
        fields = _record_fields(shape)
        if fields is not None:
            return _RecordPlan(output_type, shape, fields)
    if origin in _SEQUENCES and len(args) == 1:
        return SequencePlan(output_type, args[0])
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return SequencePlan(output_type, args[0])
    if origin in _MAPPINGS and len(args) == 2:
        return _MappingPlan(output_type, args[1])
    return PartialPlan(output_type)
