"""Local `$ref`s: decoding, resolving, and the checks a schema's reference graph must pass.

Only local references (`#` followed by a JSON pointer) are followed; nothing is ever fetched.
`check_references` runs when an `OutputSchema` is built and refuses, with a `UserError`:
a remote or dangling `$ref`, a sub-schema with its own `$id` that holds `$ref`s (its `#/...`
would resolve against itself, not the root), and a cycle of `$ref`s that never goes through a
property or an item (it could only be followed for ever). `check_expansion` runs for the
dialects that inline references, and refuses a graph whose references multiply out past
`MAX_EXPANDED_NODES` nodes or `MAX_EXPANDED_DEPTH` levels once inlined. Sizes are
memoised per referenced node and every walk is iterative, so the checks themselves cost time
linear in the schema and cannot raise `RecursionError`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from ..core import UserError

__all__ = [
    "ANNOTATIONS",
    "MAX_EXPANDED_DEPTH",
    "MAX_EXPANDED_NODES",
    "Pointer",
    "anchors_to_pointers",
    "check_expansion",
    "check_references",
    "contains_ref",
    "id_keyword",
    "is_alias",
    "pointer_of",
    "resolve",
]

Pointer = tuple[str, ...]
MAX_EXPANDED_NODES = 100_000
MAX_EXPANDED_DEPTH = 100
# Keywords that describe a value without constraining it.
ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)
# Keywords whose sub-schemas apply to the same value (following them does not go deeper in the data).
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_DATA = frozenset({"enum", "const", "default", "examples"})
_NOT_SCHEMAS = _DATA | {"$defs", "definitions"}


def pointer_of(ref: Any) -> Pointer | None:
    """`"#/$defs/a%20b"` → `("$defs", "a b")`; `"#"` → `()`; not a local JSON pointer → None.

    The fragment is percent-decoded first, then `~1` and `~0` are unescaped (RFC 6901).
    """
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    fragment = unquote(ref[1:])
    if not fragment:
        return ()
    if not fragment.startswith("/"):
        return None  # an anchor such as "#node"
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in fragment[1:].split("/"))


def resolve(root: Any, pointer: Pointer) -> Any | None:
    """The node `pointer` names in `root`, or None when there is none."""
    node = root
    for part in pointer:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def is_alias(node: Any) -> bool:
    """A `$ref` with nothing but annotations beside it."""
    return isinstance(node, dict) and "$ref" in node and all(key == "$ref" or key in ANNOTATIONS for key in node)


def _children(node: dict[str, Any], pointer: Pointer) -> list[tuple[Any, Pointer, bool]]:
    """Sub-schemas of `node`: (schema, pointer, whether it applies to the same value)."""
    found: list[tuple[Any, Pointer, bool]] = []
    for key, value in node.items():
        if key in _NOT_SCHEMAS:
            continue
        in_place = key in _IN_PLACE_LISTS or key in _IN_PLACE_ONE or key == "dependentSchemas"
        if isinstance(value, dict):
            if key in ("properties", "patternProperties", "dependentSchemas"):
                found.extend((sub, (*pointer, key, str(name)), in_place) for name, sub in value.items())
            else:
                found.append((value, (*pointer, key), in_place))
        elif isinstance(value, list) and key in (*_IN_PLACE_LISTS, "prefixItems", "items"):
            found.extend((sub, (*pointer, key, str(index)), in_place) for index, sub in enumerate(value))
    return found


class _Graph:
    """Every local `$ref` of a schema, checked, with the sub-tree facts the budget needs."""

    def __init__(self, root: dict[str, Any], what: str) -> None:
        self.root = root
        self.what = what
        # For each referenced pointer: its own node count and depth (refs not followed), the refs
        # inside it (with the depth they sit at) and the refs that apply to the same value.
        self.facts: dict[Pointer, tuple[int, int, list[tuple[Pointer, int]], list[Pointer]]] = {}
        self.id_key = id_keyword(root)

    def fail(self, message: str) -> None:
        raise UserError(f"The JSON schema of {self.what} {message}.")

    def target(self, ref: Any, at: Pointer) -> Pointer:
        pointer = pointer_of(ref)
        where = "/".join(at) or "<root>"
        if pointer is None:
            self.fail(
                f"has $ref {str(ref)[:200]!r} at {where}, which is not a local reference (#/...); remote "
                "references are never fetched: copy the definition into $defs"
            )
        assert pointer is not None
        if resolve(self.root, pointer) is None:
            self.fail(f"has $ref {str(ref)[:200]!r} at {where}, which points to nothing in the schema")
        return pointer

    def scan(self, start: Pointer) -> tuple[int, int, list[tuple[Pointer, int]], list[Pointer]]:
        """Walk the sub-tree at `start` without following refs."""
        if start in self.facts:
            return self.facts[start]
        nodes, deepest = 0, 0
        refs: list[tuple[Pointer, int]] = []
        same_value: list[Pointer] = []
        stack: list[tuple[Any, Pointer, int, bool]] = [(resolve(self.root, start), start, 0, True)]
        while stack:
            node, pointer, depth, in_place = stack.pop()
            nodes += 1
            deepest = max(deepest, depth)
            if not isinstance(node, dict):
                continue
            if (
                _moves_base(node, self.id_key)
                and pointer
                and any(contains_ref(child) for child, _, _ in _children(node, pointer))
            ):
                self.fail(
                    f"has a sub-schema with its own {self.id_key} at {'/'.join(pointer)}; move its $defs to the root"
                )
            if "$ref" in node:
                target = self.target(node["$ref"], pointer)
                refs.append((target, depth))
                if in_place:
                    same_value.append(target)
            # An alias adds no level: its target takes its place.
            step = 0 if is_alias(node) else 1
            for child, child_pointer, child_in_place in _children(node, pointer):
                stack.append((child, child_pointer, depth + step, in_place and child_in_place))
        self.facts[start] = (nodes, deepest, refs, same_value)
        return self.facts[start]

    def check_cycles(self) -> None:
        """Refuse a cycle of refs that never moves into a property or an item."""
        state: dict[Pointer, int] = {}  # 1 on the current path, 2 finished
        for start in list(self.facts):
            if start in state:
                continue
            path: list[tuple[Pointer, list[Pointer]]] = [(start, list(self.scan(start)[3]))]
            state[start] = 1
            while path:
                current, pending = path[-1]
                if not pending:
                    state[current] = 2
                    path.pop()
                    continue
                nxt = pending.pop()
                if state.get(nxt) == 1:
                    self.fail(
                        f"has a $ref cycle through {'#/' + '/'.join(nxt)} that never goes into a property or an "
                        "item (through allOf, anyOf or $ref alone), so it can never be resolved"
                    )
                if nxt not in state:
                    state[nxt] = 1
                    path.append((nxt, list(self.scan(nxt)[3])))

    def expanded(self) -> tuple[int, int]:
        """Node count and depth of the root with every ref inlined (a recursion counts once)."""
        sizes: dict[Pointer, tuple[int, int]] = {}
        active: set[Pointer] = set()
        order: list[tuple[Pointer, bool]] = [((), False)]
        while order:
            pointer, done = order.pop()
            nodes, depth, refs, _ = self.scan(pointer)
            if not done:
                if pointer in sizes or pointer in active:
                    continue
                active.add(pointer)
                order.append((pointer, True))
                order.extend((target, False) for target, _ in refs if target not in sizes and target not in active)
                continue
            active.discard(pointer)
            total, deepest = nodes, depth
            for target, at in refs:
                inner = sizes.get(target, (1, 0))  # still open: a recursion, shown by name
                total = min(total + inner[0], MAX_EXPANDED_NODES + 1)
                deepest = min(max(deepest, at + inner[1]), MAX_EXPANDED_DEPTH + 1)
            sizes[pointer] = (total, deepest)
        return sizes[()]


def id_keyword(root: Any) -> str:
    """`"id"` for a draft-04 (or older) schema, where `$id` is no keyword; `"$id"` otherwise."""
    dialect = root.get("$schema") if isinstance(root, dict) else None
    old = isinstance(dialect, str) and ("draft-04" in dialect or "draft-03" in dialect)
    return "id" if old else "$id"


def _moves_base(node: dict[str, Any], id_key: str) -> bool:
    """Whether `node` starts a new base URI (an id that is not a plain `#name` anchor)."""
    value = node.get(id_key)
    return isinstance(value, str) and not value.startswith("#")


def _anchors(root: dict[str, Any]) -> dict[str, Pointer]:
    """Each plain-name anchor of a schema (`$anchor: name`, or an id `#name`) and where it is."""
    id_key = id_keyword(root)
    found: dict[str, Pointer] = {}
    stack: list[tuple[Any, Pointer]] = [(root, ())]
    while stack:
        node, pointer = stack.pop()
        if not isinstance(node, dict):
            continue
        name = node.get("$anchor")
        own_id = node.get(id_key)
        if isinstance(own_id, str) and own_id.startswith("#") and len(own_id) > 1:
            name = own_id[1:]
        if isinstance(name, str):
            found.setdefault(name, pointer)
        for key, value in node.items():
            if key in _DATA:
                continue
            if isinstance(value, dict):
                stack.append((value, (*pointer, key)))
            elif isinstance(value, list):
                stack.extend((item, (*pointer, key, str(index))) for index, item in enumerate(value))
    return found


def anchors_to_pointers(root: dict[str, Any]) -> None:
    """Rewrite, in place, each `$ref` to a plain-name anchor (`#node`) as the JSON pointer it names.

    Engines resolve `#/...` pointers but seldom anchors; the meaning is the same. A `$ref` that
    spells out the root's own `$id` (`https://example.com/s.json#/definitions/a`) becomes the local
    reference it is. A `$ref` to an anchor the schema does not define is left for
    `check_references` to refuse.
    """
    anchors = _anchors(root)
    own_id = root.get(id_keyword(root))
    base = own_id.split("#", 1)[0] if isinstance(own_id, str) else ""
    if not anchors and not base:
        return
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if base and isinstance(ref, str) and ref.split("#", 1)[0] == base:
                node["$ref"] = ref = ref[len(base) :] or "#"  # the root's own URI: a local reference
            if isinstance(ref, str) and ref.startswith("#") and pointer_of(ref) is None:
                target = anchors.get(unquote(ref[1:]))
                if target is not None:
                    node["$ref"] = "#" + "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in target)
            stack.extend(value for key, value in node.items() if key not in _DATA)
        elif isinstance(node, list):
            stack.extend(node)


def contains_ref(node: Any) -> bool:
    """Whether a `$ref` appears anywhere in `node`."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            if "$ref" in current:
                return True
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return False


