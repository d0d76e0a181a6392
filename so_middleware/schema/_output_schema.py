"""`OutputSchema`: from "I want a `list[Invoice]`" to what a model is asked for, and back."""

from __future__ import annotations

import copy
import functools
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from ..core import ModelBehaviorError, SchemaProfile, UserError, copy_json
from ._checks import check_schema_values, drop_repeated_enum_values
from ._lenient import json_spans, lenient_validate
from ._partial import PartialParser, TextPartialParser
from ._plan import EnvelopePlan, PartialPlan, plan_for
from ._refs import anchors_to_pointers, check_references
from ._schema_tools import check_schema_size, flatten_root, is_object_schema, wrap_schema
from ._typeddict import pydantic_ready
from ._typeinfo import (
    cache_key,
    check_satisfiable,
    check_supported,
    is_plain_text_type,
    is_raw_schema,
    readable_name,
    sanitize_wire_name,
)
from ._validators import RawSchemaValidator, TypedValidator, Validator
from .dialects import DEFAULT_RECURSION_DEPTH, PROFILES, render_profile
from .prompts import says_more_than_its_grammar, schema_outline

__all__ = ["OutputSchema", "shared_schema"]

_MAX_CACHED = 256


@dataclass
class _Compiled:
    """Everything derived from one output type, shared by every `OutputSchema` of that type."""

    what: str
    wrapped: bool
    base_schema: dict[str, Any]
    validator: Validator
    plan: PartialPlan
    profiles: dict[tuple[str, bool, int], dict[str, Any]] = field(default_factory=dict)
    outline: tuple[str | None] | None = None  # (the outline, or None when it says nothing), once made
    # Identity cache keys are unique only while the type lives: the entry keeps it alive.
    keepalive: Any = None


_COMPILED: dict[Hashable, _Compiled] = {}


def _compile(output_type: Any) -> _Compiled:
    key = cache_key(output_type)
    compiled = _COMPILED.get(key)
    if compiled is not None:
        return compiled
    compiled = _compile_raw(output_type) if is_raw_schema(output_type) else _compile_type(output_type)
    if len(_COMPILED) >= _MAX_CACHED:
        _COMPILED.pop(next(iter(_COMPILED)))
    compiled.keepalive = output_type
    _COMPILED[key] = compiled
    return compiled


def _compile_type(output_type: Any) -> _Compiled:
    what = readable_name(output_type)
    output_type = pydantic_ready(output_type)  # typing.TypedDict on Python < 3.12
    check_supported(output_type)
    check_satisfiable(output_type)
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        inner = adapter.json_schema(mode="validation")
    except RecursionError:
        raise UserError(f"Cannot build a schema for {what}: the type nests too deeply.") from None
    except Exception as exc:
        reason = str(exc).split("\n\nFor further information", 1)[0]
        raise UserError(f"Cannot build a schema for output type {what}: {reason}") from None
    inner = _checked_root(inner, what)
    wrapped = not is_object_schema(inner)
    base = wrap_schema(inner) if wrapped else inner
    try:
        validator = TypedValidator(adapter, output_type, wrapped=wrapped, what=what)
    except Exception as exc:
        raise UserError(f"Cannot build a validator for output type {what}: {exc}") from None
    inner_plan = plan_for(output_type)
    plan: PartialPlan = EnvelopePlan(inner_plan) if wrapped else inner_plan
    return _Compiled(what=what, wrapped=wrapped, base_schema=base, validator=validator, plan=plan)


def _checked_root(schema: dict[str, Any], what: str) -> dict[str, Any]:
    """The schema checked (size, JSON values, `$ref`s) and its root flattened; `UserError` if unusable."""
    check_schema_size(schema, what)
    drop_repeated_enum_values(schema)
    check_schema_values(schema, what)
    anchors_to_pointers(schema)
    check_references(schema, what)
    return flatten_root(schema)


def _compile_raw(schema: dict[str, Any]) -> _Compiled:
    what = readable_name(schema)
    check_schema_size(schema, what)  # before deepcopy, which recurses
    inner = _checked_root(copy.deepcopy(schema), what)
    wrapped = not is_object_schema(inner)
    if not wrapped and "type" not in inner:
        inner = {"type": "object", **inner}
    base = wrap_schema(inner) if wrapped else inner
    validator = RawSchemaValidator(schema, wrapped=wrapped, what=what)
    inner_plan = plan_for(schema)
    plan: PartialPlan = EnvelopePlan(inner_plan) if wrapped else inner_plan
    return _Compiled(what=what, wrapped=wrapped, base_schema=base, validator=validator, plan=plan)


