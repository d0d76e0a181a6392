"""Incremental partial parsing: values grow field by field, items complete one by one, and any
chunking gives the same final value as a one-shot parse."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError, field_validator
from typing_extensions import TypedDict

from so_middleware import ModelBehaviorError
from so_middleware.schema import OutputSchema, PartialParser


class Address(BaseModel):
    city: str
    zip: str


class Person(BaseModel):
    name: str
    age: int
    address: Address
    tags: list[str] = []
    note: str | None = None


class Upper(BaseModel):
    word: str

    @field_validator("word")
    @classmethod
    def upper(cls, value: str) -> str:
        return value.upper()


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


def _stream(parser: Any, text: str, size: int) -> list[Any]:
    snapshots = []
    for start in range(0, len(text), size):
        if parser.feed(text[start : start + size]):
            snapshots.append(repr(parser.value))
    return snapshots


def test_model_grows_field_by_field() -> None:
    parser = OutputSchema(Person).partial_parser()
    assert isinstance(parser, PartialParser)
    assert parser.value is None
    parser.feed('{"name": "Al')
    assert isinstance(parser.value, Person)
    assert parser.value.name == "Al" and parser.value.age is None and parser.value.address is None
    parser.feed('ice", "age": 3')
    assert parser.value.name == "Alice" and parser.value.age is None  # a number may still grow
    parser.feed('0, "address": {"city": "Os')
    assert parser.value.age == 30
    assert isinstance(parser.value.address, Address) and parser.value.address.city == "Os"
    parser.feed('lo", "zip": "0150"}, "tags": ["a"')
    assert parser.value.address == Address(city="Oslo", zip="0150")  # closed subtree: validated
    assert parser.value.tags == ["a"]
    parser.feed("]}")
    final = parser.finish()
    assert final == Person(name="Alice", age=30, address=Address(city="Oslo", zip="0150"), tags=["a"])
    assert parser.value == final


def test_strings_grow_in_place_and_feed_reports_changes() -> None:
    parser = OutputSchema(list[str]).partial_parser()
    assert parser.feed('{"response": ["ab') is True
    assert parser.value == ["ab"]
    assert parser.feed("cd") is True
    assert parser.value == ["abcd"]
    assert parser.feed("   ") is True  # whitespace inside a string is content
    assert parser.feed('"  ') is True
    assert parser.feed("   ") is False
    assert parser.value == ["abcd   "]


def test_a_string_read_after_every_piece_is_right_and_a_kept_one_never_changes() -> None:
    """The open string grows in place when nothing else holds it; a string the caller kept
    (the field's value, or a whole snapshot) keeps the text it had."""
    parser = OutputSchema(Person).partial_parser()
    parser.feed('{"name": "Ad')
    kept = parser.value.name
    pieces = ["a", " L", "ov\\u00e9", "lace \\u2713", '\\"q\\"', "", " ✓"]
    expected = "Ad"
    for piece in pieces:
        parser.feed(piece)
        value = parser.value
        assert value is not None
        expected += json.loads(f'"{piece}"')
        assert value.name == expected
    assert kept == "Ad"
    snapshot = parser.value.model_copy()
    parser.feed('!", "age": 36, "address": {"city": "Lon')
    parser.feed('don", "zip": "N1"}, "note": "x')
    assert snapshot.name == expected and parser.value.name == expected + "!"
    parser.feed('y"}')
    assert parser.finish() == Person(name=expected + "!", age=36, address=Address(city="London", zip="N1"), note="xy")


def test_a_list_item_string_grows_piece_by_piece_across_widening_characters() -> None:
    parser = OutputSchema(list[str]).partial_parser()
    parser.feed('{"response": ["')
    seen = []
    for piece in ("a", "é", "β", "✓", "😀", "z"):
        parser.feed(piece)
        seen.append(parser.value[0])
    assert seen == ["a", "aé", "aéβ", "aéβ✓", "aéβ✓😀", "aéβ✓😀z"]


def test_list_items_complete_one_by_one() -> None:
    items = [{"name": f"p{index}", "age": index, "address": {"city": "c", "zip": "z"}} for index in range(4)]
    text = json.dumps({"response": items})
    parser = OutputSchema(list[Person]).partial_parser()
    seen: list[Person] = []
    counts = []
    for char in text:
        parser.feed(char)
        fresh = parser.pop_completed()
        seen.extend(fresh)
        counts.append(len(seen))
    assert seen == [Person.model_validate(item) for item in items]
    assert all(isinstance(item, Person) for item in seen)
    assert sorted(set(counts)) == [0, 1, 2, 3, 4]
    assert parser.completed_items == seen
    assert parser.pop_completed() == []


def test_scalar_list_items_and_unwrapped_lenient_root() -> None:
    parser = OutputSchema(list[int]).partial_parser(lenient=True)
    parser.feed("Here: ```json\n[1, 2")
    assert parser.pop_completed() == [1]
    parser.feed(", 3]\n```")
    assert parser.pop_completed() == [2, 3]
    assert parser.value == [1, 2, 3]
    assert parser.finish() == [1, 2, 3]


def test_invalid_item_raises_model_behavior_error() -> None:
    parser = OutputSchema(list[Address]).partial_parser()
    parser.feed('{"response": [{"city": "a", "zip": "b"}, ')
    assert len(parser.pop_completed()) == 1
    with pytest.raises(ModelBehaviorError, match="item 1"):
        parser.feed('{"city": 3}')


def test_validators_run_on_closed_subtrees_only() -> None:
    parser = OutputSchema(list[Upper]).partial_parser()
    parser.feed('{"response": [{"word": "abc')
    assert parser.value[0].word == "abc"
    parser.feed('"}')
    assert parser.value[0].word == "ABC"


def test_dataclass_and_typeddict_partials() -> None:
    parser = OutputSchema(Point).partial_parser()
    parser.feed('{"x": 1, "y"')
    assert isinstance(parser.value, Point) and parser.value.x == 1 and parser.value.y is None
    parser.feed(": 2}")
    assert parser.finish() == Point(1, 2)
    movie = OutputSchema(Movie).partial_parser()
    movie.feed('{"title": "He')
    assert movie.value == {"title": "He"}


def test_wrapped_primitive_and_invalid_json() -> None:
    parser = OutputSchema(int).partial_parser()
    parser.feed('{"response": 4')
    assert parser.value is None
    parser.feed("2}")
    assert parser.value == 42 and parser.finish() == 42
    broken = OutputSchema(int).partial_parser()
    with pytest.raises(ModelBehaviorError, match="not valid JSON"):
        broken.feed('{"response": 42]')


def test_truncated_stream_fails_at_finish() -> None:
    parser = OutputSchema(Person).partial_parser()
    parser.feed('{"name": "a", "age": 1')
    with pytest.raises(ModelBehaviorError):
        parser.finish()


def test_bytes_chunks_split_inside_utf8() -> None:
    data = json.dumps({"response": ["héllo ☃ 😀"]}, ensure_ascii=False).encode()
    parser = OutputSchema(list[str]).partial_parser()
    for index in range(len(data)):
        parser.feed(data[index : index + 1])
    assert parser.finish() == ["héllo ☃ 😀"]
    bad = OutputSchema(list[str]).partial_parser()
    with pytest.raises(ModelBehaviorError, match="UTF-8"):
        bad.feed(b'{"response": ["\xff\xfe"]}')


def test_str_and_bytes_chunks_mix_in_one_stream() -> None:
    """A stream may start with str chunks and go on with bytes (the decoder is made when the first
    bytes come); a plain-text stream replaces what is not UTF-8."""
    parser = OutputSchema(list[str]).partial_parser()
    for chunk in ['{"response": ["h', "é".encode()[:1], "é".encode()[1:] + b'", "x"', "]}"]:
        parser.feed(chunk)
    assert parser.finish() == ["hé", "x"]
    text = OutputSchema(str).partial_parser()
    for chunk in ["a", "é".encode()[:1], "é".encode()[1:], b"\xff", "z"]:
        text.feed(chunk)
    assert text.finish() == "aé\ufffdz"


DOCUMENTS: list[tuple[Any, Any]] = [
    (Person, {"name": 'A\\"b', "age": -12, "address": {"city": "O\u00e9", "zip": "\\u00e9"}, "tags": ["x", "y"]}),
    (list[Person], {"response": [{"name": "n", "age": 1, "address": {"city": "c", "zip": "z"}, "note": None}]}),
    (list[int], {"response": [0, -1, 25, 3]}),
    (list[float], {"response": [1.5, -0.25e-3, 1e10]}),
    (dict, {"response": 0}),
    (list[bool], {"response": [True, False]}),
    (Optional[str], {"response": None}),
    (tuple[int, str], {"response": [1, 'tab\tquote"slash\\/ \U0001f600']}),
    (Movie, {"title": "T", "year": 2000}),
]


def _doc_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True).replace('"\\\\u00e9"', '"\\u00e9"')


