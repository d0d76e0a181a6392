"""Structure that keeps itself: layer import direction, import without SDKs, the public surface."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import so_middleware

PACKAGE = Path(so_middleware.__file__).parent

# Each layer may import only from the layers listed for it (and the stdlib / third parties
# other than the SDKs): arrows only go down, agents -> middleware -> providers -> wire -> core
# (wire: one module per protocol, both directions, shared by the adapters and the gateway).
# Every import counts, inside functions too; only `if TYPE_CHECKING:` blocks are exempt.
LAYER_OF = {
    "core": "core",
    "schema": "schema",
    "middleware": "middleware",
    "providers": "providers",
    "wire": "wire",
    "agents": "agents",
    "local": "local",
    "testing": "testing",
}
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
    "root": {"core", "schema", "middleware", "agents"},
}
SDKS = {"openai", "anthropic"}
SDK_ALLOWED = {"providers", "local", "top", "testing"}
# Core modules that import nothing from the package: the other core modules build on them.
LEAVES = ["_capabilities", "_deadline", "_features", "_registry", "_spans", "_usage"]


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "so_middleware":
        raise ValueError(module)
    head = parts[1]
    if head in LAYER_OF:
        return LAYER_OF[head]
    if head == "__main__":  # `python -m so_middleware`: an app, like the command it runs
        return "top"
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


def parse(source: str) -> ast.Module:
    """`ast.parse`, once more after CPython 3.11's "AST constructor recursion depth mismatch": its
    AST conversion keeps its depth per interpreter, so another thread parsing at the same moment
    (a finalizer, a server thread) can trip it; each call starts the count afresh."""
    try:
        return ast.parse(source)
    except SystemError:
        return ast.parse(source)


def imports_of(path: Path) -> list[tuple[str, int]]:
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    return imports_in(path.read_text(), package)


def imports_in(source: str, package: str) -> list[tuple[str, int]]:
    """Every import in `source` (a module of `package`), at any depth (functions, methods,
    try/if blocks), except those under `if TYPE_CHECKING:`. `from package import name` counts
    as importing the submodule `package.name` when there is one, else `package`."""
    tree = parse(source)
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
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


def package_imports(path: Path) -> set[str]:
    return {name for name, _ in imports_of(path) if name.split(".")[0] == "so_middleware" and name in MODULE_NAMES}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_import_direction(path: Path) -> None:
    own = layer_of(module_name(path)) if path != PACKAGE / "__init__.py" else "top"
    if path == PACKAGE / "__init__.py":
        own = "root"  # the package root re-exports the public surface, never a provider or SDK
    for imported, line in imports_of(path):
        root = imported.split(".")[0]
        if root in SDKS:
            assert own in SDK_ALLOWED, f"{path.name}:{line} imports the {root} SDK from layer {own}"
        if root == "so_middleware" and imported != "so_middleware":
            target = layer_of(imported)
            assert target in ALLOWED[own], f"{path.name}:{line}: layer {own} may not import {imported} ({target})"


def test_function_level_imports_are_seen() -> None:
    """The checker sees imports inside functions and methods, and skips TYPE_CHECKING blocks."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..middleware import retries\n"
        "class A:\n    def f(self):\n        from ..providers.openai import adapter_for\n"
    )
    found = [name for name, _ in imports_in(source, "so_middleware.core")]
    assert found == ["typing", "so_middleware.providers.openai"]
    assert layer_of(found[1]) not in ALLOWED["core"]


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


def test_no_import_cycles() -> None:
    """No module reaches itself through the package's imports (function-level ones included)."""
    cycles = find_cycles({module_name(path): package_imports(path) for path in MODULES})
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
    "FunctionResultContent",
    "FunctionTool",
    "HostedFileContent",
    "IncompleteOutputError",
    "LimitStats",
    "LimitsChatClient",
    "LocalServerError",
    "LoggingChatClient",
    "MemoryStore",
    "ModelBehaviorError",
    "OutputError",
    "OutputSchema",
    "ProviderResponseError",
    "ReasoningContent",
    "RefusalContent",
    "RefusalError",
    "ResponseFormat",
    "ResponseStream",
    "RetryingChatClient",
    "SOMiddlewareError",
    "SecondaryOutput",
    "StreamConsumedError",
    "StreamInterruptedError",
    "StructuredOutput",
    "StructuredOutputAgent",
    "StructuredOutputChatClient",
    "TelemetryChatClient",
    "TextContent",
    "ToolChoice",
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
    "wait_for_response",
    "with_cache",
    "with_fallback",
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


OUTSIDE_SCHEMA = [
    path for path in MODULES if path.relative_to(PACKAGE).parts[0] != "schema"
]  # wire tables may run longer


@pytest.mark.parametrize("path", OUTSIDE_SCHEMA, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_over_300_lines_outside_schema(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= 300, f"{path.relative_to(PACKAGE)}: split it by concept"


LAYER_FILES = sorted(path for path in (PACKAGE / "middleware").glob("*.py") if not path.name.startswith("_"))


@pytest.mark.parametrize("path", LAYER_FILES, ids=lambda p: p.name)
def test_each_layer_file_has_at_most_150_lines_of_logic(path: Path) -> None:
    assert logic_lines(path) <= 150, f"{path.name}: {logic_lines(path)} lines of logic; move mechanics out"
