"""Each call signature is declared in one place, so its copies cannot drift apart."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections import Counter
from pathlib import Path

from python_source import parse

import so_middleware
from so_middleware.agents import Agent, DelegatingAgent
from so_middleware.agents._protocol import AgentCall, SyncRuns
from so_middleware.core import ChatClient
from so_middleware.core._protocol import ChatCall

PACKAGE = Path(so_middleware.__file__).parent


def _definitions(name: str) -> Counter[str]:
    """How many `def name(...)` (overloads included) each module of the package holds."""
    found: Counter[str] = Counter()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                found[str(path.relative_to(PACKAGE))] += 1
    return found


def test_get_response_is_declared_once_on_the_protocol() -> None:
    # four overloads (`_Signature`, serving both entry points: per `stream`, without `output_type`
    # and with one) and the implementation; the blocking twin is one implementation typed from the
    # same overloads. `DefaultTyped` (types only) restates the four for a client made with an
    # output type, whose calls without one answer it, and a stub
    assert _definitions("get_response") == {"core/_protocol.py": 5, "core/_default_typed.py": 5}
    assert _definitions("get_response_sync") == {"core/_protocol.py": 1, "core/_default_typed.py": 5}


def test_the_agents_run_is_declared_once_on_the_protocol() -> None:
    agents = {module: count for module, count in _definitions("run").items() if module.startswith("agents/")}
    assert agents == {"agents/_protocol.py": 5}  # four overloads and the implementation
    agents = {module: count for module, count in _definitions("run_sync").items() if module.startswith("agents/")}
    assert agents == {"agents/_protocol.py": 1}  # the implementation, typed from `run`'s overloads


def _hooks(name: str) -> dict[str, list[str]]:
    """The parameters of each `def name(...)` in the package, by module and line."""
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                arguments = node.args
                names = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
                found[f"{path.relative_to(PACKAGE)}:{node.lineno}"] = names
    return found


def test_the_blocking_twins_show_their_verbs_parameters_at_run_time() -> None:
    """`help(client.get_response_sync)` and an editor reading the live object see the keywords,
    not the `(*args, **kwargs)` the twin is written with."""
    from so_middleware.testing import FakeChatClient

    client = FakeChatClient()
    for twin, verb in ((client.get_response_sync, client.get_response), (SyncRuns.run_sync, Agent.run)):
        assert inspect.signature(twin) == inspect.signature(verb)
    assert "output_type" in inspect.signature(client.get_response_sync).parameters


def test_the_call_hooks_take_the_call_as_one_object() -> None:
    """`_call` (chat clients) and `_run` (agents) take a `ChatCall` / `AgentCall`: the argument list
    is written in the public signature and that dataclass, not again in every hook."""
    for name, modules in (
        ("_call", {"core/_protocol.py", "core/_client.py", "core/_delegating.py"}),
        ("_run", {"agents/_protocol.py", "agents/_agent.py", "agents/_structured.py"}),
    ):
        hooks = {where: params for where, params in _hooks(name).items() if where.split(":")[0] in modules}
        assert {where.split(":")[0] for where in hooks} == modules
        assert all(params == ["self", "call"] for params in hooks.values()), hooks


def test_the_call_objects_hold_the_public_parameters() -> None:
    """`ChatCall` and `AgentCall` have a field for each parameter of `get_response` / `run`, with
    the same default, in the same order."""
    for method, call in ((ChatClient.get_response, ChatCall), (Agent.run, AgentCall)):
        parameters = list(inspect.signature(method).parameters.values())[1:]
        fields = dataclasses.fields(call)
        assert [p.name for p in parameters] == [f.name for f in fields]
        assert [p.default for p in parameters] == [f.default for f in fields]


def test_an_agent_decorator_has_the_typed_run() -> None:
    """`DelegatingAgent` inherits `Agent`'s declared `run` and `SyncRuns.run_sync`, not a
    `**kwargs` pass-through of its own."""
    assert DelegatingAgent.run is Agent.run
    assert DelegatingAgent.run_sync is SyncRuns.run_sync


def test_the_settings_keywords_are_spelled_as_parameters_once() -> None:
    """`max_retries` and `mode` are `OutputSettings` fields (and `SettingsKeywords` keys, which a
    test keeps the same); only `with_structured_output`, which also takes the adapter's own
    options, lists them as parameters. The batch runs and Ray's `ClientSpec` take the settings."""
    spelled: Counter[str] = Counter()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                names = [argument.arg for argument in arguments if argument.arg in ("max_retries", "mode")]
                spelled.update(f"{node.name}({name})" for name in names)
            elif isinstance(node, ast.AnnAssign) and ast.unparse(node.target) in ("max_retries", "mode"):
                spelled[f"{path.relative_to(PACKAGE)}: {ast.unparse(node.target)}"] += 1
    assert spelled == {
        "with_structured_output(mode)": 3,  # two overloads (with a creation-time type or not) and the function
        "with_structured_output(max_retries)": 3,
        "strategies_for(mode)": 1,  # a run's one setting the strategies read, not the settings
        "middleware/structured_output/_settings.py: mode": 2,  # OutputSettings and SettingsKeywords
        "middleware/structured_output/_settings.py: max_retries": 2,
    }