@pytest.mark.parametrize(("output_type", "value"), DOCUMENTS, ids=[str(index) for index in range(len(DOCUMENTS))])
def test_every_split_position_gives_the_one_shot_value(output_type: Any, value: Any) -> None:
    schema = OutputSchema(output_type, strict=False)
    for text in (_doc_text(value), json.dumps(value, indent=2, ensure_ascii=False)):
        expected = schema.validate_json(text)
        for split in range(len(text) + 1):
            for second in (split, min(len(text), split + 3)):
                parser = schema.partial_parser()
                for part in (text[:split], text[split:second], text[second:]):
                    parser.feed(part)
                assert parser.finish() == expected
                assert parser.value == expected


def test_chunk_size_does_not_change_the_value() -> None:
    items = [{"name": "x" * 50, "age": index, "address": {"city": "é" * 10, "zip": "1"}} for index in range(20)]
    text = json.dumps({"response": items})
    schema = OutputSchema(list[Person])
    expected = schema.validate_json(text)
    for size in (1, 2, 3, 7, 16, 1000):
        parser = schema.partial_parser()
        _stream(parser, text, size)
        assert parser.value == expected
        assert parser.completed_items == expected


def test_deep_nesting_is_a_model_behavior_error() -> None:
    parser = OutputSchema(list[Any], strict=False).partial_parser()
    with pytest.raises(ModelBehaviorError, match="nesting"):
        parser.feed('{"response": ' + "[" * 100_000)


