"""Typed input (seed 003): a run's input as a pydantic model or a dataclass, validated before any
call and sent as JSON with its schema."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..core import ChatMessage, UserError, as_messages

__all__ = ["TypedInput"]


class TypedInput:
    """How an agent with `input_type=` turns a run's input into messages.

    An instance of the type, or a dict of its fields, is validated (a `UserError` names each wrong
    field) and sent as one user message: the JSON, then its schema. Text and messages pass as they
    are: a typed agent still chats.
    """

    def __init__(self, input_type: Any) -> None:
        is_model = isinstance(input_type, type) and issubclass(input_type, BaseModel)
        if not (is_model or (isinstance(input_type, type) and dataclasses.is_dataclass(input_type))):
            raise UserError(f"input_type must be a pydantic model or a dataclass, not {input_type!r:.80}")
        self.input_type = input_type
        self.name = input_type.__name__
        self._adapter: TypeAdapter[Any] = TypeAdapter(input_type)
        self._schema = json.dumps(self._adapter.json_schema(), separators=(",", ":"))

    def messages(self, value: Any) -> list[ChatMessage]:
        """The messages a run sends for `value`; `UserError` for input that is not the type's."""
        if isinstance(value, BaseModel) or _is_dataclass_instance(value):
            if not isinstance(value, self.input_type):
                raise UserError(f"this agent's input is {self.name}, not {type(value).__name__}")
            data: Any = value.model_dump() if isinstance(value, BaseModel) else dataclasses.asdict(value)
        elif isinstance(value, Mapping):
            data = value
        else:
            return as_messages(value)
        try:
            validated = self._adapter.validate_python(data)
        except ValidationError as error:
            problems = "; ".join(
                f"field {'.'.join(map(str, e['loc'])) or '(root)'!r}: {e['msg']}" for e in error.errors()[:5]
            )
            raise UserError(f"invalid {self.name} input: {problems}") from None
        text = self._adapter.dump_json(validated).decode()
        return [ChatMessage("user", f"{self.name} input, as JSON:\n{text}\n\nIts JSON schema:\n{self._schema}")]


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)