class OutputSchema:
    """The schema, validation and partial parsing of one structured-output type.

    Supports pydantic models (generic, recursive), dataclasses, TypedDicts, NamedTuples,
    primitives, containers, `Literal`, `Enum`, unions and `Annotated` constraints, plus a raw
    JSON-schema dict for types known only at run time (the value is then the parsed JSON).

    Roots that are not a JSON object (primitives, lists, tuples and NamedTuples, unions, enums)
    go on the wire as `{"response": <value>}` and are unwrapped on the way back. Objects
    (models, dataclasses, TypedDicts, `dict[str, T]`) are sent as they are. `str` (and `None`)
    mean plain text: no schema, and the text is the value.

    With `strict=True` (the default) the type must fit OpenAI's strict subset, else `UserError`
    at construction. With `strict=False`, `json_schema("openai-strict")` returns the strict form
    when the type allows it and the plain schema otherwise; send it with `strict: false`.

    Providers that refuse recursive schemas (Anthropic, Bedrock, Ollama, Gemini's OpenAPI form)
    get a recursive type unrolled `recursion_depth` levels (3 by default) below the root; the
    answer is still validated against the whole type.

    Example:
        schema = OutputSchema(list[int])
        schema.json_schema()["properties"]["response"]  # {"type": "array", "items": {...}}
        schema.validate_json('{"response": [1, 2]}')     # [1, 2]
        schema.dump_json([1, 2])                         # '{"response":[1,2]}'
    """

    def __init__(
        self,
        output_type: Any,
        *,
        strict: bool = True,
        name: str | None = None,
        recursion_depth: int = DEFAULT_RECURSION_DEPTH,
    ) -> None:
        if isinstance(recursion_depth, bool) or not isinstance(recursion_depth, int) or recursion_depth < 1:
            raise UserError(f"recursion_depth must be a whole number of at least 1, got {recursion_depth!r}.")
        self._output_type = output_type
        self._strict = strict
        self._name = name
        self._depth = recursion_depth
        self._plain = is_plain_text_type(output_type)
        self._compiled: _Compiled | None = None
        self._readable: str | None = None
        self._wire_name: str | None = None
        if not self._plain:
            self._compiled = _compile(output_type)
            # Strict or not, this surfaces every UserError the schema can raise, here and now.
            self.check_profile("openai-strict")

    @property
    def output_type(self) -> Any:
        """The type this schema was built for."""
        return self._output_type

    @property
    def is_wrapped(self) -> bool:
        """True when the value travels as `{"response": <value>}`."""
        return self._compiled is not None and self._compiled.wrapped

    def is_plain_text(self) -> bool:
        """True for `str` and `None`: the output is text, not JSON."""
        return self._plain

    def is_strict_json_schema(self) -> bool:
        """True when the schema is meant to be sent with `strict: true`."""
        return self._strict and not self._plain

    def name(self) -> str:
        """A readable name of the output type: `int`, `list[int]`, `dict[str, int]`, `Person`."""
        if self._readable is None:  # made once: the type is fixed, and a run asks for it on every call
            self._readable = readable_name(self._output_type)
        return self._readable

    def wire_name(self, profile: SchemaProfile = "openai-strict") -> str:
        """The schema name for the request, matching `^[a-zA-Z0-9_-]{1,64}$`.

        Every profile uses the same rule (OpenAI's `json_schema.name` and both providers' tool
        names). Example: `OutputSchema(list[int]).wire_name() == "list_int"`.
        """
        if profile not in PROFILES:
            raise UserError(f"Unknown schema profile {profile!r}; expected one of {', '.join(PROFILES)}.")
        if self._wire_name is None:
            self._wire_name = sanitize_wire_name(self._name or self.name())
        return self._wire_name

    def _require(self) -> _Compiled:
        if self._compiled is None:
            raise UserError("Output type is plain text, so no JSON schema is available.")
        return self._compiled

    def json_schema(self, profile: SchemaProfile = "openai-strict") -> dict[str, Any]:
        """The JSON schema in a provider's dialect (a fresh copy each call).

        Raises `UserError` for plain text, and when the type cannot be expressed in `profile`
        (naming the field path and the reason).
        """
        return copy_json(self._profile(profile))  # type: ignore[no-any-return]

    def json_schema_view(self, profile: SchemaProfile = "openai-strict") -> Mapping[str, Any]:
        """The schema `json_schema(profile)` copies, without the copy: shared by every call, so
        never to be changed (a request renders its own copy of it).

        Example: `OutputSchema(Person).json_schema_view() == OutputSchema(Person).json_schema()`.
        """
        return self._profile(profile)

    def outline(self) -> str | None:
        """The schema's outline for a model that cannot read the schema (`schema_outline` of the
        plain schema), or None when it would tell nothing the schema's grammar does not (a bare
        `list[int]`). Made once per type.

        Example: `OutputSchema(list[int]).outline()` is None.
        """
        compiled = self._require()
        if compiled.outline is None:
            plain = self.json_schema_view("json-schema")  # the plain schema keeps the titles and examples
            says = says_more_than_its_grammar(plain, wrapped=compiled.wrapped)
            compiled.outline = (schema_outline(plain) if says else None,)
        return compiled.outline[0]

    def check_profile(self, profile: SchemaProfile = "openai-strict") -> None:
        """Raise the `UserError` that `json_schema(profile)` would raise, without copying the schema.

        Example: `OutputSchema(Person).check_profile("anthropic")` returns None.
        """
        self._profile(profile)

    def _profile(self, profile: SchemaProfile) -> dict[str, Any]:
        compiled = self._require()
        key = (profile, self._strict, self._depth)
        if key not in compiled.profiles:
            compiled.profiles[key] = render_profile(
                compiled.base_schema,
                profile,
                strict=self._strict,
                wrapped=compiled.wrapped,
                what=compiled.what,
                recursion_depth=self._depth,
            )
        return compiled.profiles[key]

    def validate_json(self, text: str, *, lenient: bool = False) -> Any:
        """Parse and validate model output; return the (unwrapped) value.

        `lenient=True` is for prompted and json_object modes: it accepts code fences, prose
        around the JSON (the last candidate that validates wins), trailing commas, comments,
        single and smart quotes, and an unwrapped value where a wrapped one was expected.
        Raises `ModelBehaviorError` whose message can be sent back to the model.
        """
        if self._compiled is None:
            return text
        if lenient:
            return lenient_validate(text, self._compiled.validator)
        return self._compiled.validator.validate_json(text)

    def validate_complete_json(self, text: str) -> Any:
        """Read a cut-off answer: only a complete JSON value in it counts (the last that
        validates), never one repaired from the truncated tail, which could hold a cut number or
        string. Raises `ModelBehaviorError`: with the validation errors of the last complete
        value when none validates, or with one error of type `"cut_off"` when there is none."""
        if self._compiled is None:
            return text
        spans, _, _ = json_spans(text)
        last_error: ModelBehaviorError | None = None
        for span in reversed(spans):
            try:
                return lenient_validate(span, self._compiled.validator)
            except ModelBehaviorError as error:
                last_error = last_error or error
        if last_error is not None:
            raise ModelBehaviorError(
                f"the answer was cut off after a complete JSON value that is not valid: {str(last_error)[:1900]}",
                raw_text=text[:2000],
                errors=last_error.errors,
            )
        message = "the answer was cut off before it held a complete, valid JSON value; answer with the JSON only"
        raise ModelBehaviorError(message, raw_text=text[:2000], errors=[{"type": "cut_off", "loc": (), "msg": message}])

    def validate_python(self, obj: Any) -> Any:
        """Validate an already-parsed wire value (e.g. tool-call arguments); return the value."""
        if self._compiled is None:
            if isinstance(obj, str):
                return obj
            raise ModelBehaviorError(f"Expected plain text, got {type(obj).__name__}.", raw_text=repr(obj)[:1000])
        return self._compiled.validator.validate_python(obj)

    def dump_json(self, value: Any) -> str:
        """The wire form of a value (wrapped when wrapped); plain text is returned as is."""
        if self._compiled is None:
            if not isinstance(value, str):
                raise UserError(f"Plain-text output must be a str, got {type(value).__name__}.")
            return value
        return self._compiled.validator.dump_json(value)

    def partial_parser(self, *, lenient: bool = False) -> PartialParser | TextPartialParser:
        """A fresh incremental parser for streamed output of this type.

        `lenient=True` skips text before the first `{`/`[` and after the value, and leaves the
        verdict on malformed JSON to `finish()` (which then reads the text leniently).
        """
        if self._compiled is None:
            return TextPartialParser()
        compiled = self._compiled

        def finish(text: str) -> Any:
            return self.validate_json(text, lenient=lenient)

        return PartialParser(
            compiled.plan,
            finish,
            what=compiled.what,
            lenient=lenient,
            allow_non_finite=compiled.validator.allow_non_finite,
        )

    def __repr__(self) -> str:
        return f"OutputSchema({self.name()}, strict={self._strict})"


def shared_schema(output_type: Any, *, strict: bool = True, name: str | None = None) -> OutputSchema:
    """`OutputSchema(output_type, strict=strict, name=name)`, made once per (type, strict, name)
    for a type that hashes (an `OutputSchema` never changes once made): what a feature made for
    every call uses. An unhashable type (a raw schema dict) gets a new one each time.

    Example: `shared_schema(list[int]) is shared_schema(list[int])`.
    """
    try:
        hash(output_type)
    except TypeError:
        return OutputSchema(output_type, strict=strict, name=name)
    return _shared(output_type, strict, name)


@functools.lru_cache(maxsize=256)
def _shared(output_type: Any, strict: bool, name: str | None) -> OutputSchema:
    return OutputSchema(output_type, strict=strict, name=name)
