"""Run options, tools and features.

`ChatOptions` is what every `get_response` call takes, as a plain dict or as the object:

    options = {"model": "gpt-4o", "temperature": 0, "features": [StructuredOutput(Person)]}

`features` is the same thing as `additional_properties["features"]`: a list of feature objects
that layers look up by type (`find_feature`). A layer that does not know a feature passes it on
untouched, and the very same object arrives below, so a feature can carry a result back up.
Provider adapters send no `additional_properties` to the SDK; provider-specific request fields go
through `extra_body`, merged into the request body as given.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ._continuation import ContinuationToken
from ._exceptions import UserError
from ._formats import ResponseFormat

__all__ = ["ChatOptions", "ForcedTool", "FunctionTool", "OptionsInput", "ToolChoice", "find_feature"]

F = TypeVar("F")

FEATURES_KEY = "features"


@dataclass(frozen=True)
class FunctionTool:
    """A function the model may call: name, description and a JSON schema for its arguments."""

    name: str
    parameters: Mapping[str, Any]
    description: str | None = None
    strict: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise UserError(f"FunctionTool name must be a non-empty str, not {_shown(self.name)}")
        if not isinstance(self.parameters, Mapping):
            raise UserError(
                f"FunctionTool {self.name!r}: parameters must be a JSON schema dict, not {_shown(self.parameters)}"
            )
        if self.description is not None and not isinstance(self.description, str):
            raise UserError(f"FunctionTool {self.name!r}: description must be a str, not {_shown(self.description)}")
        if self.strict is not None and not isinstance(self.strict, bool):
            raise UserError(f"FunctionTool {self.name!r}: strict must be a bool, not {_shown(self.strict)}")


@dataclass(frozen=True)
class ForcedTool:
    """A `tool_choice` that forces a call to the named tool."""

    name: str


ToolChoice = Literal["auto", "none", "required"] | ForcedTool
_TOOL_CHOICE_MODES = ("auto", "none", "required")


@dataclass(frozen=True)
class ChatOptions:
    """Options of one model call. Build from a dict with `ChatOptions.coerce(...)`.

    Unknown keys and values of the wrong type (`temperature="hot"`, `max_tokens=-5`, `stop=5`)
    raise `UserError` naming the option: put provider-specific request fields in `extra_body`.
    `idle_timeout` (seconds) bounds a stream's wait for its first and each later event; unset,
    the adapter's default applies.
    `sdk_max_retries` sets the SDK client's own retries for this call only (a retry layer sends 0).
    `tools` hold `FunctionTool`s or provider-shaped dicts (passed on as given); `response_format`
    a `ResponseFormat` or a wire dict (Chat Completions or Responses spelling).
    `background=True` asks for a long-running run (adapters that have them: the Responses API);
    `continuation_token` picks one up again (usually given as `get_response(continuation_token=...)`);
    with a token, `background` is ignored: a continuation never starts a run.
    """

    model: str | None = None
    instructions: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: Sequence[str] | None = None
    seed: int | None = None
    tools: Sequence[FunctionTool | Mapping[str, Any]] | None = None
    tool_choice: ToolChoice | None = None
    response_format: ResponseFormat | None = None
    additional_properties: Mapping[str, Any] = field(default_factory=dict)
    extra_body: Mapping[str, Any] | None = None
    sdk_max_retries: int | None = None  # the SDK's own retries for this call (None: the SDK client's setting)
    idle_timeout: float | None = None
    background: bool | None = None
    continuation_token: ContinuationToken | None = None

    def __post_init__(self) -> None:
        _check(self.__dict__)

    @classmethod
    def coerce(cls, options: OptionsInput) -> ChatOptions:
        """Return `options` as a `ChatOptions` (a new object when given a dict; never mutated)."""
        if options is None:
            return cls()
        if isinstance(options, ChatOptions):
            return options
        if type(options) is not dict and not isinstance(options, Mapping):  # a dict: no ABC check
            raise UserError(f"options must be a dict or a ChatOptions, not {type(options).__name__}")
        known = _FIELDS
        values: dict[str, Any] = {}
        for key, value in options.items():
            if key == FEATURES_KEY:
                continue
            if key not in known:
                raise UserError(_unknown_option(key))
            values[key] = value
        given_props = values.pop("additional_properties", None)
        if given_props is not None and not isinstance(given_props, Mapping):
            raise UserError(f"option 'additional_properties' must be a dict, not {_shown(given_props)}")
        props = dict(given_props or {})
        if FEATURES_KEY in options:
            props[FEATURES_KEY] = _feature_list(options[FEATURES_KEY]) + _feature_list(props.get(FEATURES_KEY))
        values["additional_properties"] = props
        if "response_format" in values:
            values["response_format"] = _response_format(values["response_format"])
        if "tool_choice" in values:
            values["tool_choice"] = _tool_choice(values["tool_choice"])
        if isinstance(values.get("continuation_token"), str):
            values["continuation_token"] = ContinuationToken.parse(values["continuation_token"])
        if "stop" in values and isinstance(values["stop"], str):
            values["stop"] = [values["stop"]]
        return cls(**values)

    @property
    def starts_background_run(self) -> bool:
        """True for a call that starts a background run: `background=True` (or the same field in
        `extra_body`) and no continuation token."""
        asked = self.background or (self.extra_body or {}).get("background") is True
        return bool(asked) and self.continuation_token is None

    @property
    def features(self) -> tuple[Any, ...]:
        """The feature objects of this run, in order."""
        found = self.additional_properties.get(FEATURES_KEY)
        return tuple(found) if type(found) is list else tuple(_feature_list(found))  # read on every layer

    def replace(self, **changes: Any) -> ChatOptions:
        """A copy with some fields changed (the features are the same objects); only the changed
        fields are checked again."""
        unknown = changes.keys() - _FIELDS
        if unknown:
            raise TypeError(f"ChatOptions has no field {sorted(unknown)[0]!r}")
        if "response_format" in changes:
            changes["response_format"] = _response_format(changes["response_format"])
        for name, value in changes.items():  # only the changed fields' checks, no call of its own
            if value is not None and name in _CHECK_OF:
                _check(changes, _CHECK_OF[name])
        copied = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied.__dict__.update(changes)
        return copied

    def with_features(self, features: Sequence[Any]) -> ChatOptions:
        """A copy whose feature list is `features`."""
        props = dict(self.additional_properties)
        if features:
            props[FEATURES_KEY] = list(features)
        else:
            props.pop(FEATURES_KEY, None)
        return self.replace(additional_properties=props)

    def merged_over(self, defaults: ChatOptions) -> ChatOptions:
        """These options with every unset field taken from `defaults` (features: run's first)."""
        values = {
            f.name: getattr(self, f.name) if getattr(self, f.name) is not None else getattr(defaults, f.name)
            for f in dataclasses.fields(self)
            if f.name != "additional_properties"
        }
        props = {**defaults.additional_properties, **self.additional_properties}
        features = list(self.features) + [f for f in defaults.features if f not in self.features]
        if features:
            props[FEATURES_KEY] = features
        return ChatOptions(**values, additional_properties=props)


OptionsInput = ChatOptions | Mapping[str, Any] | None
_FIELDS = frozenset(f.name for f in dataclasses.fields(ChatOptions))


# Names people reach for that are not options here: where the bound they mean is set instead.
_ELSEWHERE = {
    "timeout": "a request's timeout is the SDK client's (AsyncOpenAI(timeout=...)); a whole call's bound is "
    "with_retries(client, deadline=...); a stream's wait for each event is the option 'idle_timeout'",
    "max_retries": "retries of a call are with_retries(client, max_attempts=...); the SDK's own, the option "
    "'sdk_max_retries'",
}


def _unknown_option(key: object) -> str:
    """The message for an unknown option: the closest known name, or where that setting lives."""
    known = sorted(_FIELDS | {FEATURES_KEY})
    elsewhere = _ELSEWHERE.get(key) if isinstance(key, str) else None
    if elsewhere is not None:
        hint = f"{elsewhere}. "
    else:
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
        hint = f"did you mean {close[0]!r}? " if close else ""
    return (
        f"unknown option {key!r}; {hint}known options are {', '.join(known)}. "
        "Provider-specific request fields go in extra_body={...}"
    )


def find_feature(options: OptionsInput, kind: type[F]) -> F | None:
    """The first feature of type `kind` in the options (None when there is none).

    Matches by exact type walk (`isinstance`), so subclasses of `kind` are found too.
    """
    for feature in ChatOptions.coerce(options).features:
        if isinstance(feature, kind):
            return feature
    return None


def _feature_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    raise UserError(f"features must be a list of feature objects, not {type(value).__name__}")


def _response_format(value: Any) -> ResponseFormat | None:
    if isinstance(value, type):
        raise UserError(
            f"option 'response_format' got the class {value.__name__}: for a typed answer pass "
            f"output_type={value.__name__} (or a StructuredOutput({value.__name__}) feature)"
        )
    return ResponseFormat.from_wire(value)


def _is_number(value: Any, low: float = 0.0, high: float = math.inf) -> bool:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number and math.isfinite(value) and low <= value <= high


def _is_int(value: Any, low: int | None = None) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and (low is None or value >= low)


def _is_strings(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str) and all(isinstance(s, str) for s in value)


def _is_tools(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, (str, bytes))
        and all(isinstance(tool, (FunctionTool, Mapping)) for tool in value)
    )


