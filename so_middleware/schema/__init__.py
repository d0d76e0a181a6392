"""Typed structured-output schemas: from a Python type to what a model is asked for, and back.

Pure code: no I/O and no provider SDK. See `OutputSchema`.

Example:
    from so_middleware.schema import OutputSchema

    schema = OutputSchema(list[int])
    schema.json_schema("openai-strict")       # wrapped as {"response": [...]}
    schema.validate_json('{"response": [1]}')  # [1]
"""

from ..core import SchemaProfile, install_text_reader
from ._functions import FunctionSchema, function_schema
from ._loops import BOUND_IT, Loop, LoopWatch, Nesting, loop_in
from ._output_schema import OutputSchema, shared_schema
from ._parse import parse_text
from ._partial import CompletedItem, PartialParser, TextPartialParser
from .prompts import opening, schema_outline, shape_hint

install_text_reader(parse_text)  # `ChatResponse.parse` reads text through the core's port

__all__ = [
    "BOUND_IT",
    "Loop",
    "LoopWatch",
    "Nesting",
    "CompletedItem",
    "FunctionSchema",
    "OutputSchema",
    "PartialParser",
    "SchemaProfile",
    "TextPartialParser",
    "function_schema",
    "loop_in",
    "opening",
    "parse_text",
    "schema_outline",
    "shape_hint",
    "shared_schema",
]
