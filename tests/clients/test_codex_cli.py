"""Codex CLI (`@openai/codex` from package-lock.json), unmodified: `codex exec` with a model provider whose
`wire_api` is "responses" and whose base_url is the gateway, over the scripted backend. The backend calls
Codex's `exec_command` function tool (after some reasoning; twice in one reply for parallel calls) or its
`apply_patch` custom tool, or every tool Codex offers at once (its goal tools among them); Codex runs
them and sends the results back through the gateway, and the backend closes the turn."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
from node_run import node_modules
from scripted import ScriptedChatBackend
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._routes import reads_spec_names
from so_middleware.gateway._server import AppServer

# Codex also offers tools no Chat Completions backend can serve: `web_search` (hosted by OpenAI) and the
# `multi_agent_v1` namespace of sub-agent tools. The gateway refuses both with a 400 naming the tool, so
# they are switched off here; every tool Codex still offers is a function tool, or its custom
# `apply_patch` (below). Nothing may leave the machine either: no update check, no analytics.
CONFIG = """model = "m"
model_provider = "gateway"
web_search = "disabled"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.gateway]
name = "gateway"
base_url = "{base_url}"
wire_api = "responses"

[agents]
enabled = false
"""


# Codex offers `apply_patch` as a custom tool (free-form text, under a Lark grammar) to a model whose
# catalog entry says `"apply_patch_tool_type": "freeform"`, and not at all to a model it has no entry
# for. Its bundled catalog lists only OpenAI's models; a model of one's own gets an entry in a file named
# by `model_catalog_json`: the one of docs/how-to/gateway.md, for the model "m".
DOCS = Path(__file__).parents[2] / "docs" / "how-to" / "gateway.md"


def _docs_catalog() -> dict[str, Any]:
    (block,) = re.findall(r"```json\n(.*?)```", DOCS.read_text(), re.DOTALL)
    catalog: dict[str, Any] = json.loads(block)
    (entry,) = catalog["models"]
    return {"models": [{**entry, "slug": "m"}]}


# A patch in Codex's own format: it adds hello.txt
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"


def _codex_exec(
    base_url: str, home: Path, work: Path, prompt: str, catalog: dict[str, Any] | None = None, more_config: str = ""
) -> tuple[list[dict[str, Any]], str]:
    """`codex exec --json PROMPT` in WORK with HOME as its home, CATALOG as its model catalog when
    given and MORE_CONFIG (tables) after the config above; returns (its JSON events, stderr)."""
    codex = node_modules() / "@openai" / "codex" / "bin" / "codex.js"
    config = CONFIG.format(base_url=base_url) + more_config
    if catalog is not None:  # a top-level key: before the first table
        (home / "models.json").write_text(json.dumps(catalog))
        config = f"model_catalog_json = {json.dumps(str(home / 'models.json'))}\n{config}"
    (home / "config.toml").write_text(config)
    env = {**os.environ, "HOME": str(home), "CODEX_HOME": str(home)}
    env.pop("OPENAI_API_KEY", None)
    argv = ["node", str(codex), "exec", "--json", "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox", "-C", str(work), prompt]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"codex exec exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")], done.stderr


def _command(word: str) -> tuple[str, str]:
    return "exec_command", json.dumps({"cmd": f"echo {word} > {word}.txt && cat {word}.txt"})


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    (home := tmp_path / "home").mkdir()
    (work := tmp_path / "work").mkdir()
    return home, work


def _completed(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["item"] for e in events if e["type"] == "item.completed" and e["item"]["type"] == kind]


def test_codex_exec_runs_a_tool_call_through_the_gateway(scripted: Any, tmp_path: Path) -> None:
    """One turn: reasoning and a call to Codex's `exec_command`, its output sent back, the answer."""
    backend, gateway = scripted
    backend.calls, backend.final = [_command("first")], "The file is written."
    backend.reasoning = "The user wants a file; run one command."
    home, work = _dirs(tmp_path)
    events, _ = _codex_exec(gateway.base_url, home, work, "Write first.txt")
    # Codex says what it is (`originator`): its streams name reasoning as OpenAI does
    assert gateway.app.headers and not [h for h in gateway.app.headers if reads_spec_names(h)]
    offered = [t["function"]["name"] for t in backend.bodies[0]["tools"]]
    assert "exec_command" in offered and "apply_patch" not in offered  # Codex's catalog has no entry for "m"
    assert (work / "first.txt").read_text() == "first\n"
    assert [c["aggregated_output"] for c in _completed(events, "command_execution")] == ["first\n"]
    assert [m["text"] for m in _completed(events, "agent_message")] == ["The file is written."]
    assert events[-1]["type"] == "turn.completed"
    assert len(backend.bodies) == 2  # the call, then its result (and the reasoning item, accepted) and the answer
    call, result = backend.bodies[1]["messages"][-2:]
    assert [c["function"]["name"] for c in call["tool_calls"]] == ["exec_command"]
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "first" in result["content"]
    # the reasoning item of the first answer goes back as input of the second request, and is accepted
    _, second_request = gateway.app.requests
    assert [item["type"] for item in second_request["input"] if item.get("type") == "reasoning"] == ["reasoning"]