def _shown(value: Any) -> str:
    return f"{value!r:.60} ({type(value).__name__})"


_CHECKS: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("model", lambda v: isinstance(v, str) and bool(v), "a non-empty str"),
    ("instructions", lambda v: isinstance(v, str), "a str"),
    ("temperature", _is_number, "a number >= 0"),
    ("max_tokens", lambda v: _is_int(v, 1), "an int >= 1"),
    ("top_p", lambda v: _is_number(v, 0.0, 1.0), "a number from 0 to 1"),
    ("stop", lambda v: _is_strings(v), "a str or a list of str"),
    ("seed", _is_int, "an int"),
    ("tools", _is_tools, "a list of FunctionTool objects or tool dicts"),
    ("additional_properties", lambda v: type(v) is dict or isinstance(v, Mapping), "a dict"),
    ("extra_body", lambda v: isinstance(v, Mapping), "a dict"),
    ("sdk_max_retries", lambda v: _is_int(v, 0), "an int >= 0"),
    ("idle_timeout", lambda v: _is_number(v) and v > 0, "a number of seconds > 0"),
    ("background", lambda v: isinstance(v, bool), "a bool"),
    ("continuation_token", lambda v: isinstance(v, ContinuationToken), "a ContinuationToken or its string"),
)


_CHECK_OF = {check[0]: (check,) for check in _CHECKS}  # a field's own check, for a `replace` of one field


def _check(values: Mapping[str, Any], checks: Sequence[tuple[str, Callable[[Any], bool], str]] = _CHECKS) -> None:
    """`UserError` naming the first of these option values that has the wrong type (`checks`: the
    ones that can apply, fewer for a `replace` of one field, made on every layer of every call)."""
    for name, check, expected in checks:
        value = values.get(name)
        if value is not None and not check(value):
            raise UserError(f"option {name!r} must be {expected}, not {_shown(value)}")


def _tool_choice(value: Any) -> ToolChoice | None:
    if value is None or isinstance(value, ForcedTool) or value in _TOOL_CHOICE_MODES:
        return value  # type: ignore[no-any-return]
    if isinstance(value, Mapping):  # {"type": "function", "function": {"name": ...}} or {"name": ...}
        name = value.get("name") or (value.get("function") or {}).get("name")
        if isinstance(name, str):
            return ForcedTool(name)
    raise UserError(f"tool_choice must be 'auto', 'none', 'required' or ForcedTool(name), not {value!r:.100}")
