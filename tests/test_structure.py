"""Structure that keeps itself: layer import direction, import without SDKs, the public surface."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from python_source import parse

import so_middleware

PACKAGE = Path(so_middleware.__file__).parent

# Each layer may import only from the layers listed for it (and the stdlib / third parties
# other than the SDKs): arrows only go down, agents -> middleware -> providers -> {wire, schema} -> core
# (wire: one module per protocol, both directions, shared by the adapters and the gateway), and the
# applications (batch, gateway, cli) sit on top of everything; of them, only the command line reaches
# the other two. Every import counts, inside functions too; only `if TYPE_CHECKING:` blocks are exempt
# here (not from the circle and private-import rules).
LAYER_OF = {
    "core": "core",
    "schema": "schema",
    "middleware": "middleware",
    "providers": "providers",
    "wire": "wire",
    "agents": "agents",
    "local": "local",
    "testing": "testing",
    "batch": "batch",
    "gateway": "gateway",
    "cli": "cli",
    "__main__": "cli",  # `python -m so_middleware`: the command line
}
LIBRARY = {"core", "schema", "middleware", "wire", "providers", "agents", "local", "testing", "top", "root"}
ALLOWED = {
    "core": {"core"},
    "schema": {"core", "schema"},
    "middleware": {"core", "schema", "middleware"},
    "wire": {"core", "wire"},
    "providers": {"core", "schema", "wire", "providers"},
    "agents": {"core", "schema", "middleware", "agents"},
    "testing": {"core", "schema", "testing"},
    "local": {"core", "local", "wire", "providers"},
    "top": {"core", "schema", "middleware", "wire", "providers", "agents", "local", "testing", "top"},
    "root": {"core", "schema", "middleware", "agents", "wire"},
    # the applications
    "batch": LIBRARY | {"batch"},
    "gateway": LIBRARY | {"gateway"},
    "cli": LIBRARY | {"batch", "gateway", "cli"},
}
SDKS = {"openai", "anthropic", "google", "ollama", "mistralai", "boto3", "botocore"}
SDK_ALLOWED = {"providers", "local", "top", "testing", "batch", "gateway", "cli"}
# Core modules that import nothing from the package: the other core modules build on them.
LEAVES = [
    "_capabilities", "_deadline", "_features", "_record_keys", "_redaction", "_registry", "_spans", "_surrogates",
    "_text_reading", "_usage",
]  # fmt: skip


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "so_middleware":
        raise ValueError(module)
    if len(parts) == 1:
        return "root"  # `from so_middleware import ...`: the public surface
    head = parts[1]
    if head in LAYER_OF:
        return LAYER_OF[head]
    assert not head.startswith("_"), f"{module}: private modules belong in a layer folder (core/ ...), not the root"
    return "top"


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = sorted(PACKAGE.rglob("*.py"))
MODULE_NAMES = {module_name(path) for path in MODULES}


def imports_of(path: Path, *, type_only: bool = False) -> list[tuple[str, int]]:
    return imports_in(path.read_text(), package_of(path), type_only=type_only)


def package_of(path: Path) -> str:
    return module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]


def imports_in(source: str, package: str, *, type_only: bool = False) -> list[tuple[str, int]]:
    """Every import in `source` (a module of `package`), at any depth (functions, methods,
    try/if blocks); those under `if TYPE_CHECKING:` only with `type_only`. `from package import
    name` counts as importing the submodule `package.name` when there is one, else `package`."""
    tree = parse(source)
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not type_only:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for alias in node.names:
                submodule = f"{name}.{alias.name}"
                found.append((submodule if submodule in MODULE_NAMES else name, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def package_imports(path: Path, *, type_only: bool = False) -> set[str]:
    return {
        name
        for name, _ in imports_of(path, type_only=type_only)
        if name.split(".")[0] == "so_middleware" and name in MODULE_NAMES
    }


def layer_problems(module: str, imports: list[tuple[str, int]]) -> list[str]:
    """The imports of `module` that go against the layer table (an SDK where none may be, or a
    layer not listed for it)."""
    own = "root" if module == "so_middleware" else layer_of(module)
    problems = []
    for imported, line in imports:
        head = imported.split(".")[0]
        if head in SDKS and own not in SDK_ALLOWED:
            problems.append(f"{module}:{line} imports the {head} SDK from layer {own}")
        if head == "so_middleware" and imported != module and layer_of(imported) not in ALLOWED[own]:
            problems.append(f"{module}:{line}: layer {own} may not import {imported} ({layer_of(imported)})")
    return problems


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_import_direction(path: Path) -> None:
    assert layer_problems(module_name(path), imports_of(path)) == []


def test_function_level_imports_are_seen() -> None:
    """The checker sees imports inside functions and methods, and skips TYPE_CHECKING blocks
    (but not for the circle rule)."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..middleware import retries\n"
        "class A:\n    def f(self):\n        from ..providers.openai import adapter_for\n"
    )
    found = [name for name, _ in imports_in(source, "so_middleware.core")]
    assert found == ["typing", "so_middleware.providers.openai"]
    assert layer_of(found[1]) not in ALLOWED["core"]
    every = [name for name, _ in imports_in(source, "so_middleware.core", type_only=True)]
    assert "so_middleware.middleware.retries" in every