def test_codex_exec_runs_parallel_tool_calls_through_the_gateway(scripted: Any, tmp_path: Path) -> None:
    """Two calls in one reply: Codex runs both; the backend must see them as ONE assistant message with
    two tool_calls followed by the two results, which is what Chat Completions backends accept."""
    backend, gateway = scripted
    backend.calls, backend.final = [_command("first"), _command("second")], "Both files are written."
    home, work = _dirs(tmp_path)
    events, _ = _codex_exec(gateway.base_url, home, work, "Write first.txt and second.txt")
    assert (work / "first.txt").read_text() == "first\n" and (work / "second.txt").read_text() == "second\n"
    assert sorted(c["aggregated_output"] for c in _completed(events, "command_execution")) == ["first\n", "second\n"]
    assert [m["text"] for m in _completed(events, "agent_message")] == ["Both files are written."]
    call, *results = backend.bodies[1]["messages"][-3:]
    assert [c["id"] for c in call.get("tool_calls", [])] == ["call_1_0", "call_1_1"]
    assert [(m["role"], m["tool_call_id"]) for m in results] == [("tool", "call_1_0"), ("tool", "call_1_1")]


def test_codex_exec_runs_its_apply_patch_custom_tool_through_the_gateway(scripted: Any, tmp_path: Path) -> None:
    """With the catalog entry of docs/how-to/gateway.md, Codex offers `apply_patch` as a custom tool; the
    backend sees a function of one string `input` and calls it with a patch; the gateway hands Codex a
    `custom_tool_call`, Codex applies the patch and sends a `custom_tool_call_output`, which reaches the
    backend as the call's tool result."""
    backend, gateway = scripted
    backend.calls, backend.final = [("apply_patch", json.dumps({"input": PATCH}))], "The patch is applied."
    home, work = _dirs(tmp_path)
    events, _ = _codex_exec(gateway.base_url, home, work, "Add hello.txt", catalog=_docs_catalog())
    assert (work / "hello.txt").read_text() == "hello\n"
    changes = [c for item in _completed(events, "file_change") for c in item["changes"]]
    assert changes == [{"path": str(work / "hello.txt"), "kind": "add"}]
    assert [m["text"] for m in _completed(events, "agent_message")] == ["The patch is applied."]
    assert events[-1]["type"] == "turn.completed"
    first_request, second_request = gateway.app.requests
    offered = [t for t in first_request["tools"] if t.get("name") == "apply_patch"]
    assert [(t["type"], t["format"]["type"]) for t in offered] == [("custom", "grammar")]
    function = next(t["function"] for t in backend.bodies[0]["tools"] if t["function"]["name"] == "apply_patch")
    assert function["parameters"]["properties"] == {"input": {"type": "string"}}
    call, output = [item for item in second_request["input"] if item.get("type", "").startswith("custom_tool_call")]
    assert (call["type"], call["name"], call["input"]) == ("custom_tool_call", "apply_patch", PATCH)
    assert output["type"] == "custom_tool_call_output" and output["call_id"] == call["call_id"]
    assistant, result = backend.bodies[1]["messages"][-2:]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in assistant["tool_calls"]] == [
        ("apply_patch", {"input": PATCH})]  # fmt: skip
    assert result["role"] == "tool" and result["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert "A hello.txt" in result["content"]  # Codex's report of the added file


def test_codex_exec_runs_a_custom_and_a_function_call_of_one_reply(scripted: Any, tmp_path: Path) -> None:
    """A patch and a command in one reply: Codex runs both, and the backend sees one assistant message
    with both calls, followed by both results."""
    backend, gateway = scripted
    backend.calls = [("apply_patch", json.dumps({"input": PATCH})), _command("second")]
    backend.final = "Both files are written."
    home, work = _dirs(tmp_path)
    events, _ = _codex_exec(gateway.base_url, home, work, "Add hello.txt and second.txt", catalog=_docs_catalog())
    assert (work / "hello.txt").read_text() == "hello\n" and (work / "second.txt").read_text() == "second\n"
    assert [m["text"] for m in _completed(events, "agent_message")] == ["Both files are written."]
    _, second_request = gateway.app.requests
    kinds = [item["type"] for item in second_request["input"] if item.get("type", "").endswith(("call", "output"))]
    assert sorted(kinds) == ["custom_tool_call", "custom_tool_call_output", "function_call", "function_call_output"]
    call, *results = backend.bodies[1]["messages"][-3:]
    assert [c["function"]["name"] for c in call.get("tool_calls", [])] == ["apply_patch", "exec_command"]
    assert [(m["role"], m["tool_call_id"]) for m in results] == [("tool", "call_1_0"), ("tool", "call_1_1")]


@pytest.mark.parametrize(
    "tool",
    [{"type": "web_search", "external_web_access": True},
     {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.", "tools": [
         {"type": "function", "name": "close_agent", "parameters": {"type": "object", "properties": {}}}]}],
    ids=["web_search", "namespace"],
)  # fmt: skip
def test_the_tools_codex_must_switch_off_are_a_400_naming_them(scripted: Any, tool: dict[str, Any]) -> None:
    """What the Codex config of docs/how-to/gateway.md switches off, and why: these tools, as Codex sends
    them by default, are refused before any backend call."""
    backend, gateway = scripted
    function = {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}}
    reply = httpx2.post(f"{gateway.base_url}/responses", json={"model": "m", "input": "hi", "tools": [function, tool]},
                        timeout=30)  # fmt: skip
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == "tools[1].type"
    assert backend.bodies == []


