"""An incremental JSON parser: feed it chunks, it calls a sink with events as soon as they happen.

State survives between chunks, so each character is looked at once and a stream of n characters
costs O(n) in total, however it is split. Runs of string characters, whitespace and digits are
consumed with one regex call each; only structural characters go through the Python loop.
Containers live on an explicit stack, so nesting depth costs memory, never Python recursion.

The grammar is strict JSON (RFC 8259) with pydantic's limits: control characters in strings,
lone surrogates, NaN/Infinity and nesting deeper than `max_depth` are errors.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

__all__ = ["IncrementalJsonParser", "JsonSink", "JsonSyntaxError"]

_WS = re.compile(r"[ \t\n\r]*")
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_NUMBER_RUN = re.compile(r"[0-9eE.+\-]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?\Z")
_ROOT_START = re.compile(r"[\[{]")
# Whole tokens inside one chunk, read with one regex call each (the common case of a stream): a key
# with its colon, a string without escapes, a number followed by its delimiter.
_WHOLE_KEY = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:')
_WHOLE_STRING = re.compile(r'"([^"\\\x00-\x1f]*)"')
_WHOLE_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]{0,15})(\.[0-9]+)?([eE][+-]?[0-9]+)?(?=[ \t\n\r,\]}])")
_SPACE = frozenset(" \t\n\r")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_HEX = frozenset("0123456789abcdefABCDEF")

# Parser states.
_VALUE = 0  # a value must come (root, after ':' or after ',' in an array)
_VALUE_OR_END = 1  # just after '['
_KEY_OR_END = 2  # just after '{'
_KEY = 3  # after ',' in an object
_COLON = 4
_COMMA_OR_END = 5
_STRING = 6
_NUMBER_STATE = 7
_LITERAL = 8
_DONE = 9
_PREFIX = 10  # skipping text before the first '{' or '['


class JsonSyntaxError(ValueError):
    """The text so far can no longer become valid JSON."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at character {position}")
        self.position = position


class JsonSink(Protocol):
    """Receives parse events in document order."""

    def open_container(self, is_object: bool) -> None: ...
    def key(self, key: str) -> None: ...
    def string(self, text: str) -> None: ...
    def string_start(self) -> None: ...
    def string_chunk(self, text: str) -> None: ...
    def string_end(self) -> None: ...
    def scalar(self, value: Any) -> None: ...
    def close_container(self) -> None: ...


