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
# other than the SDKs). Core modules are the package's top-level private modules.
LAYER_OF = {
    "schema": "schema",
    "middleware": "middleware",
    "providers": "providers",
    "agents": "agents",
    "local": "local",
    "testing": "testing",
}
ALLOWED = {
    "core": {"core"},
    "schema": {"core", "schema"},
    "middleware": {"core", "schema", "middleware"},
    "providers": {"core", "schema", "providers"},
    "agents": {"core", "schema", "middleware", "agents"},
    "testing": {"core", "schema", "testing"},
    "local": {"core", "local", "providers"},
    "top": {"core", "schema", "middleware", "providers", "agents", "local", "testing", "top"},
    "root": {"core", "schema", "middleware", "agents"},
}
SDKS = {"openai", "anthropic"}
SDK_ALLOWED = {"providers", "local", "top", "testing"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "so_middleware":
        raise ValueError(module)
    head = parts[1]
    if head in LAYER_OF:
        return LAYER_OF[head]
    return "core" if head.startswith("_") else "top"


def module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def top_level_imports(path: Path) -> list[tuple[str, int]]:
    """Imports executed at import time (module level, outside functions and TYPE_CHECKING)."""
    tree = ast.parse(path.read_text())
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    found: list[tuple[str, int]] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend((alias.name, node.lineno) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module or ""
                found.append((name, node.lineno))
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_import_direction(path: Path) -> None:
    own = layer_of(module_name(path)) if path != PACKAGE / "__init__.py" else "top"
    if path == PACKAGE / "__init__.py":
        own = "root"  # the package root re-exports the public surface, never a provider or SDK
    for imported, line in top_level_imports(path):
        root = imported.split(".")[0]
        if root in SDKS:
            assert own in SDK_ALLOWED, f"{path.name}:{line} imports the {root} SDK from layer {own}"
        if root == "so_middleware" and imported != "so_middleware":
            target = layer_of(imported)
            assert target in ALLOWED[own], f"{path.name}:{line}: layer {own} may not import {imported} ({target})"


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
    "DataContent",
    "DelegatingAgent",
    "DelegatingChatClient",
    "FallbackChatClient",
    "Feature",
    "FinishReason",
    "ForcedTool",
    "FunctionCallContent",
    "FunctionResultContent",
    "FunctionTool",
    "IncompleteOutputError",
    "LocalServerError",
    "LoggingChatClient",
    "MemoryStore",
    "ModelBehaviorError",
    "OutputError",
    "OutputSchema",
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
    "UsageDetails",
    "UserError",
    "as_chat_client",
    "as_messages",
    "chain",
    "chat_format_to_responses",
    "disk_store",
    "find_feature",
    "request_key",
    "responses_format_to_chat",
    "run_sync",
    "with_cache",
    "with_fallback",
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