# Every tool Codex 0.169 offers with the config above and the docs' catalog entry, as its first request
# lists them (type, name): each is called below. Codex adds or drops tools between versions; a change
# here is a new version to check through the gateway.
CODEX_TOOLS = [
    ("function", "exec_command"), ("function", "write_stdin"), ("function", "request_user_input"),
    ("custom", "apply_patch"), ("function", "view_image"), ("function", "get_goal"), ("function", "create_goal"),
    ("function", "update_goal"),
]  # fmt: skip

# A 1x1 PNG, for `view_image`
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63fccfc0f01f0005050200" "5fc8f1d20000000049454e44ae426082"
)  # fmt: skip


def _arguments(work: Path) -> dict[str, dict[str, Any]]:
    question = {"header": "Go", "id": "go", "question": "Go on?",
                "options": [{"label": "Yes", "description": "go on"}, {"label": "No", "description": "stop"}]}  # fmt: skip
    return {
        "create_goal": {"objective": "Write first.txt and hello.txt"},
        "get_goal": {},
        "exec_command": json.loads(_command("first")[1]),
        "write_stdin": {"session_id": 1, "chars": ""},  # no such session: Codex answers with an error text
        "request_user_input": {"questions": [question]},  # not in `codex exec`: an error text too
        "view_image": {"path": str(work / "pixel.png")},
        "apply_patch": {"input": PATCH},
        "update_goal": {"status": "complete"},
    }


