"""Parse and validate wire JSON for one output type, unwrapping `{"response": ...}` when wrapped.

`TypedValidator` serves Python types through pydantic; `RawSchemaValidator` serves a raw
JSON-schema dict through the `jsonschema` library. Both raise only `ModelBehaviorError` on bad
output, whatever the text is.
"""

from __future__ import annotations

import json
from itertools import islice
from typing import Any, Protocol

import pydantic_core
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from ..core import UserError
from ._errors import from_errors, json_error, validation_error
from ._schema_tools import WRAPPER_KEY

__all__ = ["RawSchemaValidator", "TypedValidator", "Validator"]

_MAX_RAW_ERRORS = 20
# Text that is not even a str (or holds lone surrogates) fails in the codec, not in pydantic.
_DECODE_ERRORS = (UnicodeError, TypeError, ValueError, RecursionError, OverflowError)


class Validator(Protocol):
    """What `OutputSchema` needs from a validator."""

    what: str
    wrapped: bool

    def validate_json(self, text: str) -> Any:
        """Validate wire text (wrapped when wrapped); return the unwrapped value."""

    def validate_inner_json(self, text: str) -> Any:
        """Validate text holding the unwrapped value itself."""

    def validate_python(self, obj: Any) -> Any:
        """Validate a wire-form Python object (e.g. parsed tool arguments)."""

    def dump_json(self, value: Any) -> str:
        """Serialise a value in wire form."""


class TypedValidator:
    """Validation through pydantic `TypeAdapter`s, in JSON mode so JSON rules apply."""

    def __init__(self, adapter: TypeAdapter[Any], output_type: Any, *, wrapped: bool, what: str) -> None:
        self.what = what
        self.wrapped = wrapped
        self.adapter = adapter
        self.wire: TypeAdapter[Any] = adapter
        if wrapped:
            envelope = TypedDict("OutputEnvelope", {WRAPPER_KEY: output_type})  # type: ignore[misc]
            self.wire = TypeAdapter(envelope)

    def _unwrap(self, value: Any) -> Any:
        return value[WRAPPER_KEY] if self.wrapped else value

    def validate_json(self, text: str) -> Any:
        try:
            return self._unwrap(self.wire.validate_json(text))
        except ValidationError as exc:
            raise validation_error(exc, _as_text(text), self.what) from None
        except _DECODE_ERRORS as exc:
            raise json_error(f"unreadable text ({type(exc).__name__})", _as_text(text), self.what) from None

    def validate_inner_json(self, text: str) -> Any:
        try:
            return self.adapter.validate_json(text)
        except ValidationError as exc:
            raise validation_error(exc, _as_text(text), self.what) from None
        except _DECODE_ERRORS as exc:
            raise json_error(f"unreadable text ({type(exc).__name__})", _as_text(text), self.what) from None

    def validate_python(self, obj: Any) -> Any:
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

    def __init__(self, schema: dict[str, Any], *, wrapped: bool, what: str) -> None:
        try:
            import jsonschema
        except ImportError:  # pragma: no cover - depends on the environment
            raise UserError(
                "A raw JSON-schema output type needs the 'jsonschema' package: pip install jsonschema"
            ) from None
        self.what = what
        self.wrapped = wrapped
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise UserError(f"The JSON schema {what!r} is invalid: {exc.message}") from None
        except RecursionError:
            raise UserError(f"The JSON schema {what!r} nests too deeply to check.") from None
        self._validator = cls(schema)

    def _check(self, value: Any, raw_text: str, prefix: tuple[str, ...]) -> Any:
        try:
            found = list(islice(self._validator.iter_errors(value), _MAX_RAW_ERRORS))
        except RecursionError:
            raise json_error("the value nests too deeply to validate", raw_text, self.what) from None
        if found:
            errors = [
                {"type": "schema", "loc": (*prefix, *error.absolute_path), "msg": error.message} for error in found
            ]
            raise from_errors(errors, raw_text, self.what)
        return value

    def _parse(self, text: str) -> Any:
        try:
            return pydantic_core.from_json(text)
        except _DECODE_ERRORS as exc:
            raise json_error(f"Invalid JSON: {exc}", _as_text(text), self.what) from None

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
