"""A regular expression as a GBNF grammar (llama.cpp's), read with the standard library's own
regex parser; what a grammar cannot express is refused, naming the construct."""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any

from ...core import UserError

__all__ = ["regex_to_gbnf"]

# `re._parser` is `sre_parse` renamed (3.11); the old name warns on import there.
_sre: Any = importlib.import_module("re._parser" if sys.version_info >= (3, 11) else "sre_parse")


_REFUSED = {
    "GROUPREF": "a back-reference",
    "GROUPREF_EXISTS": "a conditional group",
    "ASSERT": "a lookahead or lookbehind",
    "ASSERT_NOT": "a negative lookahead or lookbehind",
    "POSSESSIVE_REPEAT": "a possessive repeat",
    "ATOMIC_GROUP": "an atomic group",
}
_EMPTY = '""'  # the empty sequence
_CLASSES = {
    "CATEGORY_DIGIT": r"0-9",
    "CATEGORY_WORD": r"a-zA-Z0-9_",
    "CATEGORY_SPACE": r" \t\n\r\x0B\x0C",
}


def regex_to_gbnf(pattern: str) -> str:
    """A GBNF grammar (llama.cpp) whose `root` is a subset of what `pattern` fully matches: `\\d`,
    `\\w`, `\\s` as their ASCII classes, laziness dropped (it changes which match, not whether).

    Refused with `UserError` naming the construct: back-references, lookarounds, anchors inside
    the pattern, word boundaries, flags other than `x` and `s`.
    """
    try:
        tree = _sre.parse(pattern)
    except re.error as error:
        raise UserError(f"Regex({pattern!r:.80}) is not a valid regular expression: {error}") from None
    flags = tree.state.flags
    if flags & ~(re.UNICODE | re.VERBOSE | re.DOTALL):
        raise UserError(f"Regex({pattern!r:.80}): flags other than (?x) and (?s) cannot be sent as a grammar")
    items = list(tree)
    # `^` and `$` at the very ends say what a full match says already
    if items and str(items[0][0]) == "AT" and str(items[0][1]) in ("AT_BEGINNING", "AT_BEGINNING_STRING"):
        items = items[1:]
    if items and str(items[-1][0]) == "AT" and str(items[-1][1]) in ("AT_END", "AT_END_STRING"):
        items = items[:-1]
    return f"root ::= {_sequence(items, pattern, bool(flags & re.DOTALL)) or _EMPTY}\n"


def _sequence(items: list[Any], pattern: str, dotall: bool) -> str:
    parts: list[str] = []
    literal = ""
    for op, arg in items:
        if str(op) == "LITERAL":
            literal += chr(arg)
            continue
        if literal:
            parts.append(_string(literal))
            literal = ""
        parts.append(_node(str(op), arg, pattern, dotall))
    if literal:
        parts.append(_string(literal))
    return " ".join(p for p in parts if p)


def _node(op: str, arg: Any, pattern: str, dotall: bool) -> str:
    if op in _REFUSED:
        raise UserError(f"Regex({pattern!r:.80}) has {_REFUSED[op]}, which a grammar cannot express")
    if op == "NOT_LITERAL":
        return f"[^{_char(arg)}]"
    if op == "ANY":
        return "." if dotall else "[^\\n]"
    if op == "IN":
        return _char_class(arg, pattern)
    if op == "BRANCH":
        return "(" + " | ".join(_sequence(list(alt), pattern, dotall) or '""' for alt in arg[1]) + ")"
    if op == "SUBPATTERN":
        _group, add_flags, del_flags, inner = arg
        if add_flags or del_flags:
            raise UserError(f"Regex({pattern!r:.80}) sets flags inside a group, which a grammar cannot express")
        return f"({_sequence(list(inner), pattern, dotall) or _EMPTY})"
    if op in ("MAX_REPEAT", "MIN_REPEAT"):
        low, high, inner = arg
        body = f"({_sequence(list(inner), pattern, dotall) or _EMPTY})"
        if high == _sre.MAXREPEAT:
            return body + ("*" if low == 0 else "+" if low == 1 else f"{{{low},}}")
        if (low, high) == (0, 1):
            return body + "?"
        return body + (f"{{{low}}}" if low == high else f"{{{low},{high}}}")
    if op == "AT":
        raise UserError(f"Regex({pattern!r:.80}) has an anchor or word boundary ({arg}) a grammar cannot express")
    raise UserError(f"Regex({pattern!r:.80}) has a construct ({op}) a grammar cannot express")


def _char_class(items: list[Any], pattern: str) -> str:
    negate = ""
    parts: list[str] = []
    if len(items) == 1 and str(items[0][0]) == "CATEGORY" and str(items[0][1]).replace("_NOT", "") in _CLASSES:
        negated = str(items[0][1])  # `\D`, `\W`, `\S` on their own
        if "_NOT" in negated:
            return f"[^{_CLASSES[negated.replace('_NOT', '')]}]"
    for op, arg in items:
        op = str(op)
        if op == "NEGATE":
            negate = "^"
        elif op == "LITERAL":
            parts.append(_char(arg))
        elif op == "RANGE":
            parts.append(f"{_char(arg[0])}-{_char(arg[1])}")
        elif op == "CATEGORY" and str(arg) in _CLASSES:
            parts.append(_CLASSES[str(arg)])
        else:
            raise UserError(f"Regex({pattern!r:.80}) has a class item ({arg}) a grammar cannot express")
    return f"[{negate}{''.join(parts)}]"


def _char(code: int) -> str:
    """One character inside a GBNF class: letters and digits as they are, the rest escaped."""
    char = chr(code)
    if char.isascii() and char.isalnum():
        return char
    return f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}"


def _string(text: str) -> str:
    """A GBNF string literal."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\' or not char.isprintable() or not char.isascii():
            out.append(f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