def test_codex_exec_runs_each_of_its_built_in_tools_through_the_gateway(scripted: Any, tmp_path: Path) -> None:
    """Codex with the docs' config and catalog entry, its goals on (the default): the backend calls every
    tool Codex offers in one reply, `create_goal` among them. After the calls' results Codex sends its
    goal's objective as a `function_call_output` with a `name` and a `namespace` but no `call_id`; the
    gateway reads it as a user message after the results, and Codex completes its turn. Codex's
    `client_metadata` (its installation, session and thread ids) reaches the backend neither in a body
    nor in a header."""
    backend, gateway = scripted
    home, work = _dirs(tmp_path)
    (work / "pixel.png").write_bytes(PIXEL)
    arguments = _arguments(work)
    backend.calls, backend.final = [(name, json.dumps(arguments[name])) for _, name in CODEX_TOOLS], "All done."
    events, _ = _codex_exec(gateway.base_url, home, work, "Write the files", catalog=_docs_catalog())
    first_request, second_request = gateway.app.requests
    assert [(t["type"], t["name"]) for t in first_request["tools"]] == CODEX_TOOLS
    assert (work / "first.txt").read_text() == "first\n" and (work / "hello.txt").read_text() == "hello\n"
    assert [m["text"] for m in _completed(events, "agent_message")] == ["All done."]
    assert events[-1]["type"] == "turn.completed"
    uncalled = [item for item in second_request["input"] if item.get("type") == "function_call_output"
                and "call_id" not in item]  # fmt: skip
    assert [(i["namespace"], i["name"], i["output"]) for i in uncalled] == [
        ("agent", "goal_objective", "Write first.txt and hello.txt")]  # fmt: skip
    call, *rest = backend.bodies[1]["messages"][-len(CODEX_TOOLS) - 2 :]
    assert [c["function"]["name"] for c in call["tool_calls"]] == [name for _, name in CODEX_TOOLS]
    assert [m["role"] for m in rest] == ["tool"] * len(CODEX_TOOLS) + ["user"]
    assert [m["tool_call_id"] for m in rest[:-1]] == [c["id"] for c in call["tool_calls"]]
    assert rest[-1]["content"] == "agent.goal_objective: Write first.txt and hello.txt"
    assert "max_output_tokens" not in first_request  # Codex bounds no answer: the backend's default does
    installation = first_request["client_metadata"]["x-codex-installation-id"]
    assert installation in gateway.app.headers[0]["x-codex-turn-metadata"]  # Codex sends it in a header too
    assert installation not in json.dumps([backend.bodies, backend.headers])
    assert all("client_metadata" not in body for body in backend.bodies)
    codex_headers = {"session-id", "thread-id", "originator", "x-client-request-id"}
    codex_headers |= {name for name in gateway.app.headers[0] if name.startswith("x-codex-")}
    assert codex_headers <= set(gateway.app.headers[0]) and not codex_headers & set(backend.headers[0])


def test_codex_with_goals_off_offers_no_goal_tools(scripted: Any, tmp_path: Path) -> None:
    """`[features] goals = false`, as docs/how-to/gateway.md gives it: Codex offers none of its goal tools."""
    backend, gateway = scripted
    home, work = _dirs(tmp_path)
    events, _ = _codex_exec(gateway.base_url, home, work, "Say hi", more_config="\n[features]\ngoals = false\n")
    assert [m["text"] for m in _completed(events, "agent_message")] == [backend.text]
    (request,) = gateway.app.requests
    offered = [t["name"] for t in request["tools"]]
    assert "exec_command" in offered and not [name for name in offered if name.endswith("_goal")]


class RepeatingModel(ScriptedChatBackend):
    """A llama-server whose chat template has no tools (it says so at `/props`, so the gateway
    emulates them): it calls `view_image` with one made-up path whenever the schema it is sent
    lets it, and answers only when the schema leaves it nothing else (the embedded model did so)."""

    def app(self) -> Starlette:
        app = super().app()
        app.add_route("/props", self.props, methods=["GET"])
        return app

    async def props(self, request: Request) -> Response:
        return JSONResponse({"default_generation_settings": {"n_ctx": 8192}, "build_info": "b6000-abc",
                             "chat_template_caps": {"supports_tools": False}})  # fmt: skip

    def reply(self, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
        schema = body["response_format"]["json_schema"]["schema"]
        names = [option["properties"].get("name", {}).get("const") for option in schema.get("anyOf", [schema])]
        call = {"name": "view_image", "arguments": {"path": "imagegen.json"}}
        return json.dumps(call if "view_image" in names else {"answer": "Hello there."}), []


def test_codex_exec_ends_on_a_model_that_repeats_an_emulated_call(tmp_path: Path) -> None:
    """The model calls the same tool with the same arguments after each of its results: the gateway
    lets it do so twice, then asks for an answer, and Codex ends its turn with it."""
    backend = RepeatingModel()
    with AppServer(backend.app()) as backend_server:
        config = GatewayConfig(backend_url=backend_server.base_url, max_attempts=1)
        with AppServer(create_app(config)) as gateway:
            home, work = _dirs(tmp_path)
            events, _ = _codex_exec(
                gateway.base_url, home, work, "Say hello", more_config="\n[features]\ngoals = false\n"
            )
    assert [m["text"] for m in _completed(events, "agent_message")] == ["Hello there."]
    assert events[-1]["type"] == "turn.completed"
    assert len(backend.bodies) == 3  # two calls of view_image, each answered by Codex, then the answer
