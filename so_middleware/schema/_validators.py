"""Parse and validate wire JSON for one output type, unwrapping `{"response": ...}` when wrapped.

`TypedValidator` serves Python types through pydantic; `RawSchemaValidator` serves a raw
JSON-schema dict through `jsonschema-rs`, asserting `format` (`email`, `uri`, `date-time`, `uuid`,
`ipv4`, ...; a format it does not know is left unchecked), whose patterns run on a regex engine with linear-time
matching (a pattern it cannot run, with lookaround or backreferences, is a `UserError` naming its JSON pointer when the
schema is built) and which never fetches a remote `$ref`. Both raise only `ModelBehaviorError`
on bad output, whatever the text is, and both reject `NaN`, `Infinity` and numbers too large
for a float (`1e999`): they are not JSON. A typed output accepts them only where its type says
so explicitly (`allow_inf_nan=True` in a model's config or a field); pydantic then decides.
Validation costs time linear in the answer (one validation pass and a regex scan; a second
parse and a walk of the value only for text that may hold a non-finite number).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
from itertools import islice
from typing import Any, Protocol

import pydantic_core
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from ..core import UserError
from ._errors import from_errors, json_error, validation_error
from ._patterns import pattern_refusal, respell_patterns
from ._schema_tools import WRAPPER_KEY

__all__ = ["RawSchemaValidator", "TypedValidator", "Validator"]

_MAX_RAW_ERRORS = 20
# pydantic's JSON parser stops at about 200 levels; wire-form Python objects get the same limit.
_MAX_VALUE_DEPTH = 200
# Text that is not even a str (or holds lone surrogates) fails in the codec, not in pydantic.
_DECODE_ERRORS = (UnicodeError, TypeError, ValueError, RecursionError, OverflowError)
_MAYBE_NON_FINITE = re.compile(r"NaN|Infinity|[0-9.][eE]|[0-9]{309}")


class Validator(Protocol):
    """What `OutputSchema` needs from a validator."""

    what: str
    wrapped: bool
    allow_non_finite: bool

    def validate_json(self, text: str) -> Any:
        """Validate wire text (wrapped when wrapped); return the unwrapped value."""

    def validate_inner_json(self, text: str) -> Any:
        """Validate text holding the unwrapped value itself."""

    def validate_python(self, obj: Any) -> Any:
        """Validate a wire-form Python object (e.g. parsed tool arguments)."""

    def dump_json(self, value: Any) -> str:
        """Serialise a value in wire form."""
        ...


class TypedValidator:
    """Validation through pydantic `TypeAdapter`s, in JSON mode so JSON rules apply."""

    def __init__(self, adapter: TypeAdapter[Any], output_type: Any, *, wrapped: bool, what: str) -> None:
        self.what = what
        self.wrapped = wrapped
        self.adapter = adapter
        self.allow_non_finite = allows_non_finite(adapter.core_schema)
        self.wire: TypeAdapter[Any] = adapter
        if wrapped:
            envelope = TypedDict("OutputEnvelope", {WRAPPER_KEY: output_type})  # type: ignore[misc]
            self.wire = TypeAdapter(envelope)

    def _unwrap(self, value: Any) -> Any:
        return value[WRAPPER_KEY] if self.wrapped else value

    def _json(self, adapter: TypeAdapter[Any], text: str) -> Any:
        try:
            value = adapter.validate_json(text)
        except ValidationError as exc:
            raise validation_error(exc, _as_text(text), self.what) from None
        except _DECODE_ERRORS as exc:
            raise json_error(f"unreadable text ({type(exc).__name__})", _as_text(text), self.what) from None
        if not self.allow_non_finite and not _surely_finite(text):
            check_finite(parse_json(text, self.what), _as_text(text), self.what)
        return value

    def validate_json(self, text: str) -> Any:
        return self._unwrap(self._json(self.wire, text))

    def validate_inner_json(self, text: str) -> Any:
        return self._json(self.adapter, text)

    def validate_python(self, obj: Any) -> Any:
        if not self.allow_non_finite:
            check_finite(obj, _preview(obj), self.what)
        try:
            return self._unwrap(self.wire.validate_python(obj))
        except ValidationError as exc:
            raise validation_error(exc, _preview(obj), self.what) from None
        except (RecursionError, TypeError, ValueError) as exc:
            raise json_error(f"unusable value ({type(exc).__name__})", _preview(obj), self.what) from None

    def dump_json(self, value: Any) -> str:
        wire_value = {WRAPPER_KEY: value} if self.wrapped else value
        try:
            return self.wire.dump_json(wire_value, by_alias=True, warnings="error").decode()
        except (pydantic_core.PydanticSerializationError, ValueError, TypeError) as exc:
            raise UserError(f"Cannot serialise {_preview(value)} as {self.what}: {exc}") from None


class RawSchemaValidator:
    """Validation against a raw JSON-schema dict; the value is the plain parsed JSON."""

    allow_non_finite = False

    def __init__(self, schema: dict[str, Any], *, wrapped: bool, what: str) -> None:
        try:
            import jsonschema_rs
        except ImportError:  # pragma: no cover - depends on the environment
            raise UserError(
                "A raw JSON-schema output type needs the 'jsonschema-rs' package: pip install jsonschema-rs"
            ) from None
        self.what = what
        self.wrapped = wrapped
        spelled = copy.deepcopy(schema)
        unrunnable = respell_patterns(spelled, _compiles)
        try:
            # RegexOptions: the linear-time engine; offline: no $ref is ever fetched. Formats are
            # asserted (JSON Schema only annotates them by default): engines that constrain the
            # answer skip `format`, so validation is where an email in a `uri` field is caught.
            self._validator = jsonschema_rs.validator_for(
                spelled, pattern_options=jsonschema_rs.RegexOptions(), offline=True, validate_formats=True
            )
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
            if unrunnable:
                raise pattern_refusal(what, *unrunnable[0]) from None
            raise UserError(f"The JSON schema {what!r} is invalid: {_schema_error(exc)}") from None

    def _check(self, value: Any, raw_text: str, prefix: tuple[str, ...]) -> Any:
        check_finite(value, raw_text, self.what)
        try:
            found = list(islice(self._validator.iter_errors(value), _MAX_RAW_ERRORS))
        except (RecursionError, ValueError) as exc:
            raise json_error(f"the value cannot be validated ({exc})", raw_text, self.what) from None
        if found:
            errors = [
                {"type": "schema", "loc": (*prefix, *error.instance_path), "msg": error.message} for error in found
            ]
            raise from_errors(errors, raw_text, self.what)
        return value

    def _parse(self, text: str) -> Any:
        return parse_json(text, self.what)

    def _unwrap(self, value: Any, raw_text: str) -> Any:
        if not self.wrapped:
            return self._check(value, raw_text, ())
        if not isinstance(value, dict) or WRAPPER_KEY not in value:
            errors = [{"type": "missing", "loc": (WRAPPER_KEY,), "msg": f"Expected an object with key {WRAPPER_KEY!r}"}]
            raise from_errors(errors, raw_text, self.what)
        return self._check(value[WRAPPER_KEY], raw_text, (WRAPPER_KEY,))

    def validate_json(self, text: str) -> Any:
        return self._unwrap(self._parse(text), _as_text(text))

    def validate_inner_json(self, text: str) -> Any:
        return self._check(self._parse(text), _as_text(text), ())

    def validate_python(self, obj: Any) -> Any:
        return self._unwrap(obj, _preview(obj))

    def dump_json(self, value: Any) -> str:
        wire_value = {WRAPPER_KEY: value} if self.wrapped else value
        try:
            return json.dumps(wire_value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise UserError(f"Cannot serialise {_preview(value)} as JSON: {exc}") from None


def parse_json(text: str, what: str) -> Any:
    """Strict JSON: `NaN` and `Infinity` are syntax errors (too-large numbers are left to `check_finite`)."""
    try:
        return pydantic_core.from_json(text, allow_inf_nan=False)
    except _DECODE_ERRORS as exc:
        error = exc
    with contextlib.suppress(*_DECODE_ERRORS):  # NaN and Infinity parse here: say so
        check_finite(pydantic_core.from_json(text), _as_text(text), what)
    raise json_error(f"Invalid JSON: {error}", _as_text(text), what) from None


def _surely_finite(text: Any) -> bool:
    """True for JSON text whose numbers are all finite floats (or ints) and whose nesting cannot
    pass the limit, seen without parsing it again: a number is read as a non-finite float only
    when spelled `NaN` or `Infinity`, or with an exponent or more than 308 digits. False when it
    may be otherwise (a string holding `"NaN"` or `"5e"` too): then the parsed value is checked."""
    return (
        isinstance(text, str)
        and text.count("[") + text.count("{") <= _MAX_VALUE_DEPTH
        and _MAYBE_NON_FINITE.search(text) is None
    )


def check_finite(value: Any, raw_text: str, what: str) -> None:
    """Raise `ModelBehaviorError` for a non-finite float or nesting past 200 levels; one iterative pass."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            errors = [
                {
                    "type": "finite_number",
                    "loc": path,
                    "msg": "NaN, Infinity and numbers as large as 1e999 are not JSON numbers; give a finite number",
                }
            ]
            raise from_errors(errors, raw_text, what)
        if len(path) > _MAX_VALUE_DEPTH:
            raise json_error(f"the value nests deeper than {_MAX_VALUE_DEPTH} levels", raw_text, what)
        if isinstance(node, dict):
            stack.extend((child, (*path, key)) for key, child in node.items())
        elif isinstance(node, list | tuple):
            stack.extend((child, (*path, index)) for index, child in enumerate(node))


def allows_non_finite(core_schema: Any) -> bool:
    """True when a pydantic core schema says `allow_inf_nan=True` anywhere (a field or a config)."""
    stack = [core_schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("allow_inf_nan") is True:
                return True
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return False


def _compiles(pattern: str) -> bool:
    """Whether the validator's linear-time engine runs `pattern` (checked on its own)."""
    import jsonschema_rs

    try:
        jsonschema_rs.validator_for({"pattern": pattern}, pattern_options=jsonschema_rs.RegexOptions())
    except (jsonschema_rs.ValidationError, ValueError):
        return False
    return True


def _schema_error(exc: Exception) -> str:
    """The first line of a schema error, short, and where in the schema it is."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = text if len(text) <= 200 else text[:197] + "..."
    path = getattr(exc, "instance_path", None)
    if path:
        text += f" (at /{'/'.join(str(part).replace('~', '~0').replace('/', '~1') for part in path)})"
    return text


def _as_text(text: Any) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, bytes | bytearray):
        return bytes(text).decode("utf-8", "replace")
    return repr(text)


def _preview(value: Any) -> str:
    try:
        return repr(value)[:1000]
    except RecursionError:
        return f"<{type(value).__name__}>"
