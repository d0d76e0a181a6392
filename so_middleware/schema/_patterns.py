"""The `pattern`s of a raw JSON schema: checked one by one, with a located reason when refused.

Schemas written for draft-04 and draft-07 use ECMA-262's web-compatible grammar (Annex B), where a
`]`, `}` or `{` that closes or opens nothing is a literal (`^PUBMED:\\{d}`, `.*\\{\\{.+}}.*`) and
a `[` inside a class is a literal (`^[[a-z]*]*$`). The validator checks a schema's patterns
against those drafts' meta-schema with the stricter grammar and refuses such patterns; the
engines that serve the schema (llama.cpp, for one) take them as the schema's author meant. So
the validator is given a copy in which those literals are escaped: the same language, spelled in
the strict grammar.

A pattern the linear-time engine cannot run at all (lookaround, backreferences) is refused with
its JSON pointer and the construct it uses. No constrained-decoding engine enforces those while
generating (llama.cpp's grammars, vLLM's xgrammar, outlines and guidance, OpenAI's strict mode);
only a backtracking engine (PCRE, Python's `re`, fancy-regex) could check them, after the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from ..core import UserError

__all__ = ["pattern_refusal", "respell_patterns", "strict_spelling"]

# Keywords whose values are data, not schemas: a "pattern" key inside them is not a keyword.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")
_LOOKAROUND = re.compile(r"\(\?<?[=!]")
_BACKREFERENCE = re.compile(r"\\[1-9]|\\k<")
_UNRUNNABLE = "the linear-time regex engine that checks answers cannot run"
_NO_ENGINE = (
    "no constrained-decoding engine enforces it while generating (llama.cpp's grammars, vLLM's xgrammar, "
    "outlines and guidance, OpenAI's strict mode); only a backtracking engine (PCRE, Python's re, "
    "fancy-regex) could check it, after the answer"
)


def strict_spelling(pattern: str) -> str:
    """`pattern` with its Annex B literals (`]`, `}`, `{`, and `[` in a class) escaped.

    Escapes are copied as they are; a `{` that starts a quantifier (`{2}`, `{2,}`, `{2,5}`) stays.
    """
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            if char == "]":
                in_class = False
            out.append("\\[" if char == "[" else char)
        elif char == "[":
            in_class = True
            out.append(char)
            if pattern.startswith("^", index + 1):
                out.append("^")
                index += 1
        elif char == "{":
            quantifier = _QUANTIFIER.match(pattern, index)
            if quantifier and index > 0:
                out.append(quantifier.group())
                index = quantifier.end()
                continue
            out.append("\\{")
        elif char in "}]":
            out.append("\\" + char)
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _patterns(node: Any, pointer: str) -> Iterator[tuple[str, str, Callable[[str], None]]]:
    """Every regex of a schema: (its JSON pointer, the pattern, a setter that replaces it)."""
    stack: list[tuple[Any, str]] = [(node, pointer)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, list):
            stack.extend((item, f"{where}/{index}") for index, item in enumerate(current))
            continue
        if not isinstance(current, dict):
            continue
        if isinstance(current.get("pattern"), str):
            yield f"{where}/pattern", current["pattern"], _setter(current, "pattern")
        properties = current.get("patternProperties")
        if isinstance(properties, dict):
            for key in list(properties):
                yield f"{where}/patternProperties/{_escaped(key)}", key, _renamer(properties, key)
        for key, value in current.items():
            if key not in _DATA_KEYWORDS and isinstance(value, dict | list):
                stack.append((value, f"{where}/{_escaped(key)}"))


def _setter(node: dict[str, Any], key: str) -> Callable[[str], None]:
    def put(value: str) -> None:
        node[key] = value

    return put


def _renamer(mapping: dict[str, Any], key: str) -> Callable[[str], None]:
    def rename(value: str) -> None:
        if value != key:
            mapping[value] = mapping.pop(key)

    return rename


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def respell_patterns(schema: Any, compiles: Callable[[str], bool]) -> list[tuple[str, str]]:
    """Rewrite `schema`'s patterns in place to their strict spelling where the engine then runs them.

    `compiles(pattern)` says whether the validator's engine accepts a pattern on its own. Returns
    the (JSON pointer, pattern) of each one it does not run, left as it was: a pattern the
    validator ignores (beside a draft-07 `$ref`) does no harm, so only the caller, when the
    validator refuses the schema, decides to blame one with `pattern_refusal`.
    """
    unrunnable: list[tuple[str, str]] = []
    for pointer, pattern, replace in list(_patterns(schema, "")):
        spelled = strict_spelling(pattern)
        if compiles(spelled):
            replace(spelled)
        else:
            unrunnable.append((pointer, pattern))
    return unrunnable


def pattern_refusal(what: str, pointer: str, pattern: str) -> UserError:
    """The error for a pattern the engine cannot run: where it is, what in it, and what to do."""
    shown = pattern if len(pattern) <= 120 else pattern[:117] + "..."
    lookaround = _LOOKAROUND.search(pattern)
    backreference = _BACKREFERENCE.search(pattern)
    if lookaround:
        reason = (
            f"it uses lookaround ('{lookaround.group()}...)'), which {_UNRUNNABLE}; {_NO_ENGINE}. "
            "Rewrite it without lookaround"
        )
    elif backreference:
        reason = (
            f"it uses the backreference '{backreference.group()}', which {_UNRUNNABLE}; "
            f"{_NO_ENGINE}. Rewrite it without backreferences"
        )
    else:
        reason = "it is not a valid ECMA-262 regular expression"
    return UserError(
        f"The JSON schema of {what} has a pattern at {pointer or '/'} that is refused: {shown!r}: {reason}."
    )