class IncrementalJsonParser:
    """Parse one JSON value from chunks, reporting events to `sink`.

    Example:
        parser = IncrementalJsonParser(sink)
        parser.feed('{"a": [1, ')
        parser.feed('2]}')
        parser.done  # True
    """

    def __init__(
        self, sink: JsonSink, *, max_depth: int = 200, skip_prefix: bool = False, allow_trailing: bool = False
    ) -> None:
        self._sink = sink
        self._max_depth = max_depth
        self._allow_trailing = allow_trailing
        self._state = _PREFIX if skip_prefix else _VALUE
        self._stack: list[bool] = []  # True for an object
        self._offset = 0
        self._in_key = False
        self._key_parts: list[str] = []
        self._escape = ""  # an escape sequence split across chunks
        self._high_surrogate = ""
        self._number_parts: list[str] = []
        self._literal = ""
        self._literal_seen = 0

    @property
    def done(self) -> bool:
        """True once the root value is complete."""
        return self._state == _DONE

    @property
    def pending_number(self) -> str | None:
        """A number still open at the end of the input (it may yet grow), else None."""
        return "".join(self._number_parts) if self._state == _NUMBER_STATE else None

    def feed(self, chunk: str) -> None:
        """Consume `chunk`; raise `JsonSyntaxError` as soon as the text cannot be JSON."""
        index = 0
        size = len(chunk)
        while index < size:
            state = self._state
            if state == _STRING:
                index = self._string(chunk, index)
            elif state == _NUMBER_STATE:
                index = self._number(chunk, index)
            elif state == _LITERAL:
                index = self._literal_chars(chunk, index)
            elif state == _PREFIX:
                found = _ROOT_START.search(chunk, index)
                if found is None:
                    index = size
                else:
                    index = found.start()
                    self._state = _VALUE
            else:
                if chunk[index] in _SPACE:
                    index = _WS.match(chunk, index).end()  # type: ignore[union-attr]  # never None: a run of spaces
                if index < size:
                    index = self._structural(chunk, index)
        self._offset += size

    def _fail(self, message: str, index: int) -> JsonSyntaxError:
        return JsonSyntaxError(message, self._offset + index)

    def _structural(self, chunk: str, index: int) -> int:
        char = chunk[index]
        state = self._state
        if state in (_VALUE, _VALUE_OR_END):
            if char == "]" and state == _VALUE_OR_END:
                return self._close(chunk, index, is_object=False)
            return self._value_start(chunk, index)
        if state in (_KEY_OR_END, _KEY):
            if char == '"':
                whole = _WHOLE_KEY.match(chunk, index)
                if whole is not None:
                    self._sink.key(whole.group(1))
                    self._state = _VALUE
                    return whole.end()
                self._state = _STRING
                self._in_key = True
                self._key_parts = []
                return index + 1
            if char == "}" and state == _KEY_OR_END:
                return self._close(chunk, index, is_object=True)
            raise self._fail(f"expected a property name, got {char!r}", index)
        if state == _COLON:
            if char != ":":
                raise self._fail(f"expected ':', got {char!r}", index)
            self._state = _VALUE
            return index + 1
        if state == _COMMA_OR_END:
            is_object = self._stack[-1]
            if char == ",":
                self._state = _KEY if is_object else _VALUE
                return index + 1
            if char == ("}" if is_object else "]"):
                return self._close(chunk, index, is_object=is_object)
            raise self._fail(f"expected ',' or a closing bracket, got {char!r}", index)
        if self._allow_trailing:
            return len(chunk)
        raise self._fail(f"unexpected {char!r} after the end of the JSON value", index)

    def _value_start(self, chunk: str, index: int) -> int:
        char = chunk[index]
        if char == '"':
            whole = _WHOLE_STRING.match(chunk, index)
            if whole is not None:
                self._sink.string(whole.group(1))
                self._value_done()
                return whole.end()
            self._state = _STRING
            self._in_key = False
            self._sink.string_start()
            return index + 1
        if char in "{[":
            if len(self._stack) >= self._max_depth:
                raise self._fail(f"nesting deeper than {self._max_depth} levels", index)
            is_object = char == "{"
            self._stack.append(is_object)
            self._state = _KEY_OR_END if is_object else _VALUE_OR_END
            self._sink.open_container(is_object)
            return index + 1
        if char == "-" or "0" <= char <= "9":
            whole = _WHOLE_NUMBER.match(chunk, index)
            if whole is not None:
                text = whole.group()
                self._sink.scalar(float(text) if whole.group(1) or whole.group(2) else int(text))
                self._value_done()
                return whole.end()
            self._state = _NUMBER_STATE
            self._number_parts = []
            return self._number(chunk, index)
        if char in _LITERALS:
            self._state = _LITERAL
            self._literal = char
            self._literal_seen = 0
            return self._literal_chars(chunk, index)
        raise self._fail(f"expected a JSON value, got {char!r}", index)

    def _close(self, chunk: str, index: int, *, is_object: bool) -> int:
        self._stack.pop()
        self._sink.close_container()
        self._value_done()
        return index + 1

    def _value_done(self) -> None:
        self._state = _COMMA_OR_END if self._stack else _DONE

    def _string(self, chunk: str, index: int) -> int:
        size = len(chunk)
        while index < size:
            if self._escape:
                index = self._escape_chars(chunk, index)
                continue
            end = _STRING_RUN.match(chunk, index).end()  # type: ignore[union-attr]  # never None, as above
            if end > index:
                if self._high_surrogate:
                    raise self._fail("lone surrogate in string escape", index)
                if self._in_key:  # `_emit_text`, without a call of its own for most pieces of a stream
                    self._key_parts.append(chunk[index:end])
                else:
                    self._sink.string_chunk(chunk[index:end])
                index = end
                if index == size:
                    break
            char = chunk[index]
            if char == '"':
                if self._high_surrogate:
                    raise self._fail("lone surrogate in string escape", index)
                self._finish_string()
                return index + 1
            if char == "\\":
                self._escape = "\\"
                index += 1
                continue
            raise self._fail("control character in string", index)
        return index

    def _escape_chars(self, chunk: str, index: int) -> int:
        escape = self._escape
        need = 6 if len(escape) > 1 and escape[1] == "u" else 2
        if len(escape) == 1:
            escape += chunk[index]
            index += 1
            need = 6 if escape[1] == "u" else 2
        take = chunk[index : index + need - len(escape)]
        escape += take
        index += len(take)
        if len(escape) < need:
            self._escape = escape
            return index
        self._escape = ""
        if need == 2:
            if self._high_surrogate:
                raise self._fail("lone surrogate in string escape", index)
            text = _ESCAPES.get(escape[1])
            if text is None:
                raise self._fail(f"invalid escape {escape!r}", index)
            self._emit_text(text)
            return index
        digits = escape[2:]
        if not all(char in _HEX for char in digits):
            raise self._fail(f"invalid unicode escape {escape!r}", index)
        code = int(digits, 16)
        if 0xD800 <= code <= 0xDBFF:
            if self._high_surrogate:
                raise self._fail("lone surrogate in string escape", index)
            self._high_surrogate = chr(code)
        elif 0xDC00 <= code <= 0xDFFF:
            if not self._high_surrogate:
                raise self._fail("lone surrogate in string escape", index)
            pair = (self._high_surrogate + chr(code)).encode("utf-16-le", "surrogatepass")
            self._high_surrogate = ""
            self._emit_text(pair.decode("utf-16-le"))
        else:
            if self._high_surrogate:
                raise self._fail("lone surrogate in string escape", index)
            self._emit_text(chr(code))
        return index

    def _emit_text(self, text: str) -> None:
        if self._in_key:
            self._key_parts.append(text)
        else:
            self._sink.string_chunk(text)

    def _finish_string(self) -> None:
        if self._in_key:
            self._sink.key("".join(self._key_parts))
            self._key_parts = []
            self._state = _COLON
        else:
            self._sink.string_end()
            self._value_done()

    def _number(self, chunk: str, index: int) -> int:
        end = _NUMBER_RUN.match(chunk, index).end()  # type: ignore[union-attr]  # never None, as above
        self._number_parts.append(chunk[index:end])
        if end == len(chunk):
            return end
        self.finish_number(index=end)
        return end

    def finish_number(self, index: int = 0) -> None:
        """Complete an open number (a delimiter arrived, or the input ended)."""
        text = "".join(self._number_parts)
        self._number_parts = []
        match = _NUMBER.match(text)
        if match is None:
            raise self._fail(f"invalid number {text[:40]!r}", index)
        try:
            value: Any = float(text) if match.group(1) or match.group(2) else int(text)
        except ValueError:  # more digits than Python converts (sys.int_info.str_digits_check_threshold)
            raise self._fail("number too long", index) from None
        self._sink.scalar(value)
        self._value_done()

    def _literal_chars(self, chunk: str, index: int) -> int:
        word, value = _LITERALS[self._literal]
        missing = word[self._literal_seen :]
        part = chunk[index : index + len(missing)]
        if not missing.startswith(part):
            raise self._fail(f"invalid literal, expected {word!r}", index)
        self._literal_seen += len(part)
        index += len(part)
        if self._literal_seen == len(word):
            self._sink.scalar(value)
            self._value_done()
        return index
