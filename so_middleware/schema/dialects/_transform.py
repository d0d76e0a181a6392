"""Rewrite a pydantic JSON schema into a provider's strict subset.

One walker serves every strict profile; a `ProfileRules` value says what the provider keeps, what
moves into `description` (so the model still sees the constraint) and what cannot be expressed at
all. Inexpressible parts are collected as `Problem`s with the field path, never silently dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...core import UserError
from .._merge import MergeConflict, flatten
from .._refs import ANNOTATIONS, MAX_EXPANDED_NODES, contains_ref
from .._schema_tools import cyclic_definitions, definitions_of, ref_target

__all__ = ["Problem", "ProfileRules", "transform_schema"]

_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
# Annotations that change nothing about valid output; dropped to keep the prompt small.
_DROPPED = frozenset(
    {
        "title",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "$schema",
        "$id",
        "$anchor",
        "discriminator",
    }
)
_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_IMPOSSIBLE = ("not", "if", "then", "else", "dependentSchemas", "patternProperties")
_LOOKAROUND = re.compile(r"\(\?<?[=!]")
_BACKREF_OR_BOUNDARY = re.compile(r"\\[1-9bB]|\\k<")
_LARGE_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_LARGE_REPEAT_LIMIT = 100


@dataclass(frozen=True)
class ProfileRules:
    """What one provider's strict subset accepts."""

    name: str
    force_required: bool
    keep_default: bool
    const_as_enum: bool
    keep_numeric: bool
    keep_max_items: bool
    max_min_items: int | None
    allow_recursion: bool
    allow_all_of: bool
    simple_patterns_only: bool
    formats: frozenset[str] = field(default_factory=frozenset)
    # Of the numeric keywords, the ones kept when `keep_numeric` (None: all of them).
    numeric_keys: frozenset[str] | None = None
    # An open object's `additionalProperties` schema is kept rather than refused.
    open_objects: bool = False
    keep_patterns: bool = True
    keep_prefix_items: bool = False


