"""Property test: random hostile JSON schemas either build or raise `UserError`, never anything else.

The generator mixes every keyword the schema layer reads with the values that broke it before:
local, remote, dangling and percent-encoded `$ref`s, `$ref` beside other keywords, `allOf` of
refs, cycles, nested `$id`s, catastrophic and unsupported patterns, non-JSON defaults and
bounds, empty and duplicated enums. A schema that builds must then render every profile (or
raise `UserError`), give a skeleton, and read any answer as a value or a `ModelBehaviorError`.
Examples are derandomized, so every run checks the same schemas; the test's timeout is the bound.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from so_middleware import ModelBehaviorError, UserError
from so_middleware.schema import OutputSchema, shape_hint

DEF_NAMES = ["A", "B", "a b", "c/d", "e~f"]
REFS = [
    "#",
    "#/$defs/A",
    "#/$defs/B",
    "#/$defs/a%20b",
    "#/$defs/c~1d",
    "#/$defs/e~0f",
    "#/$defs/Missing",
    "#/properties/x",
    "#anchor",
    "http://127.0.0.1:9/remote.json",
    "other.json#/$defs/A",
    "",
]
PATTERNS = ["^(a+)+$", "^[a-z]{3}$", "(?=x)", r"(a)\1", "[", "^\\d+$", "(x|x)*y"]
ANSWERS = ["{}", "[]", '"x"', "1", "null", '{"x": "aaaaaaaaaaaaaaaaaaaaaaaa!"}', '{"response": [1, {"a": NaN}]}']

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([1.5, math.nan, math.inf]),
    st.text(max_size=3),
    st.just({1, 2}),
    st.just(b"x"),
)
types = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null", "nonsense"])


def _schemas(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keyword = st.one_of(
        st.tuples(st.just("type"), types | st.lists(types, max_size=3)),
        st.tuples(
            st.just("properties"), st.dictionaries(st.sampled_from(["x", "y", "enum", "$ref"]), children, max_size=3)
        ),
        st.tuples(st.just("required"), st.lists(st.sampled_from(["x", "y", "z"]), max_size=3)),
        st.tuples(st.just("items"), children),
        st.tuples(st.just("additionalProperties"), st.booleans() | children),
        st.tuples(st.sampled_from(["allOf", "anyOf", "oneOf"]), st.lists(children, max_size=3)),
        st.tuples(st.just("$ref"), st.sampled_from(REFS)),
        st.tuples(st.just("enum"), st.lists(scalars, max_size=3)),
        st.tuples(st.just("const"), scalars),
        st.tuples(st.just("pattern"), st.sampled_from(PATTERNS)),
        st.tuples(st.sampled_from(["minimum", "maximum", "minItems", "maxLength"]), scalars),
        st.tuples(st.sampled_from(["default", "description", "title"]), scalars),
        st.tuples(st.just("$id"), st.sampled_from(["https://example.com/s.json", "inner"])),
        st.tuples(st.just("not"), children),
    )
    return st.lists(keyword, max_size=5).map(dict)


SCHEMAS = st.recursive(st.just({}) | st.builds(dict, type=types), _schemas, max_leaves=12)
ROOTS = st.tuples(SCHEMAS, st.dictionaries(st.sampled_from(DEF_NAMES), SCHEMAS, max_size=4)).map(
    lambda pair: {**pair[0], "$defs": pair[1]} if pair[1] else pair[0]
)


@pytest.mark.timeout(600)
@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(raw=ROOTS, strict=st.booleans())
def test_hostile_schemas_build_or_raise_user_error(raw: dict[str, Any], strict: bool) -> None:
    try:
        schema = OutputSchema(raw, strict=strict)
    except UserError as exc:
        assert str(exc) and len(str(exc)) < 2_000
        return
    for profile in ("openai-strict", "anthropic", "json-schema"):
        try:
            rendered = schema.json_schema(profile)  # type: ignore[arg-type]
        except UserError:
            continue
        assert isinstance(shape_hint(rendered), str)
    for answer in ANSWERS:
        for lenient in (False, True):
            with contextlib.suppress(ModelBehaviorError):
                schema.validate_json(answer, lenient=lenient)
            parser = schema.partial_parser(lenient=lenient)
            with contextlib.suppress(ModelBehaviorError):
                parser.feed(answer)
                parser.finish()


def test_the_generator_reaches_both_outcomes() -> None:
    """Guards the property test against a generator that only ever builds, or only ever fails."""
    built = OutputSchema(
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/a%20b"}}, "$defs": {"a b": {"type": "string"}}}
    )
    assert not built.is_wrapped
    with pytest.raises(UserError):
        OutputSchema({"$ref": "http://127.0.0.1:9/remote.json"})