def _graph_of(schema: dict[str, Any], what: str) -> _Graph:
    graph = _Graph(schema, what)
    graph.scan(())
    # Scanning a target finds its refs; keep going until every reachable target is scanned.
    frontier = [target for target, _ in graph.facts[()][2]]
    while frontier:
        target = frontier.pop()
        if target not in graph.facts:
            frontier.extend(inner for inner, _ in graph.scan(target)[2])
    return graph


def check_references(schema: dict[str, Any], what: str) -> None:
    """Raise `UserError` unless every `$ref` is local, resolves, and can be followed to an end."""
    _graph_of(schema, what).check_cycles()


def check_expansion(schema: dict[str, Any], what: str, hint: str = "") -> None:
    """Raise `UserError` when inlining every `$ref` of a checked schema would pass the budget.

    Only a dialect that inlines references needs this: an engine that resolves `$ref`s itself
    gets the schema as it is, however large it would be inlined. `hint` ends the message.
    """
    graph = _graph_of(schema, what)
    nodes, depth = graph.expanded()
    if nodes > MAX_EXPANDED_NODES:
        graph.fail(f"expands to more than {MAX_EXPANDED_NODES} nodes once its $refs are inlined{hint}")
    if depth > MAX_EXPANDED_DEPTH:
        graph.fail(f"nests deeper than {MAX_EXPANDED_DEPTH} levels once its $refs are inlined{hint}")
