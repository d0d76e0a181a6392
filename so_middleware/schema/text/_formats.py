"""Text answers in a set form: `Regex(...)` and `Grammar(...)`, output types that answer a `str`.

`get_response(..., output_type=Regex(r"[A-Z]{3}-[0-9]{4}"))` gives a `ChatResponse[str]` whose
value fully matches the pattern. At run time each returns `Annotated[str, <format>]`, so the
plain-text path of a structured-output run reads it; the format object (`RegexFormat`,
`GrammarFormat`) checks the text (pydantic runs it as an after-validator) and gives the request
fields of a backend that enforces it.

| output type         | checked here                                   | enforced by the backend           |
|---------------------|------------------------------------------------|-----------------------------------|
| `Regex(p)`          | `re.fullmatch(p, text)`                        | llama.cpp (`grammar`, p as GBNF), vLLM (`structured_outputs.regex`), OpenAI GPT-5 (custom tool, `regex`) |
| `Grammar(lark=g)`   | lark's Earley parser (`pip install lark`)      | vLLM (`structured_outputs.grammar`), OpenAI GPT-5 (custom tool, `lark`) |
| `Grammar(gbnf=g)`   | nowhere here: only an engine reads GBNF        | llama.cpp (`grammar`), vLLM (`structured_outputs.grammar`); refused elsewhere |

On OpenAI (`text_constraint="openai"`) the form goes as a custom tool the model must call, with
`format: {"type": "grammar", "syntax": "lark" | "regex", "definition": ...}`; the adapter reads
the call's `input` back as the answer's text. A regex goes natively only when it is a plain
regular expression (what `regex_to_gbnf` can translate: no lookaround, no backreference, which
OpenAI's regex engine does not take); any other is checked here only.

A text that fails the check is re-asked like an invalid JSON answer. An answer with whitespace
around a form that does not allow it is taken without that whitespace.
"""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from ...core import UserError
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
    "text_format_of",
]

TextConstraint = Literal["llama.cpp", "vllm", "openai"]
"""How a backend takes a regex or grammar on a text answer (`Capabilities.text_constraint`)."""


class TextFormat:
    """A set form for a text answer: checks a text, and says how a backend is asked for it."""

    def check(self, text: str) -> str:
        """`text` (less surrounding whitespace the form does not allow); `ValueError` naming why not."""
        if self.fits(text):
            return text
        if text.strip() != text and self.fits(text.strip()):
            return text.strip()
        raise ValueError(self.mismatch(text))

    def fits(self, text: str) -> bool:
        raise NotImplementedError

    def mismatch(self, text: str) -> str:
        """Why `text` does not fit, for the re-ask."""
        raise NotImplementedError

    def request_fields(self, constraint: TextConstraint | None) -> dict[str, Any] | None:
        """The request body fields that make a backend enforce the form, or None."""
        raise NotImplementedError

    def instructions(self) -> str:
        """What the model is told about the form."""
        raise NotImplementedError

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))


@dataclass(frozen=True)
class RegexFormat(TextFormat):
    """The answer fully matches `pattern` (Python `re` syntax)."""

    pattern: str
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _gbnf: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str):
            raise UserError(f"Regex needs a pattern str, not {type(self.pattern).__name__}")
        try:
            compiled = re.compile(self.pattern)
        except re.error as error:
            raise UserError(f"Regex({self.pattern!r:.80}) is not a valid regular expression: {error}") from None
        object.__setattr__(self, "_compiled", compiled)
        try:
            gbnf: str | None = regex_to_gbnf(self.pattern)
        except UserError:
            gbnf = None  # checked here only; refused where a backend would be asked to enforce it
        object.__setattr__(self, "_gbnf", gbnf)

    def fits(self, text: str) -> bool:
        return self._compiled.fullmatch(text) is not None

    def mismatch(self, text: str) -> str:
        return f"the answer must match the regular expression {self.pattern!r} in full, with nothing else"

    def request_fields(self, constraint: TextConstraint | None) -> dict[str, Any] | None:
        if constraint == "vllm":
            return {"structured_outputs": {"regex": self.pattern}}
        if constraint == "llama.cpp":
            return {"grammar": self._gbnf if self._gbnf is not None else regex_to_gbnf(self.pattern)}
        if constraint == "openai" and self._gbnf is not None:  # else checked here only: see the module
            return custom_tool_fields("regex", self.pattern)
        return None

    def instructions(self) -> str:
        return f"Reply with only text that fully matches the regular expression {self.pattern!r}: nothing else."


