"""`Regex` and `Grammar` output types: the regex → GBNF table, what is refused, and the check
of an answer (full match, lark's parser)."""

from __future__ import annotations

import sys
import typing
from typing import Annotated, Any

import pytest
from pydantic import TypeAdapter, ValidationError

from so_middleware import Grammar, Regex, UserError
from so_middleware.schema.text import (
    CUSTOM_TOOL_NAME,
    GrammarFormat,
    RegexFormat,
    custom_tool_fields,
    regex_to_gbnf,
    text_format_of,
)

GBNF_CASES = [
    (r"[A-Z]{3}-[0-9]{4}", 'root ::= ([A-Z]){3} "-" ([0-9]){4}\n'),
    (r"^(?:yes|no)$", 'root ::= ("yes" | "no")\n'),
    (r"a\d+(x|y)*?", 'root ::= "a" ([0-9])+ (([xy]))*\n'),
    (r"\D\s\w.", "root ::= [^0-9] [ \\t\\n\\r\\x0B\\x0C] [a-zA-Z0-9_] [^\\n]\n"),
    (r"(?s).\"\\é", 'root ::= . "\\x22\\x5C\\xE9"\n'),
    (r"[^a-c\-\]]{2,}|q?", 'root ::= (([^a-c\\x2D\\x5D]){2,} | ("q")?)\n'),
    (r"(?x) a b  # spaced", 'root ::= "ab"\n'),
    (r"x{2,5}", 'root ::= ("x"){2,5}\n'),
    (r"", 'root ::= ""\n'),
]


@pytest.mark.parametrize(("pattern", "gbnf"), GBNF_CASES)
def test_a_regex_becomes_gbnf(pattern: str, gbnf: str) -> None:
    assert regex_to_gbnf(pattern) == gbnf


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        (r"(a)\1", "a back-reference"),
        (r"(?=a)a", "a lookahead"),
        (r"(?!a)b", "a negative lookahead"),
        (r"\bx", "word boundary"),
        (r"a^b", "anchor"),
        (r"(?i)ab", "flags other than"),
        (r"a(?i:b)", "flags inside a group"),
        (r"a*+", "a possessive repeat"),
        (r"(?>a)", "an atomic group"),
    ],
)
def test_a_regex_a_grammar_cannot_express_is_refused_naming_the_construct(pattern: str, named: str) -> None:
    with pytest.raises(UserError, match=named):
        regex_to_gbnf(pattern)


def test_such_a_regex_is_still_an_output_type_checked_here_and_refused_where_it_would_be_sent() -> None:
    form = text_format_of(Regex(r"(a)\1"))
    assert isinstance(form, RegexFormat)
    assert form.check("aa") == "aa"
    assert form.request_fields(None) is None
    assert form.request_fields("vllm") == {"structured_outputs": {"regex": r"(a)\1"}}
    with pytest.raises(UserError, match="back-reference"):
        form.request_fields("llama.cpp")


def test_an_invalid_regex_is_refused_when_made() -> None:
    with pytest.raises(UserError, match="not a valid regular expression"):
        Regex("[a-")


def test_a_regex_answer_matches_in_full_and_loses_surrounding_whitespace() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(Regex(r"[A-Z]{3}-[0-9]{4}"))
    assert adapter.validate_python("ABC-1234") == "ABC-1234"
    assert adapter.validate_python("  ABC-1234\n") == "ABC-1234"
    for wrong in ("ABC-12345", "xABC-1234", "The code is ABC-1234"):
        with pytest.raises(ValidationError, match="must match the regular expression"):
            adapter.validate_python(wrong)


def test_whitespace_the_pattern_allows_is_kept() -> None:
    assert TypeAdapter(Regex(r"\s*ok\s*")).validate_python(" ok\n") == " ok\n"


def test_the_output_types_are_annotated_str() -> None:
    made = Regex("a+")
    assert typing.get_origin(made) is Annotated
    assert typing.get_args(made)[0] is str
    assert text_format_of(made) == RegexFormat("a+")
    assert text_format_of(Annotated[str, "other"]) is None
    assert text_format_of(str) is None


ARITHMETIC = """
start: expr
expr: NUMBER | expr "+" expr | "(" expr ")"
%import common.NUMBER
"""


def test_a_lark_grammar_checks_the_answer_with_lark() -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(Grammar(lark=ARITHMETIC))
    assert adapter.validate_python("(1+2)+3") == "(1+2)+3"
    with pytest.raises(ValidationError, match="must be a sentence of the grammar"):
        adapter.validate_python("1+")


def test_a_lark_grammar_goes_to_vllm_and_openai_only() -> None:
    form = text_format_of(Grammar(lark=ARITHMETIC))
    assert isinstance(form, GrammarFormat)
    assert form.request_fields("vllm") == {"structured_outputs": {"grammar": ARITHMETIC}}
    assert form.request_fields("openai") == custom_tool_fields("lark", ARITHMETIC)
    assert form.request_fields("llama.cpp") is None
    assert form.request_fields(None) is None


def test_openai_gets_a_custom_tool_it_must_call_with_a_plain_regex_only() -> None:
    plain, lookahead = text_format_of(Regex(r"[A-Z]{3}")), text_format_of(Regex(r"(?=A)[A-Z]{3}"))
    assert isinstance(plain, RegexFormat) and isinstance(lookahead, RegexFormat)
    fields = plain.request_fields("openai")
    assert fields == {
        "tools": [
            {
                "type": "custom",
                "name": CUSTOM_TOOL_NAME,
                "description": "Give your answer as this tool's input.",
                "format": {"type": "grammar", "syntax": "regex", "definition": "[A-Z]{3}"},
            }
        ],
        "tool_choice": {"type": "custom", "name": CUSTOM_TOOL_NAME},
    }
    assert lookahead.request_fields("openai") is None  # OpenAI's regex engine has no lookaround: checked here only


def test_a_gbnf_grammar_goes_to_the_engines_that_read_it_and_is_refused_elsewhere() -> None:
    gbnf = 'root ::= "yes" | "no"'
    form = text_format_of(Grammar(gbnf=gbnf))
    assert isinstance(form, GrammarFormat)
    assert form.request_fields("llama.cpp") == {"grammar": gbnf}
    assert form.request_fields("vllm") == {"structured_outputs": {"grammar": gbnf}}
    with pytest.raises(UserError, match=r"GBNF grammar is enforced by llama\.cpp and vLLM only"):
        form.request_fields(None)
    with pytest.raises(UserError, match=r"takes Lark grammars and regular expressions only"):
        form.request_fields("openai")


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({}, "exactly one grammar"),
        ({"gbnf": 'root ::= "a"', "lark": "start: 'a'"}, "exactly one grammar"),
        ({"gbnf": 'answer ::= "a"'}, "root ::="),
        ({"lark": "start: missing_rule"}, "not a valid Lark grammar"),
    ],
)
def test_a_bad_grammar_is_refused_when_made(given: dict[str, str], problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        Grammar(**given)


def test_without_lark_a_lark_grammar_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lark", None)  # as if lark were not installed
    with pytest.raises(UserError, match=r"pip install 'so-middleware\[grammar\]'"):
        Grammar(lark="start: 'a'")
