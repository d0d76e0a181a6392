"""Hostile and unusual raw JSON schemas: no hang, no fetch, no constraint silently lost.

Each case is built at `OutputSchema(...)` time (what `StructuredOutput(...)` does), so a schema
that cannot be used is a `UserError` before any model call.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from so_middleware import ModelBehaviorError, StructuredOutput, UserError
from so_middleware.schema import OutputSchema, shape_hint

Checker = Any


def _object(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), **extra}


# ------------------------------------------------------------------------------------------ hangs


@pytest.mark.timeout(30)
def test_catastrophic_pattern_is_matched_in_linear_time() -> None:
    schema = OutputSchema(_object({"s": {"type": "string", "pattern": "^(a+)+$"}}))
    assert schema.validate_json('{"s": "aaaa"}') == {"s": "aaaa"}
    with pytest.raises(ModelBehaviorError, match="does not match"):
        schema.validate_json('{"s": "' + "a" * 30 + '!"}')
    with pytest.raises(ModelBehaviorError):
        schema.validate_json('{"s": "' + "a" * 100_000 + '!"}', lenient=True)


@pytest.mark.timeout(30)
def test_catastrophic_pattern_in_pattern_properties_and_property_names() -> None:
    schema = OutputSchema(
        {
            "type": "object",
            "patternProperties": {"^(a+)+$": {"type": "integer"}},
            "propertyNames": {"pattern": "^(b|a+)+$"},
        },
        strict=False,
    )
    with pytest.raises(ModelBehaviorError):
        schema.validate_json('{"' + "a" * 40 + '!": 1}')


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"^(?=a)a+$", "lookaround ('(?=...)')"),
        (r"(a)\1", "backreference '\\1'"),
        (r"(?<!x)y", "lookaround ('(?<!...)')"),
    ],
    ids=["lookahead", "backref", "lookbehind"],
)
def test_patterns_the_linear_engine_cannot_run_are_refused_at_construction(pattern: str, construct: str) -> None:
    with pytest.raises(UserError, match="linear-time regex engine") as raised:
        OutputSchema(_object({"s": {"type": "string", "pattern": pattern}}))
    assert "at /properties/s/pattern" in str(raised.value)
    assert construct in str(raised.value)
    with pytest.raises(UserError, match="linear-time regex engine"):
        StructuredOutput(schema=_object({"s": {"type": "string", "pattern": pattern}}))


def _ref_bomb(levels: int, fan_out: int, *, described: bool) -> dict[str, Any]:
    defs: dict[str, Any] = {f"L{levels}": {"type": "string"}}
    for level in range(levels):
        ref = {"$ref": f"#/$defs/L{level + 1}"}
        properties = {
            f"p{index}": ({**ref, "description": f"d{index}"} if described else ref) for index in range(fan_out)
        }
        defs[f"L{level}"] = _object(properties, additionalProperties=False)
    return {"$defs": defs, **_object({"root": {"$ref": "#/$defs/L0"}}, additionalProperties=False)}


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("levels", "fan_out", "described"),
    [(30, 2, True), (30, 2, False), (4, 40, True), (5, 24, False)],
    ids=["30x2-described", "30x2-bare", "4x40-described", "5x24-bare"],
)
def test_ref_bombs_are_refused_where_a_dialect_inlines_and_sent_with_their_refs_elsewhere(
    levels: int, fan_out: int, described: bool
) -> None:
    bomb = _ref_bomb(levels, fan_out, described=described)
    with pytest.raises(UserError, match="once its \\$refs are inlined; pass strict=False"):
        OutputSchema(bomb)
    with pytest.raises(UserError, match="once its \\$refs are inlined"):
        StructuredOutput(schema=bomb, strict=True)
    assert not StructuredOutput(schema=bomb).output_schema.is_strict_json_schema()  # the automatic default
    lenient = OutputSchema(bomb, strict=False)
    sent = lenient.json_schema("json-schema")
    assert sent["$defs"] == bomb["$defs"] and sent["properties"] == bomb["properties"]
    assert lenient.json_schema() == sent  # openai, not strict: as it is
    with pytest.raises(UserError, match="once its \\$refs are inlined"):
        lenient.check_profile("anthropic")


def test_small_ref_graphs_still_work(check_openai_strict: Checker) -> None:
    schema = OutputSchema(_ref_bomb(3, 3, described=True))
    check_openai_strict(schema.json_schema())
    assert shape_hint(schema.json_schema("json-schema")).count('"<d') == 27


@pytest.mark.timeout(60)
def test_a_chain_of_a_thousand_aliases_resolves(check_openai_strict: Checker, check_anthropic: Checker) -> None:
    defs: dict[str, Any] = {f"a{index}": {"$ref": f"#/$defs/a{index + 1}"} for index in range(1000)}
    defs["a1000"] = {"type": "string", "minLength": 1}
    raw = {"$defs": defs, **_object({"name": {"$ref": "#/$defs/a0", "description": "the name"}})}
    schema = OutputSchema(raw)
    strict = schema.json_schema()
    check_openai_strict(strict)
    assert strict["properties"]["name"]["type"] == "string"
    assert strict["properties"]["name"]["description"].startswith("the name")
    check_anthropic(schema.json_schema("anthropic"))
    assert shape_hint(schema.json_schema("json-schema")) == '{"name": "<the name>"}'
    assert schema.validate_json('{"name": "x"}') == {"name": "x"}
    with pytest.raises(ModelBehaviorError):
        schema.validate_json('{"name": ""}')


def test_refs_that_nest_too_deep_once_inlined_are_a_user_error_where_a_dialect_inlines() -> None:
    defs: dict[str, Any] = {"d150": {"type": "integer"}}
    for index in range(150):
        defs[f"d{index}"] = _object({"x": {"$ref": f"#/$defs/d{index + 1}", "description": "next"}})
    raw = {"$defs": defs, "$ref": "#/$defs/d0"}
    with pytest.raises(UserError, match="nests deeper than 100 levels"):
        OutputSchema(raw)
    lenient = OutputSchema(raw, strict=False)
    with pytest.raises(UserError, match="nests deeper than 100 levels"):
        lenient.check_profile("anthropic")
    value = {"x": 1}
    for _ in range(149):
        value = {"x": value}
    assert lenient.validate_json(json.dumps(value)) == value


# ------------------------------------------------------------------------------------ never fetch


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Recorder.hits.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def schema_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Recorder.hits = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("where", ["root", "property", "def", "with-id"])
def test_remote_refs_are_refused_and_never_fetched(schema_server: str, strict: bool, where: str) -> None:
    remote = f"{schema_server}/x.json"
    raw: dict[str, Any] = {
        "root": {"$ref": remote},
        "property": _object({"a": {"$ref": remote}}),
        "def": {"$defs": {"A": {"$ref": remote}}, **_object({"a": {"$ref": "#/$defs/A"}})},
        "with-id": {"$id": f"{schema_server}/root.json", **_object({"a": {"$ref": "x.json"}})},
    }[where]
    with pytest.raises(UserError, match="not a local reference"):
        OutputSchema(raw, strict=strict)
    assert _Recorder.hits == []


# ------------------------------------------------------------------------- constraints never lost

T_REQUIRES_B = {"T": _object({"b": {"type": "integer"}})}


def test_properties_beside_a_ref_are_merged(check_openai_strict: Checker, check_anthropic: Checker) -> None:
    raw = {"$defs": T_REQUIRES_B, **_object({"a": {"type": "string"}}), "$ref": "#/$defs/T"}
    schema = OutputSchema(raw)
    assert not schema.is_wrapped
    strict = schema.json_schema()
    check_openai_strict(strict)
    assert set(strict["properties"]) == {"a", "b"}
    anthropic = schema.json_schema("anthropic")
    check_anthropic(anthropic)
    assert set(anthropic["required"]) == {"a", "b"}
    with pytest.raises(ModelBehaviorError, match='"b" is a required property'):
        schema.validate_json('{"a": "x"}')
    assert schema.validate_json('{"a": "x", "b": 1}') == {"a": "x", "b": 1}


def test_a_type_beside_a_ref_keeps_the_target_constraints(check_openai_strict: Checker) -> None:
    raw = {
        "$defs": {"Code": {"type": "string", "pattern": "^[A-Z]{3}$"}},
        **_object({"code": {"type": "string", "$ref": "#/$defs/Code", "description": "a code"}}),
    }
    schema = OutputSchema(raw)
    code = schema.json_schema()["properties"]["code"]
    check_openai_strict(schema.json_schema())
    assert code == {"description": "a code", "type": "string", "pattern": "^[A-Z]{3}$"}
    with pytest.raises(ModelBehaviorError):
        schema.validate_json('{"code": "abcd"}')


def test_a_type_beside_a_ref_of_another_type_is_refused() -> None:
    raw = {"$defs": {"N": {"type": "integer"}}, **_object({"code": {"type": "string", "$ref": "#/$defs/N"}})}
    with pytest.raises(UserError, match=r"code: cannot merge.*no type in common"):
        OutputSchema(raw)


def test_ref_and_all_of_ref_are_both_kept(check_anthropic: Checker) -> None:
    raw = {
        "$defs": {"A": _object({"a": {"type": "string"}}), "B": _object({"b": {"type": "integer"}})},
        **_object({"x": {"$ref": "#/$defs/A", "allOf": [{"$ref": "#/$defs/B"}]}}),
    }
    schema = OutputSchema(raw)
    x = schema.json_schema("anthropic")["properties"]["x"]
    check_anthropic(schema.json_schema("anthropic"))
    assert set(x["required"]) == {"a", "b"} and set(x["properties"]) == {"a", "b"}
    assert set(schema.json_schema()["properties"]["x"]["properties"]) == {"a", "b"}


def test_a_one_entry_all_of_keeps_the_tighter_constraints() -> None:
    raw = _object(
        {"n": {"type": "integer", "maximum": 10, "allOf": [{"maximum": 5, "minimum": 1}]}},
        allOf=[{"required": ["m"], "properties": {"m": {"type": "boolean"}}}],
    )
    raw["required"] = ["n"]
    schema = OutputSchema(raw)
    assert not schema.is_wrapped
    anthropic = schema.json_schema("anthropic")
    assert set(anthropic["required"]) == {"n", "m"}
    strict = schema.json_schema()
    assert strict["properties"]["n"] == {"type": "integer", "minimum": 1, "maximum": 5}
    with pytest.raises(ModelBehaviorError):
        schema.validate_json('{"n": 7, "m": true}')


def test_parts_that_cannot_be_merged_are_refused_when_strict_and_kept_as_written_otherwise() -> None:
    raw = {
        "$defs": {"Closed": _object({"b": {"type": "integer"}}, additionalProperties=False)},
        **_object({"a": {"type": "string"}}),
        "$ref": "#/$defs/Closed",
    }
    with pytest.raises(UserError, match="additionalProperties: false"):
        OutputSchema(raw)
    loose = OutputSchema(raw, strict=False)
    assert loose.json_schema("openai-strict") == loose.json_schema("json-schema")
    assert loose.json_schema("json-schema")["properties"]["response"]["$ref"] == "#/$defs/Closed"
    with pytest.raises(ModelBehaviorError):  # both parts apply: a is required, and not allowed
        loose.validate_json('{"a": "x", "b": 1}')


@pytest.mark.parametrize(
    "raw",
    [
        {"$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}}, "$ref": "#/$defs/A"},
        {
            "$defs": {"A": {"allOf": [{"$ref": "#/$defs/B"}]}, "B": {"anyOf": [{"$ref": "#/$defs/A"}]}},
            "$ref": "#/$defs/A",
        },
        _object({"a": {"$ref": "#/$defs/A"}}, **{"$defs": {"A": {"$ref": "#/$defs/A", "description": "x"}}}),
        {"allOf": [{"$ref": "#"}], "type": "object"},
    ],
    ids=["self-allOf", "allOf-anyOf-pair", "self-alias", "root-allOf"],
)
def test_ref_cycles_that_never_go_deeper_are_refused(raw: dict[str, Any]) -> None:
    for strict in (True, False):
        with pytest.raises(UserError, match="cycle"):
            OutputSchema(raw, strict=strict)


def test_recursion_through_properties_is_still_fine(check_openai_strict: Checker) -> None:
    raw = {
        "$defs": {
            "Node": _object({"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}})
        },
        "$ref": "#/$defs/Node",
    }
    schema = OutputSchema(raw)
    assert not schema.is_wrapped
    check_openai_strict(schema.json_schema())
    assert schema.validate_json('{"v": 1, "kids": [{"v": 2, "kids": []}]}')["kids"][0]["v"] == 2


def test_a_sub_schema_with_its_own_id_and_refs_is_refused() -> None:
    raw = {
        "$defs": {"T": {"type": "integer"}},
        **_object(
            {
                "inner": {
                    "$id": "https://example.com/inner.json",
                    "$defs": {"T": {"type": "string"}},
                    **_object({"t": {"$ref": "#/$defs/T"}}),
                }
            }
        ),
    }
    with pytest.raises(UserError, match="own \\$id"):
        OutputSchema(raw, strict=False)


@pytest.mark.parametrize(
    ("name", "ref"),
    [("a b", "#/$defs/a%20b"), ("a/b", "#/$defs/a~1b"), ("a~b", "#/$defs/a~0b"), ("é", "#/$defs/%C3%A9")],
    ids=["percent-space", "slash", "tilde", "percent-utf8"],
)
def test_json_pointer_escapes_are_decoded(name: str, ref: str, check_openai_strict: Checker) -> None:
    raw = {"$defs": {name: {"type": "integer", "minimum": 3}}, **_object({"n": {"$ref": ref}})}
    schema = OutputSchema(raw)
    check_openai_strict(schema.json_schema())
    assert schema.validate_json('{"n": 4}') == {"n": 4}
    with pytest.raises(ModelBehaviorError):
        schema.validate_json('{"n": 2}')
    assert shape_hint(schema.json_schema("json-schema")) == '{"n": <integer>}'


@pytest.mark.parametrize(
    "raw",
    [
        {"properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]}]},
        {
            "$defs": {"O": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}},
            "$ref": "#/$defs/O",
        },
    ],
    ids=["typeless-with-properties", "object-one-allOf", "root-ref"],
)
def test_object_roots_are_not_wrapped(raw: dict[str, Any], check_openai_strict: Checker) -> None:
    schema = OutputSchema(raw)
    assert not schema.is_wrapped
    strict = schema.json_schema()
    check_openai_strict(strict)
    assert list(strict["properties"]) == ["a"]
    assert schema.validate_json('{"a": "x"}') == {"a": "x"}


def test_dangling_ref_is_a_user_error_even_when_not_strict() -> None:
    raw = _object({"a": {"$ref": "#/$defs/Missing"}})
    with pytest.raises(UserError, match="points to nothing"):
        OutputSchema(raw, strict=False)
    with pytest.raises(UserError, match="points to nothing"):
        StructuredOutput(schema=raw, strict=False)


def test_an_enum_that_lists_a_value_twice_is_sent_with_it_once() -> None:
    values = [f"value-{index:04d}" for index in range(120)]
    raw = _object({"colour": {"enum": [*values, "value-0007"]}, "shape": {"enum": [{"a": 1}, {"a": 1}, [1]]}})
    schema = OutputSchema(raw, strict=False)
    assert schema.json_schema("json-schema")["properties"]["shape"]["enum"] == [{"a": 1}, [1]]
    for profile in ("json-schema", "openai-strict"):
        assert schema.json_schema(profile)["properties"]["colour"]["enum"] == values
    assert (
        OutputSchema(_object({"colour": {"enum": [*values, "value-0007"]}})).json_schema("anthropic")["properties"][
            "colour"
        ]["enum"]
        == values
    )
    assert schema.validate_json('{"colour": "value-0007", "shape": [1]}') == {"colour": "value-0007", "shape": [1]}
    assert raw["properties"]["colour"]["enum"][120] == "value-0007"  # the caller's schema is untouched


@pytest.mark.parametrize("described", [False, True])
def test_the_deepest_accepted_ref_chain_renders_every_profile(described: bool) -> None:
    """100 levels once inlined is accepted, and every walk over it stays clear of the recursion limit."""
    defs: dict[str, Any] = {"d100": {"type": "integer"}}
    for index in range(100):
        ref: dict[str, Any] = {"$ref": f"#/$defs/d{index + 1}"}
        if described:
            ref["description"] = "next"
        defs[f"d{index}"] = _object({"x": ref}, additionalProperties=False)
    schema = OutputSchema({"$defs": defs, "$ref": "#/$defs/d0"}, strict=False)
    for profile in ("openai-strict", "json-schema"):
        assert shape_hint(schema.json_schema(profile)).startswith('{"x": {"x": ')
    with pytest.raises(UserError, match=r"recursive|levels of object nesting"):
        OutputSchema({"$defs": defs, "$ref": "#/$defs/d0"})
    text = '{"x": ' * 100 + "1" + "}" * 100
    assert schema.validate_json(text)["x"]["x"]["x"]


def test_draft4_boolean_bounds_are_not_merged_as_numbers() -> None:
    part = {"minimum": 3, "exclusiveMinimum": False}
    raw = _object({"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "allOf": [part]}})
    raw["$schema"] = "http://json-schema.org/draft-04/schema#"
    with pytest.raises(UserError, match="n: cannot merge its parts into one schema: 'exclusiveMinimum' is given twice"):
        OutputSchema(raw)
    assert not OutputSchema(raw, strict=False).is_strict_json_schema()  # validated by the schema as written
