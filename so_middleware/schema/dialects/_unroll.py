"""Unroll a recursive schema to a bounded depth, for providers that refuse recursion.

Anthropic ("Circular reference detected in schema definitions"), Bedrock, Ollama and Gemini's
OpenAPI form take no cycle of `$ref`s. Such a schema is sent with every `$ref` inlined and each
recursive definition entered at most `depth` times on any path; below that, the recursion is cut
where the data allows it to stop:

- an optional property that would recurse is left out;
- an `anyOf`/`oneOf` branch that would recurse is left out (the others remain);
- an array whose items would recurse, and that may be empty, becomes an empty array
  (`maxItems: 0`);
- anything else that would recurse (a required property, a tuple position) cuts its parent in
  turn, up to the root, where the type cannot be unrolled at all (`UserError`).

The answer is still validated against the full type, so a value deeper than the unrolled schema
is read exactly as the type says.
"""

from __future__ import annotations

from typing import Any, Final

from ...core import UserError
from .._refs import ANNOTATIONS, MAX_EXPANDED_NODES
from .._schema_tools import cyclic_definitions, definitions_of, ref_target

__all__ = ["DEFAULT_RECURSION_DEPTH", "is_recursive", "unroll_recursion"]

DEFAULT_RECURSION_DEPTH: Final = 3
"""How many times one recursive definition may nest on a path of the unrolled schema."""

_DEF_KEYS = ("$defs", "definitions")
_BRANCHES = ("anyOf", "oneOf")
# Sub-schemas a value need not satisfy to be valid data of the type: dropped when they would recurse.
_DROPPABLE = ("not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties")
_MAP_KEYWORDS = ("patternProperties", "dependentSchemas")
_NULL = {"type": "null"}


class _Cut(Exception):
    """The recursion stops here: the caller decides how its node can do without this part.

    `empty` is the node's stand-in where the data lets it stop without leaving it out: an array
    that may be empty, as an empty array.
    """

    def __init__(self, empty: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.empty = empty


def is_recursive(schema: dict[str, Any]) -> bool:
    """True when some `$ref` of the schema can reach itself (or the root)."""
    return bool(cyclic_definitions(schema))


def unroll_recursion(schema: dict[str, Any], *, depth: int, what: str, provider: str) -> dict[str, Any]:
    """`schema` with every `$ref` inlined and its recursion cut below `depth` levels.

    Raises `UserError` naming `what` and `provider` when the recursion cannot stop (a required
    property or a non-empty list that always recurses).
    """
    if depth < 1:
        raise UserError(f"recursion_depth must be at least 1, got {depth}.")
    body = {key: value for key, value in schema.items() if key not in _DEF_KEYS}
    unroller = _Unroller(definitions_of(schema), body, depth)
    try:
        unrolled: dict[str, Any] = unroller.node(body, ("#",))
        return unrolled
    except _Cut as cut:
        if cut.empty is not None:
            return cut.empty
        raise UserError(
            f"Cannot unroll the recursive type {what} for {provider}: every value of it recurses "
            "(a required field or a non-empty list refers back to the type), and the provider refuses "
            "recursive schemas. Make the recursive field optional, or use a provider that takes recursion."
        ) from None


class _Unroller:
    def __init__(self, defs: dict[str, dict[str, Any]], root: dict[str, Any], depth: int) -> None:
        self.defs = defs
        self.root = root
        self.depth = depth
        self.nodes = 0

    def node(self, schema: Any, trail: tuple[str, ...]) -> Any:
        if not isinstance(schema, dict):
            return schema
        self.nodes += 1
        if self.nodes > MAX_EXPANDED_NODES:
            raise UserError(
                f"The schema expands to more than {MAX_EXPANDED_NODES} nodes once its recursion is "
                f"unrolled to depth {self.depth}; pass a smaller recursion_depth."
            )
        if "$ref" in schema:
            return self._ref(schema, trail)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _DEF_KEYS:
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = self._properties(value, schema.get("required"), trail)
            elif key in _BRANCHES and isinstance(value, list):
                out[key] = self._branches(value, trail)
            elif key == "items" and isinstance(value, dict):
                continue  # after the loop, so that a cut's maxItems wins over the schema's
            elif key == "additionalProperties" and isinstance(value, dict):
                out[key] = self._optional(value, trail, instead=False)
            elif key in _DROPPABLE and isinstance(value, dict):
                kept = self._optional(value, trail, instead=None)
                if kept is not None:
                    out[key] = kept
            elif key in _MAP_KEYWORDS and isinstance(value, dict):
                out[key] = {name: self.node(sub, trail) for name, sub in value.items()}
            elif key in ("allOf", "prefixItems") and isinstance(value, list):
                out[key] = [self._whole(sub, trail) for sub in value]
            else:
                out[key] = value
        if isinstance(schema.get("items"), dict):
            self._items(schema["items"], schema, out, trail)
        return out

    def _ref(self, schema: dict[str, Any], trail: tuple[str, ...]) -> Any:
        target = ref_target(schema["$ref"])
        body = self.root if target == "#" else self.defs.get(target or "")
        if target is None or body is None:
            return dict(schema)  # left for the profile's checks to name
        if trail.count(target) >= self.depth:
            raise _Cut
        siblings = {key: value for key, value in schema.items() if key != "$ref"}
        try:
            inner = self.node(body, (*trail, target))
        except _Cut as cut:
            raise _Cut(cut.empty if not siblings else None) from None
        if not siblings:
            return inner
        if all(key in ANNOTATIONS for key in siblings):
            return {**inner, **siblings}
        return {"allOf": [inner, self.node(siblings, trail)]}

    def _whole(self, schema: Any, trail: tuple[str, ...]) -> Any:
        """A part the node cannot do without: a cut of it cuts the node."""
        try:
            return self.node(schema, trail)
        except _Cut:
            raise _Cut from None

    def _optional(self, schema: dict[str, Any], trail: tuple[str, ...], *, instead: Any) -> Any:
        try:
            return self.node(schema, trail)
        except _Cut:
            return instead

    def _properties(self, properties: dict[str, Any], required: Any, trail: tuple[str, ...]) -> dict[str, Any]:
        needed = set(required) if isinstance(required, list) else set()
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            try:
                out[name] = self.node(sub, trail)
            except _Cut as cut:
                if name not in needed:
                    continue  # an optional property that would recurse is left out
                if cut.empty is None:
                    raise _Cut from None
                out[name] = cut.empty
        return out

    def _branches(self, branches: list[Any], trail: tuple[str, ...]) -> list[Any]:
        kept: list[Any] = []
        empty: dict[str, Any] | None = None
        cut_any = False
        for branch in branches:
            try:
                kept.append(self.node(branch, trail))
            except _Cut as cut:
                cut_any = True
                empty = empty or cut.empty
        if not kept:
            raise _Cut(empty)
        if cut_any and all(branch == _NULL for branch in kept):
            raise _Cut(dict(_NULL))  # `T | None` whose T recursed: left out where optional, else null
        return kept

    def _items(
        self, items: dict[str, Any], schema: dict[str, Any], out: dict[str, Any], trail: tuple[str, ...]
    ) -> None:
        try:
            out["items"] = self.node(items, trail)
        except _Cut:
            minimum = schema.get("minItems", 0)
            if (isinstance(minimum, int) and minimum > 0) or "prefixItems" in schema:
                raise _Cut from None
            # No item can be written, so the item schema is never used: null keeps it small.
            empty = {**out, "items": {"type": "null"}, "maxItems": 0}
            raise _Cut(empty) from None
