"""Text answers in a set form: `Regex(...)` and `Grammar(...)` output types, their checks, and a
regular expression as a GBNF grammar for llama.cpp. Pure code: no I/O, no SDK.

Example:
    from so_middleware.schema.text import Regex, regex_to_gbnf

    response = await client.get_response("A flight code", output_type=Regex(r"[A-Z]{3}-[0-9]{4}"))
    regex_to_gbnf(r"[A-Z]{3}")  # 'root ::= ([A-Z]){3}\\n'
"""

from ._formats import (
    CUSTOM_TOOL_NAME,
    Grammar,
    GrammarFormat,
    Regex,
    RegexFormat,
    TextConstraint,
    TextFormat,
    custom_tool_fields,
    text_format_of,
)
from ._gbnf import regex_to_gbnf

__all__ = [
    "CUSTOM_TOOL_NAME",
    "Grammar",
    "GrammarFormat",
    "Regex",
    "RegexFormat",
    "TextConstraint",
    "TextFormat",
    "custom_tool_fields",
    "regex_to_gbnf",
    "text_format_of",
]