def test_the_applications_are_layers_too() -> None:
    """Positive control: batch reaching into the gateway, the gateway into batch or the CLI, and
    a library layer into an application are each caught; the CLI may use both applications."""
    assert layer_problems("so_middleware.batch._engines", [("so_middleware.gateway._errors", 3)])
    assert layer_problems("so_middleware.gateway._app", [("so_middleware.batch", 1)])
    assert layer_problems("so_middleware.gateway._app", [("so_middleware.cli", 1)])
    assert layer_problems("so_middleware.middleware.retries", [("so_middleware.batch", 1)])
    assert layer_problems("so_middleware.core._client", [("so_middleware", 1)])
    assert layer_problems("so_middleware.core._client", [("openai", 1)])
    assert not layer_problems("so_middleware.cli._commands", [("so_middleware.batch", 1), ("so_middleware.gateway", 2)])
    assert not layer_problems("so_middleware.batch._run", [("so_middleware", 1), ("openai", 2)])


def private_import_problems(module: str, imports: list[tuple[str, int]]) -> list[str]:
    """Imports of a private module from outside the package that holds it: `so_middleware.x._y`
    (or `so_middleware.x.y._z`) may be imported only from inside `so_middleware.x` (`.x.y`).
    A package re-exports, from its `__init__`, what the others may use."""
    problems = []
    for imported, line in imports:
        parts = imported.split(".")
        if parts[0] != "so_middleware":
            continue
        private = [i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")]
        if not private:
            continue
        owner = ".".join(parts[: private[0]])
        if module != owner and not module.startswith(owner + "."):
            problems.append(f"{module}:{line} imports {imported}, private to {owner}")
    return problems


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_import_across_packages(path: Path) -> None:
    assert private_import_problems(module_name(path), imports_of(path, type_only=True)) == []


def test_a_private_import_across_packages_is_caught() -> None:
    """Positive control: the reach-ins this rule was written against."""
    assert private_import_problems("so_middleware.cli._commands", [("so_middleware.batch._cli", 15)])
    assert private_import_problems("so_middleware.schema._output_schema", [("so_middleware.core._formats", 13)])
    assert private_import_problems("so_middleware.middleware.cache", [("so_middleware.middleware.retries._scope", 1)])
    assert not private_import_problems(
        "so_middleware.middleware.retries", [("so_middleware.middleware._otel_names", 1)]
    )
    assert not private_import_problems(
        "so_middleware.middleware.retries", [("so_middleware.middleware.retries._scope", 1)]
    )
    assert not private_import_problems("so_middleware.batch._run", [("so_middleware.core", 1)])


# Attribute names any object may expose with a leading underscore (namedtuple's API, os._exit).
PUBLIC_UNDERSCORED = {"_replace", "_asdict", "_fields", "_make", "_exit"}


def private_attribute_problems(source: str, where: str) -> list[str]:
    """Reads of `obj._name` where `_name` is not defined in this module (as `self._name = ...`,
    a method, a class attribute): another class's private state, reached into."""
    tree = parse(source)
    own: set[str] = set(PUBLIC_UNDERSCORED)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            own.add(node.target.id)
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            name = node.attr
            if name.startswith("_") and not name.startswith("__") and name not in own:
                problems.append(f"{where}:{node.lineno} reads {ast.unparse(node)}")
    return problems


# The modules that read the SDKs' private names, one for the openai SDK (and a few others') and one
# for botocore's (tests/providers/openai/test_openai_privates.py and
# tests/providers/bedrock/test_botocore_privates.py fail, naming what changed, when a release moves one).
SDK_PRIVATES = {PACKAGE / "providers" / "_openai_privates.py", PACKAGE / "providers" / "_botocore_privates.py"}


@pytest.mark.parametrize(
    "path", [m for m in MODULES if m not in SDK_PRIVATES], ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_no_private_attribute_of_another_module_is_read(path: Path) -> None:
    assert private_attribute_problems(path.read_text(), str(path.relative_to(PACKAGE))) == []


@pytest.mark.parametrize("path", sorted(SDK_PRIVATES), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_sdks_private_names_are_read_in_their_own_modules_only(path: Path) -> None:
    """Only the `SDK_PRIVATES` modules may read another package's private names, and each does
    (so the exemption above is not left over)."""
    assert path in MODULES
    assert private_attribute_problems(path.read_text(), str(path.relative_to(PACKAGE)))


def test_a_private_attribute_read_is_caught() -> None:
    """Positive control: `agents/_response.py` read `ChatResponse._value`, defined in core."""
    reach_in = "def show(response):\n    return response.chat_response._value\n"
    assert private_attribute_problems(reach_in, "agents/_response.py") == [
        "agents/_response.py:2 reads response.chat_response._value"
    ]
    own = "class A:\n    def __init__(self):\n        self._value = 1\n    def f(self, other):\n        return other._value\n"
    assert private_attribute_problems(own, "a.py") == []


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles a depth-first walk of `graph` meets (each as a path ending where it starts)."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def test_find_cycles_sees_a_cycle() -> None:
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_a_type_only_circle_is_a_circle() -> None:
    """Positive control: `_routes` importing `_app` for a type, `_app` importing `_routes`."""
    routes = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._app import GatewayConfig\n"
    graph = {
        "so_middleware.gateway._app": {"so_middleware.gateway._routes"},
        "so_middleware.gateway._routes": {
            name for name, _ in imports_in(routes, "so_middleware.gateway", type_only=True) if name != "typing"
        },
    }
    assert find_cycles(graph) == [
        ["so_middleware.gateway._app", "so_middleware.gateway._routes", "so_middleware.gateway._app"]
    ]


def import_cycles() -> list[list[str]]:
    return find_cycles({module_name(path): package_imports(path, type_only=True) for path in MODULES})


def test_no_import_cycles() -> None:
    """No module reaches itself through the package's imports: function-level and type-only ones
    included (a type-only circle is still two modules that cannot be understood apart)."""
    cycles = import_cycles()
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in cycles)


@pytest.mark.parametrize("leaf", LEAVES)
def test_core_leaf_modules_import_nothing_from_the_package(leaf: str) -> None:
    assert package_imports(PACKAGE / "core" / f"{leaf}.py") == set()


def test_no_private_module_at_the_package_root() -> None:
    assert [path.name for path in PACKAGE.glob("_*.py") if path.name not in ("__init__.py", "__main__.py")] == []


def test_import_without_either_sdk() -> None:
    code = (
        "import sys; sys.modules['openai'] = None; sys.modules['anthropic'] = None; "
        "sys.modules['opentelemetry'] = None\n"
        "import so_middleware, so_middleware.schema, so_middleware.middleware\n"
        "from so_middleware.testing import FakeChatClient\n"
        "print(FakeChatClient('ok').get_response_sync('hi').text)\n"
        "try:\n    import so_middleware.openai\nexcept ImportError as e:\n    print('hint:', e)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "ok"
    assert "pip install 'so-middleware[openai]'" in result.stdout


# The public surface, pinned: a change to it is a decision, made here too.
PUBLIC = [
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentThread",
    "ApprovalRequest",
    "Approvals",
    "Attempt",
    "BaseChatClient",
    "CachingChatClient",
    "Capabilities",
    "ChatAgent",
    "ChatClient",
    "ChatMessage",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "ChatStream",
    "ConfigureOptionsChatClient",
    "Content",
    "ContentFilterError",
    "ContinuationToken",
    "DataContent",
    "DeadlineExceededError",
    "DelegatingAgent",
    "DelegatingChatClient",
    "FallbackChatClient",
    "Feature",
    "FinishReason",
    "ForcedTool",
    "FunctionCallContent",
    "FunctionInvokingChatClient",
    "FunctionResultContent",
    "FunctionTool",
    "Grammar",
    "HostedFileContent",
    "IncompleteOutputError",
    "LayerCall",
    "LimitStats",
    "LimitsChatClient",
    "LocalServerError",
    "LoggingChatClient",
    "MemoryPausedRuns",
    "MemoryStore",
    "ModelBehaviorError",
    "OutputError",
    "OutputSchema",
    "PausedRunStore",
    "PausedRunStoreError",
    "PostgresPausedRuns",
    "ProviderConnectionError",
    "ProviderResponseError",
    "ProviderStatusError",
    "ProviderTimeoutError",
    "ReasoningContent",
    "RefusalContent",
    "RefusalError",
    "Regex",
    "ResponseFormat",
    "ResponseStream",
    "RetryingChatClient",
    "SOMiddlewareError",
    "SQLitePausedRuns",
    "SecondaryOutput",
    "StreamConsumedError",
    "StreamInterruptedError",
    "StructuredOutput",
    "StructuredOutputAgent",
    "StructuredOutputChatClient",
    "TelemetryChatClient",
    "TextContent",
    "Tool",
    "ToolActivity",
    "ToolBudget",
    "ToolChoice",
    "ToolLoopError",
    "Tools",
    "TransportError",
    "TransportFailure",
    "UsageDetails",
    "UserError",
    "as_chat_client",
    "as_messages",
    "cancel_run",
    "chain",
    "chat_format_to_responses",
    "disk_store",
    "failure_of",
    "find_feature",
    "request_key",
    "responses_format_to_chat",
    "run_sync",
    "tool",
    "wait_for_response",
    "with_cache",
    "with_fallback",
    "with_function_invocation",
    "with_limits",
    "with_logging",
    "with_options",
    "with_retries",
    "with_structured_output",
    "with_telemetry",
]


def test_exported_members() -> None:
    exported = set(so_middleware.__all__)
    assert list(so_middleware.__all__) == PUBLIC
    assert sorted(so_middleware.__all__) == list(so_middleware.__all__)
    public = {name for name in vars(so_middleware) if not name.startswith("_")}
    assert exported <= public
    for name in exported:
        member = getattr(so_middleware, name)
        if inspect.isclass(member) or inspect.isfunction(member):
            assert member.__doc__, f"{name} has no docstring"


def logic_lines(path: Path) -> int:
    """Lines of code: no blank lines, comments or docstrings."""
    tree = parse(path.read_text())
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    lines = path.read_text().splitlines()
    return sum(
        1
        for number, line in enumerate(lines, 1)
        if line.strip() and not line.strip().startswith("#") and number not in docstrings
    )


# Size is judged per folder, by what the folder holds: a folder is one concept, and a module may
# run as long as its part of that concept needs (no per-file cap that invites splitting a module
# for its own sake). A folder over its budget holds more than one concept: give each its
# subfolder (as middleware/ did, one per layer).
FOLDER_BUDGET = {  # lines of logic in a folder's own modules (subfolders count on their own)
    "layer": 800,  # middleware/<layer>/: the layer's class and factory, and its mechanics
    "tables": 3_000,  # schema/: the JSON-schema dialects as tables and transforms; wire/: one codec per protocol
    "package": 2_400,  # a library layer or an application: core/, providers/openai/, gateway/ ...
}
MODULE_CEILING = 500  # lines of logic: past that, a module holds two concepts whatever its folder


def folder_kind(folder: str) -> str:
    parts = folder.split("/")
    if parts[0] in ("schema", "wire"):  # both grow by one module per provider or protocol, by design
        return "tables"
    if parts[0] == "middleware" and len(parts) == 2 and parts[1] != "strategies":
        return "layer"
    return "package"


def folder_problems(sizes: dict[str, dict[str, int]]) -> list[str]:
    """`sizes`: folder (relative to the package, "." for its root) -> module name -> lines of
    logic. The folders over their budget, and the modules over the ceiling."""
    problems = []
    for folder, modules in sorted(sizes.items()):
        budget = FOLDER_BUDGET[folder_kind(folder)]
        if sum(modules.values()) > budget:
            problems.append(f"{folder}/: {sum(modules.values())} lines of logic, over {budget}: split it by concept")
        problems.extend(
            f"{folder}/{name}: {lines} lines of logic"
            for name, lines in sorted(modules.items())
            if lines > MODULE_CEILING
        )
    return problems


def folder_sizes() -> dict[str, dict[str, int]]:
    sizes: dict[str, dict[str, int]] = {}
    for path in MODULES:
        folder = str(path.parent.relative_to(PACKAGE))
        sizes.setdefault(folder, {})[path.name] = logic_lines(path)
    return sizes


FOLDERS = sorted(folder_sizes())


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_folder_holds_one_concept(folder: str) -> None:
    assert folder_problems({folder: folder_sizes()[folder]}) == []


def test_an_overgrown_folder_or_module_is_caught() -> None:
    """Positive control: a flat middleware/ of 2,825 lines, a layer folder over its budget, a
    module over the ceiling; a long wire module in schema/ is fine."""
    assert folder_problems({"middleware": {f"_m{i}.py": 100 for i in range(29)}})
    assert folder_problems({"middleware/telemetry": {"__init__.py": 150, "_call.py": 700}})
    assert folder_problems({"core": {"_big.py": MODULE_CEILING + 1}})
    assert folder_kind("middleware/strategies") == "package"
    assert not folder_problems({"schema": {"_partial.py": 309, "_transform.py": 450}})


# The public module of each middleware layer: its class and `with_<behaviour>()` factory.
LAYER_FILES = sorted(
    path
    for path in (PACKAGE / "middleware").rglob("*.py")
    if path.parent.name != "strategies"
    and (
        (path.parent == PACKAGE / "middleware" and not path.name.startswith("_"))
        or (path.parent != PACKAGE / "middleware" and path.name == "__init__.py")
    )
)


@pytest.mark.parametrize("path", LAYER_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_layer_file_has_at_most_150_lines_of_logic(path: Path) -> None:
    assert logic_lines(path) <= 150, f"{path.name}: {logic_lines(path)} lines of logic; move mechanics out"