def test_plain_text_parser() -> None:
    parser = OutputSchema(str).partial_parser()
    assert parser.value == ""
    assert parser.feed(b"caf\xc3") and parser.feed(b"\xa9")
    assert parser.value == "café"
    assert parser.completed_items == [] and parser.pop_completed() == []


class Pet(BaseModel):
    name: str
    tags: list[str] = []


class People(BaseModel):
    title: str
    people: list[Person]
    pets: list[Pet] = []


def _popped(parser: Any, text: str, size: int) -> list[Any]:
    popped = []
    for start in range(0, len(text), size):
        parser.feed(text[start : start + size])
        popped.extend(parser.pop_completed_items())
    return popped


@pytest.mark.parametrize("size", [1, 4, 64])
def test_items_of_lists_inside_a_model_pop_one_by_one_with_their_path(size: int) -> None:
    people = [{"name": f"p{index}", "age": index, "address": {"city": "c", "zip": "z"}} for index in range(3)]
    value = {"title": "t", "people": people, "pets": [{"name": "rex", "tags": ["a", "b"]}]}
    text = json.dumps(value)
    parser = OutputSchema(People).partial_parser()
    popped = _popped(parser, text, size)
    assert [item.path for item in popped] == [("people", 0), ("people", 1), ("people", 2), ("pets", 0)]
    assert [item.list_path for item in popped] == [("people",)] * 3 + [("pets",)]
    assert [item.value for item in popped] == [Person.model_validate(p) for p in people] + [
        Pet(name="rex", tags=["a", "b"])
    ]
    # the pet's own tags came with the pet, not one by one
    assert parser.completed_items == [item.value for item in popped]
    assert parser.finish() == People.model_validate(value)