@dataclass(frozen=True)
class GrammarFormat(TextFormat):
    """The answer is a sentence of a grammar: GBNF (llama.cpp's) or Lark (checked with lark)."""

    gbnf: str | None = None
    lark: str | None = None
    start: str = "start"
    _parser: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        given = [s for s in (self.gbnf, self.lark) if s is not None]
        if len(given) != 1 or not isinstance(given[0], str):
            raise UserError("Grammar needs exactly one grammar str: Grammar(gbnf=...) or Grammar(lark=...)")
        if self.gbnf is not None and not re.search(r"^\s*root\s*::=", self.gbnf, re.MULTILINE):
            raise UserError("a GBNF grammar needs a `root ::= ...` rule: the answer is a `root`")
        object.__setattr__(self, "_parser", None if self.lark is None else _lark_parser(self.lark, self.start))

    def fits(self, text: str) -> bool:
        return self._problem(text) is None

    def mismatch(self, text: str) -> str:
        return f"the answer must be a sentence of the grammar, with nothing else: {self._problem(text)}"

    def _problem(self, text: str) -> str | None:
        if self._parser is None:  # GBNF: only the engine that enforced it could check it
            return None
        import lark

        try:
            self._parser.parse(text)
        except lark.exceptions.LarkError as error:
            return " ".join(str(error).split())[:300]
        return None

    def request_fields(self, constraint: TextConstraint | None) -> dict[str, Any] | None:
        if constraint == "llama.cpp" and self.gbnf is not None:
            return {"grammar": self.gbnf}
        if constraint == "vllm":
            return {"structured_outputs": {"grammar": self.gbnf if self.gbnf is not None else self.lark}}
        if self.gbnf is not None:
            raise UserError(
                "a GBNF grammar is enforced by llama.cpp and vLLM only, and nothing here can check an answer "
                f"against it; this backend's profile says it takes {_taken(constraint)}. "
                "Use Grammar(lark=...), which is checked here, or a profile with text_constraint set"
            )
        if constraint == "openai" and self.lark is not None:
            return custom_tool_fields("lark", self.lark)
        return None

    def instructions(self) -> str:
        kind, text = ("GBNF", self.gbnf) if self.gbnf is not None else ("Lark", self.lark)
        return f"Reply with only text in this {kind} grammar: nothing else.\n{text}"


# The custom tool that carries a form to OpenAI: the model must call it, and its input is the answer.
CUSTOM_TOOL_NAME = "answer"


def custom_tool_fields(syntax: Literal["lark", "regex"], definition: str) -> dict[str, Any]:
    """The Responses API body fields of a custom tool whose input must be in `definition`, and the
    `tool_choice` that makes the model call it (`openai.types.responses.CustomToolParam`,
    `ToolChoiceCustomParam`). The Chat Completions adapter moves them into its own shape.

    Example: `custom_tool_fields("regex", "[0-9]+")["tool_choice"]` is `{"type": "custom", "name": "answer"}`.
    """
    tool = {
        "type": "custom",
        "name": CUSTOM_TOOL_NAME,
        "description": "Give your answer as this tool's input.",
        "format": {"type": "grammar", "syntax": syntax, "definition": definition},
    }
    return {"tools": [tool], "tool_choice": {"type": "custom", "name": CUSTOM_TOOL_NAME}}


def _taken(constraint: TextConstraint | None) -> str:
    if constraint == "openai":
        return "Lark grammars and regular expressions only (text_constraint='openai')"
    return "none (text_constraint=None)"


def _lark_parser(grammar: str, start: str) -> Any:
    try:
        import lark
    except ImportError:
        raise UserError("Grammar(lark=...) checks answers with lark: pip install 'so-middleware[grammar]'") from None
    try:
        return lark.Lark(grammar, start=start, parser="earley")
    except lark.exceptions.LarkError as error:
        raise UserError(
            f"Grammar(lark=...) is not a valid Lark grammar: {' '.join(str(error).split())[:300]}"
        ) from None


def Regex(pattern: str) -> type[str]:
    """The output type of a text answer that fully matches `pattern` (Python `re` syntax).

    Enforced where the backend's profile takes it (llama.cpp as a GBNF grammar, vLLM), checked
    and re-asked everywhere. Typed as `type[str]` so `output_type=Regex(...)` answers a
    `ChatResponse[str]`; it is `Annotated[str, RegexFormat(pattern)]`.

    Example:
        response = await client.get_response("A flight code", output_type=Regex(r"[A-Z]{3}-[0-9]{4}"))
        response.value  # 'KLM-1234'
    """
    return typing.cast("type[str]", Annotated[str, RegexFormat(pattern)])


def Grammar(*, gbnf: str | None = None, lark: str | None = None, start: str = "start") -> type[str]:
    """The output type of a text answer in a grammar: `gbnf=` (llama.cpp's GBNF, `root` rule) or
    `lark=` (a Lark grammar, `start` rule, checked with lark).

    A Lark grammar is checked and re-asked everywhere, and enforced by vLLM; a GBNF grammar is
    enforced by llama.cpp and vLLM and refused (`UserError`) on other backends. Typed as
    `type[str]` so `output_type=Grammar(...)` answers a `ChatResponse[str]`.

    Example:
        yes_no = Grammar(gbnf='root ::= "yes" | "no"')
        response = await client.get_response("Is water wet?", output_type=yes_no)
    """
    return typing.cast("type[str]", Annotated[str, GrammarFormat(gbnf, lark, start)])


def text_format_of(output_type: Any) -> TextFormat | None:
    """The `TextFormat` of an output type made by `Regex` or `Grammar`, or None."""
    if typing.get_origin(output_type) is not Annotated:
        return None
    return next((m for m in typing.get_args(output_type)[1:] if isinstance(m, TextFormat)), None)