@dataclass(frozen=True)
class Problem:
    """A part of the schema the profile cannot express."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.reason}"


def transform_schema(
    schema: dict[str, Any], rules: ProfileRules, *, wrapped: bool
) -> tuple[dict[str, Any], list[Problem]]:
    """Return the schema rewritten for `rules`, and the problems that stop it being valid there."""
    walker = _Walker(schema, rules, wrapped=wrapped)
    body = {key: value for key, value in schema.items() if key not in ("$defs", "definitions")}
    out = walker.node(body, "")
    for key in ("$defs", "definitions"):
        defs = schema.get(key)
        if isinstance(defs, dict):
            out[key] = {name: walker.node(sub, str(name)) for name, sub in defs.items()}
    by_reason = {problem.reason: problem for problem in reversed(walker.problems)}
    return out, list(reversed(by_reason.values()))


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _short(schema: Any) -> str:
    if isinstance(schema, dict):
        if "$ref" in schema:
            return str(schema["$ref"]).rsplit("/", 1)[-1]
        if "type" in schema:
            kind = schema["type"]
            return " or ".join(kind) if isinstance(kind, list) else str(kind)
        if "const" in schema:
            return _compact(schema["const"])
    return "value"


class _Walker:
    def __init__(self, root: dict[str, Any], rules: ProfileRules, *, wrapped: bool) -> None:
        self.rules = rules
        self.wrapped = wrapped
        self.defs = definitions_of(root)
        self.cyclic = cyclic_definitions(root)
        self.problems: list[Problem] = []
        self.inlining: list[str] = []  # refs whose target is being walked in place
        self.visited = 0

    def problem(self, path: str, reason: str) -> None:
        self.problems.append(Problem(path, reason))

    def node(self, schema: Any, path: str) -> dict[str, Any]:
        if not isinstance(schema, dict):
            self.problem(path, f"boolean schema {schema!r} is not supported")
            return {}
        self.visited += 1
        if self.visited > MAX_EXPANDED_NODES:
            raise UserError(f"The schema expands to more than {MAX_EXPANDED_NODES} nodes once its $refs are inlined.")
        src = {key: value for key, value in schema.items() if key not in _DROPPED}
        inlined: list[str] = []
        if "allOf" in src or ("$ref" in src and len(src) > 1 and not self._wrap_only(src)):
            merged = self._flatten(src, path)
            if merged is None:
                return {}
            src = {key: value for key, value in merged[0].items() if key not in _DROPPED}
            inlined = merged[1]
        if "$ref" in src:
            return self._ref(src, path)
        names = [str(ref_target(ref)) for ref in inlined]
        self.inlining.extend(names)
        try:
            return self._body(src, path)
        finally:
            del self.inlining[len(self.inlining) - len(names) :]

    def _wrap_only(self, src: dict[str, Any]) -> bool:
        """A recursive `$ref` with only annotations beside it: kept as a reference."""
        target = ref_target(src["$ref"])
        recursive = target == "#" or target in self.cyclic or target in self.inlining
        return recursive and all(key == "$ref" or key in ANNOTATIONS for key in src)

    def _body(self, src: dict[str, Any], path: str) -> dict[str, Any]:
        description = src.pop("description", None)
        notes: list[str] = []
        out: dict[str, Any] = {}
        if "allOf" in src:  # kept only where the parts could not be merged
            out["allOf"] = [self.node(part, path) for part in src.pop("allOf")]
        if "oneOf" in src:
            # Sound for pydantic unions: its oneOf members are mutually exclusive already.
            src["anyOf"] = list(src.pop("anyOf", [])) + list(src.pop("oneOf"))
        self._default(src, out, notes)
        if "const" in src:
            value = src.pop("const")
            self._check_enum([value], path)
            if self.rules.const_as_enum:
                out["enum"] = [value]
            else:
                out["const"] = value
        if "enum" in src:
            values = src.pop("enum")
            values = list(values) if isinstance(values, list) else [values]
            self._check_enum(values, path)
            out["enum"] = values
        kinds = self._type(src, out, path)
        if "anyOf" in src:
            out["anyOf"] = [self.node(branch, path) for branch in src.pop("anyOf")]
        if "object" in kinds or "properties" in src:
            self._object(src, out, notes, path)
        if "array" in kinds or "items" in src or "prefixItems" in src:
            self._array(src, out, notes, path)
        self._string(src, out, notes)
        self._number(src, out, notes)
        for key in list(src):
            value = src.pop(key)
            if key in _IMPOSSIBLE:
                self.problem(path, f"'{key}' cannot be expressed in the {self.rules.name} profile")
            else:
                notes.append(f"{key}={_compact(value)}")
        if not any(key in out for key in ("type", "anyOf", "enum", "const", "$ref", "allOf")):
            self.problem(path, "accepts any JSON value (Any, object or an empty schema); use a concrete type")
        return self._describe(out, description, notes)

    def _describe(self, out: dict[str, Any], description: Any, notes: list[str]) -> dict[str, Any]:
        text = description if isinstance(description, str) else ""
        if notes:
            text = f"{text} ({', '.join(notes)})" if text else ", ".join(notes)
        return {"description": text, **out} if text else out

    def _check_enum(self, values: list[Any], path: str) -> None:
        if any(isinstance(value, dict | list) for value in values):
            self.problem(path, "enum/const values must be strings, numbers, booleans or null")

    def _default(self, src: dict[str, Any], out: dict[str, Any], notes: list[str]) -> None:
        if "default" not in src:
            return
        value = src.pop("default")
        if self.rules.keep_default:
            out["default"] = value
        elif value is not None:
            notes.append(f"default={_compact(value)}")

    def _type(self, src: dict[str, Any], out: dict[str, Any], path: str) -> set[str]:
        if "type" not in src:
            return set()
        kind = src.pop("type")
        kinds = set(kind) if isinstance(kind, list) else {kind}
        if not all(isinstance(item, str) and item in _TYPES for item in kinds):
            self.problem(path, f"unknown type {kind!r}")
        out["type"] = kind
        return {str(item) for item in kinds}

    def _flatten(self, src: dict[str, Any], path: str) -> tuple[dict[str, Any], list[str]] | None:
        """Merge `allOf` parts and a `$ref` with sibling constraints into one schema."""

        def target(ref: str) -> dict[str, Any] | None:
            name = ref_target(ref)
            return self.defs.get(name) if name is not None else None

        def keep(ref: str) -> bool:  # a recursion already being inlined stays a reference
            target = ref_target(ref)
            return target in (None, "#") or target in self.inlining

        try:
            return flatten(src, target, keep_ref=keep)
        except MergeConflict as exc:
            parts = src.get("allOf")
            if self.rules.allow_all_of and isinstance(parts, list) and not contains_ref(src):
                return src, []
            self.problem(path, f"cannot merge its parts into one schema: {exc}")
            return None

    def _ref(self, src: dict[str, Any], path: str) -> dict[str, Any]:
        ref = src.pop("$ref")
        target = ref_target(ref)
        if target is None:
            self.problem(path, f"$ref {ref!r} is not a local #/$defs reference")
            return {}
        if target == "#" and self.wrapped:
            self.problem(path, "'$ref': '#' cannot be used once the schema is wrapped under 'response'")
        if target != "#" and target not in self.defs:
            self.problem(path, f"$ref {ref!r} points to a missing definition")
            return {}
        recursive = target == "#" or target in self.cyclic
        if recursive and not self.rules.allow_recursion:
            self.problem(
                path, f"is recursive ({ref}); the {self.rules.name} profile does not support recursive schemas"
            )
        if not src:
            return {"$ref": ref}
        if any(key not in ANNOTATIONS for key in src):
            self.problem(path, f"is a recursive $ref ({ref}) with sibling constraints, which cannot be merged")
            return {}
        # Strict providers reject keywords beside a $ref: keep the annotations on a wrapper.
        return self.node({"anyOf": [{"$ref": ref}], **src}, path)

    def _object(self, src: dict[str, Any], out: dict[str, Any], notes: list[str], path: str) -> None:
        properties = src.pop("properties", {})
        required = src.pop("required", [])
        extra = src.pop("additionalProperties", None)
        if self.rules.open_objects and extra is not None and extra is not False:
            out["additionalProperties"] = self.node(extra, _join(path, "*")) if isinstance(extra, dict) else extra
        elif extra is not None and extra is not False:
            self.problem(
                path,
                "is an open object (dict[str, ...], a bare dict, extra='allow' or additionalProperties); "
                f"the {self.rules.name} profile needs every key named in advance",
            )
        if not isinstance(properties, dict):
            self.problem(path, "'properties' must be an object")
            properties = {}
        out.setdefault("type", "object")
        out["properties"] = {name: self.node(sub, _join(path, str(name))) for name, sub in properties.items()}
        if self.rules.force_required:
            out["required"] = list(properties)
        elif isinstance(required, list) and required:
            out["required"] = [name for name in required if name in properties]
        out.setdefault("additionalProperties", False)
        for key in ("propertyNames", "minProperties", "maxProperties", "unevaluatedProperties", "dependentRequired"):
            if key in src:
                notes.append(f"{key}={_compact(src.pop(key))}")

    def _array(self, src: dict[str, Any], out: dict[str, Any], notes: list[str], path: str) -> None:
        items = src.pop("items", None)
        prefix = src.pop("prefixItems", None)
        out.setdefault("type", "array")
        if isinstance(prefix, list) and prefix and self.rules.keep_prefix_items:
            out["prefixItems"] = [self.node(sub, f"{path}[{index}]") for index, sub in enumerate(prefix)]
            if isinstance(items, dict):
                out["items"] = self.node(items, f"{path}[]")
        elif isinstance(prefix, list) and prefix:
            branches = [self.node(sub, f"{path}[{index}]") for index, sub in enumerate(prefix)]
            if isinstance(items, dict):
                branches.append(self.node(items, f"{path}[]"))
            # prefixItems is rejected by strict providers; keep the positions in the description.
            unique = list({_compact(branch): branch for branch in branches}.values())
            out["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
            notes.append("items in order: " + ", ".join(_short(sub) for sub in prefix))
        elif isinstance(items, dict):
            out["items"] = self.node(items, f"{path}[]")
        elif isinstance(items, list):
            self.problem(path, "tuple-style 'items' lists are not supported; use prefixItems")
        else:
            self.problem(path, "is an array without an item schema (list[Any] or an empty tuple)")
        if "minItems" in src:
            value = src.pop("minItems")
            limit = self.rules.max_min_items
            if limit is None or (isinstance(value, int) and value <= limit):
                out["minItems"] = value
            else:
                notes.append(f"minItems={value}")
        if "maxItems" in src:
            value = src.pop("maxItems")
            if self.rules.keep_max_items:
                out["maxItems"] = value
            else:
                notes.append(f"maxItems={value}")
        for key in ("uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems"):
            if key in src:
                notes.append(f"{key}={_compact(src.pop(key))}")

    def _string(self, src: dict[str, Any], out: dict[str, Any], notes: list[str]) -> None:
        if "format" in src:
            value = src.pop("format")
            if value in self.rules.formats:
                out["format"] = value
            else:
                notes.append(f"format={value}")
        if "pattern" in src:
            value = src.pop("pattern")
            if isinstance(value, str) and self.rules.keep_patterns and self._pattern_ok(value):
                out["pattern"] = value
            else:
                notes.append(f"pattern={_compact(value)}")
        for key in ("minLength", "maxLength", "contentEncoding", "contentMediaType"):
            if key in src:
                notes.append(f"{key}={_compact(src.pop(key))}")

    def _pattern_ok(self, pattern: str) -> bool:
        if _LOOKAROUND.search(pattern):
            return False
        if self.rules.simple_patterns_only:
            if _BACKREF_OR_BOUNDARY.search(pattern):
                return False
            for match in _LARGE_REPEAT.finditer(pattern):
                bounds = [int(part) for part in match.groups() if part]
                if any(bound > _LARGE_REPEAT_LIMIT for bound in bounds):
                    return False
        return True

    def _number(self, src: dict[str, Any], out: dict[str, Any], notes: list[str]) -> None:
        for key in _NUMERIC:
            if key in src:
                value = src.pop(key)
                kept = self.rules.numeric_keys
                if self.rules.keep_numeric and (kept is None or key in kept):
                    out[key] = value
                else:
                    notes.append(f"{key}={_compact(value)}")