def test_an_item_pops_as_soon_as_it_closes() -> None:
    parser = OutputSchema(People).partial_parser()
    parser.feed('{"title": "t", "people": [{"name": "a", "age": 1, "address": {"city": "c", "zip": "z"}}')
    assert [item.path for item in parser.pop_completed_items()] == [("people", 0)]
    parser.feed(', {"name": "b", "age": 2, "address": {"city": "c", "zip": "z"}}')
    assert parser.pop_completed() == [Person(name="b", age=2, address=Address(city="c", zip="z"))]


def test_root_list_items_keep_their_values_and_get_index_paths() -> None:
    text = json.dumps({"response": [1, 2, 3]})
    parser = OutputSchema(list[int]).partial_parser()
    assert [(item.path, item.value) for item in _popped(parser, text, 2)] == [((0,), 1), ((1,), 2), ((2,), 3)]
    lenient = OutputSchema(list[int]).partial_parser(lenient=True)
    assert [item.path for item in _popped(lenient, "Sure: [4, 5]", 3)] == [(0,), (1,)]


def test_lists_in_a_dict_pop_with_the_key_in_the_path() -> None:
    parser = OutputSchema(dict[str, list[int]], strict=False).partial_parser()
    assert [item.path for item in _popped(parser, '{"a": [1], "b": [2, 3]}', 5)] == [("a", 0), ("b", 0), ("b", 1)]


def test_an_invalid_nested_item_names_its_list() -> None:
    parser = OutputSchema(People).partial_parser()
    with pytest.raises(ModelBehaviorError, match=r"item 1 of people in People"):
        parser.feed(
            '{"title": "t", "people": [{"name": "a", "age": 1, "address": {"city": "c", "zip": "z"}}, {"name": 5}]'
        )


class Scalars(BaseModel):
    word: str
    count: int
    ratio: float
    flag: bool
    whole: float


@pytest.mark.parametrize("output_type", [list[float], list[int], list[bool], list[str]])
def test_closed_scalars_take_the_type_pydantic_gives(output_type: Any) -> None:
    """A closed scalar is shown as pydantic validates it: an int where a float is asked becomes a float,
    a bool is no int (a list item is refused as pydantic refuses it)."""
    document = '[1, 2.5, true, "x"]'
    expected: list[Any] = []
    for item in json.loads(document):
        try:
            expected.append(TypeAdapter(output_type.__args__[0]).validate_python(item))
        except ValidationError:
            break
    parser = OutputSchema(output_type).partial_parser(lenient=True)  # the list unwrapped
    seen: list[Any] = []
    try:
        for piece in document:
            parser.feed(piece)
            seen.extend(parser.pop_completed())
    except ModelBehaviorError:
        pass
    assert seen == expected and [type(value) for value in seen] == [type(value) for value in expected]


def test_closed_scalar_fields_show_the_typed_value() -> None:
    parser = OutputSchema(Scalars).partial_parser()
    parser.feed('{"word": "a", "count": 3, "ratio": 0.5, "flag": false, "whole": 2, "x": 1')
    value = parser.value
    assert (value.word, value.count, value.ratio, value.flag, value.whole) == ("a", 3, 0.5, False, 2.0)
    assert [type(v) for v in (value.word, value.count, value.ratio, value.flag, value.whole)] == [
        str, int, float, bool, float,
    ]  # fmt: skip


