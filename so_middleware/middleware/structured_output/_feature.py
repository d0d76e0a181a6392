"""`StructuredOutput`: the feature object that asks a run for a typed answer."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from typing import Any, Generic, TypeVar, overload

from typing_extensions import Unpack

from ...core import ChatOptions, ChatResponse, Feature, UserError
from ...schema import OutputSchema, shared_schema
from ..retries import CallRetries
from ..strategies import Mode
from ._settings import OutputSettings, SettingsKeywords

__all__ = ["OutputSettings", "SettingsKeywords", "StructuredOutput", "feature_for", "retries_in", "without"]

T = TypeVar("T")


class StructuredOutput(Feature, Generic[T]):
    """Ask for a typed answer: a feature for `options={"features": [StructuredOutput(Person)]}`.

    `output_type` is any type `OutputSchema` takes (a pydantic model, a dataclass, `list[int]`,
    an `Enum`, a union, `str`, ...); `schema` a raw JSON-schema dict for types known only at run
    time. The keywords `name`, `description`, `strict`, `mode` and `max_retries` are the fields of
    `OutputSettings` (see there), kept on `.settings`; a strict=True the type cannot honour is a
    `UserError` here. A type that cannot be used raises `UserError`
    here, before any call. After the run, `feature.response` holds the response, so a caller
    that only handed the feature down still gets its answer. A class as `output_type` types it:
    `StructuredOutput(Person).response` is a `ChatResponse[Person] | None`; other type forms and
    `schema=` give `StructuredOutput[Any]`.

    Example:
        feature = StructuredOutput(list[int], max_retries=1)
        await agent.run("three primes", options={"features": [feature]})
        feature.response.value  # [2, 3, 5]
    """

    handled_by = "with_structured_output"

    @overload
    def __init__(self, output_type: type[T], *, schema: None = None, **settings: Unpack[SettingsKeywords]) -> None: ...

    @overload
    def __init__(
        self: StructuredOutput[Any],
        output_type: Any = None,
        *,
        schema: dict[str, Any] | None = None,
        **settings: Unpack[SettingsKeywords],
    ) -> None: ...

    def __init__(
        self, output_type: Any = None, *, schema: dict[str, Any] | None = None, **settings: Unpack[SettingsKeywords]
    ) -> None:
        if (output_type is None) == (schema is None):
            raise UserError("StructuredOutput needs exactly one of output_type=... or schema={...}")
        self.settings = OutputSettings(**settings)
        self.output_type = output_type if schema is None else schema
        self.text_type = self.output_type if _is_text_type(self.output_type) else None
        target = str if self.text_type is not None else self.output_type
        self.output_schema = _schema_of(target, self.settings.strict, self.settings.name)
        self.response: ChatResponse[T] | None = None

    @property
    def name(self) -> str | None:
        """The answer's name on the wire (`settings.name`)."""
        return self.settings.name

    @property
    def description(self) -> str | None:
        """What the answer is, for the model (`settings.description`)."""
        return self.settings.description

    @property
    def strict(self) -> bool | None:
        """Strict schema: `None` automatic, `True` demanded, `False` never (`settings.strict`)."""
        return self.settings.strict

    @property
    def mode(self) -> Mode:
        """The strategy asked for, or `auto` (`settings.mode`)."""
        return self.settings.mode

    @property
    def max_retries(self) -> int:
        """Re-asks after an invalid answer (`settings.max_retries`)."""
        return self.settings.max_retries

    def is_plain_text(self) -> bool:
        """True for `str`, `None` and `Annotated[str, ...]`: the answer is the text."""
        return self.text_type is not None or self.output_schema.is_plain_text()

    def copy_for_run(self) -> StructuredOutput[T]:
        """A fresh feature with the same settings (the creation-time default is never written to)."""
        clone: StructuredOutput[T] = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.response = None
        return clone

    def __repr__(self) -> str:
        return f"StructuredOutput({self.output_schema.name()}, mode={self.mode!r}, max_retries={self.max_retries})"


def _is_text_type(output_type: Any) -> bool:
    if typing.get_origin(output_type) is typing.Annotated:
        return typing.get_args(output_type)[0] is str
    return output_type is str


def _schema_of(output_type: Any, strict: bool | None, name: str | None) -> OutputSchema:
    """The strict schema when asked for or when the type allows it (strict=None); else the plain
    one. Shared by the features of one type: a feature is often made anew for every call."""
    if strict is not None:
        return shared_schema(output_type, strict=strict, name=name)
    try:
        return shared_schema(output_type, strict=True, name=name)
    except UserError:
        return shared_schema(output_type, strict=False, name=name)


def feature_for(
    features: Sequence[Any], output_type: Any, settings: OutputSettings, default: StructuredOutput[Any] | None
) -> StructuredOutput[Any] | None:
    """The run's feature: among the call's `features`, made from `output_type` with `settings`, or the
    layer's creation-time `default`; None when the call asks for no structured output."""
    given = [f for f in features if isinstance(f, StructuredOutput)]
    if len(given) > 1:
        raise UserError("more than one StructuredOutput feature in the options; pass one")
    if given and output_type is not None:
        raise UserError("pass either output_type=... or a StructuredOutput feature, not both")
    if given:
        return given[0]
    if output_type is not None:
        return StructuredOutput(output_type, **dataclasses.asdict(settings))
    return default.copy_for_run() if default is not None else None


def retries_in(features: Sequence[Any]) -> CallRetries | None:
    """The `CallRetries` a retry layer above handed down (each model call is retried with them)."""
    return next((feature for feature in reversed(features) if isinstance(feature, CallRetries)), None)


def without(options: ChatOptions, *dropped: object, features: Sequence[Any] | None = None) -> ChatOptions:
    """`options` without the `dropped` features (the same object when none is there); `features`:
    `options.features`, when the caller has read them already."""
    dropped_ids = {id(feature) for feature in dropped}  # identity: a feature's == may compare its settings
    features = options.features if features is None else features
    if not any(id(feature) in dropped_ids for feature in features):
        return options
    return options.with_features([feature for feature in features if id(feature) not in dropped_ids])