def test_a_long_string_read_after_every_piece_is_right_and_a_kept_one_never_changes() -> None:
    """Past a few hundred characters the open string grows in place: each read is still right, and a
    string the caller kept keeps its text."""
    parser = OutputSchema(Person).partial_parser()
    parser.feed('{"name": "' + "a" * 600)
    kept = parser.value.name
    expected = "a" * 600
    for piece in ["b", "cd", "\\u00e9", "", "✓" * 3]:
        parser.feed(piece)
        expected += json.loads(f'"{piece}"')
        assert parser.value.name == expected
    assert kept == "a" * 600
    parser.feed('", "age": 1, "address": {"city": "c", "zip": "z"}}')
    assert parser.finish().name == expected


class _Numbers(BaseModel):
    whole: int
    part: float
    tiny: float
    items: list[float]
    flag: bool | None = None


WHOLE_TOKEN_DOCUMENTS: list[tuple[Any, str]] = [
    (Person, '{"name": "Ada Lovelace", "age": 36, "address": {"city": "London", "zip": "N1"}, "tags": ["a", "b"]}'),
    (Person, '{"name":"","age":-0,"address":{"city":"c","zip":"9"},"tags":[],"note":null}'),
    (Person, '{ "name" : "q\\"uote" , "age" : 7 ,\n "address" : { "city" : "c" , "zip" : "z" } , "tags" : [ "t" ] }'),
    (_Numbers, '{"whole": 12, "part": 1.5e3, "tiny": -0.25E-2, "items": [0, 1.0, 2e1], "flag": true}'),
    (list[int], '{"response": [1, 22, 333, -4444, 0]}'),
    (dict[str, str], '{"k": "v", "k2": "v2"}'),
]


@pytest.mark.parametrize(
    ("output_type", "text"), WHOLE_TOKEN_DOCUMENTS, ids=[str(i) for i in range(len(WHOLE_TOKEN_DOCUMENTS))]
)
def test_tokens_read_whole_give_the_values_of_tokens_read_a_character_at_a_time(output_type: Any, text: str) -> None:
    """Keys, strings and numbers that arrive whole in one piece are read in one step; after every
    piece the value, the items popped and the final value are those of the same text fed one
    character at a time (which reads every token piece by piece)."""
    schema = OutputSchema(output_type, strict=False)
    by_character = schema.partial_parser()
    after: list[str] = []
    popped: list[Any] = []
    for character in text:
        by_character.feed(character)
        popped.extend(by_character.pop_completed())
        after.append(repr(by_character.value))
    for size in range(2, len(text) + 1):
        parser = schema.partial_parser()
        whole_popped: list[Any] = []
        for start in range(0, len(text), size):
            parser.feed(text[start : start + size])
            whole_popped.extend(parser.pop_completed())
            end = min(start + size, len(text))
            assert repr(parser.value) == after[end - 1], (size, text[:end])
        assert whole_popped == popped
        assert parser.finish() == by_character.finish() == schema.validate_json(text)


@pytest.mark.parametrize("text", ['{"age": 0123, "name": "x"}', '{"age": 1-2, "name": "x"}', '{"age": 1e999, "name": "x"}',
                                  '{"age": 12345678901234567890123, "name": "x"}'])  # fmt: skip
def test_a_number_read_whole_fails_or_reads_as_one_read_piece_by_piece(text: str) -> None:
    """A number in one piece with its delimiter is refused, or read, exactly as when it comes a digit at a time."""
    schema = OutputSchema(dict[str, Any], strict=False)
    outcomes = []
    for size in (1, len(text)):
        parser = schema.partial_parser()
        try:
            for start in range(0, len(text), size):
                parser.feed(text[start : start + size])
            outcomes.append(repr(parser.value))
        except ModelBehaviorError as error:
            # the position of a number too large and the output shown are those of the text fed so far
            outcomes.append(f"error: {str(error).partition(chr(10))[0].partition(' at character')[0]}")
    assert outcomes[0] == outcomes[1]
