"""Capability discovery: adapters built from a `base_url` alone identify the server once.

The probes run over `httpx2.MockTransport` for servers this machine does not have (vLLM,
Ollama, TGI, LM Studio: bodies as their documented version/info endpoints answer) and against
the real llama-server for llama.cpp.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx2
import openai
import pytest

from so_middleware.openai import (
    GATEWAY_RESPONSES,
    LLAMA_SERVER_CHAT,
    LLAMA_SERVER_RESPONSES,
    OLLAMA_CHAT,
    OPENAI_API,
    OPENAI_COMPATIBLE,
    VLLM_CHAT,
    OpenAIChatClient,
    OpenAIResponsesClient,
    ServerInfo,
    reset_discovery,
    server_profile,
)
from so_middleware.providers._discovery import classify, is_hosted, server_root

LLAMA_PROPS = {
    "default_generation_settings": {"n_ctx": 2048},
    "build_info": "b6000-abc",
    "chat_template_caps": {"supports_tools": False},
}


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    reset_discovery()
    yield
    reset_discovery()


def completion_body(text: str = '{"name": "Ada", "age": 36}') -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
    }


def sse_body(text: str = "hello") -> str:
    chunks = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}],
        },
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
    ]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


class Backend:
    """A MockTransport backend: answers the probe paths it is given and chat completions."""

    def __init__(self, probes: dict[str, Any] | None = None, *, stall: bool = False) -> None:
        self.probes = probes or {}
        self.stall = stall
        self.seen: Counter[str] = Counter()

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.seen[f"{request.method} {request.url.path}"] += 1
        if request.method == "GET":
            if self.stall:
                await anyio.sleep(30)
            body = self.probes.get(request.url.path)
            return httpx2.Response(200, json=body) if body is not None else httpx2.Response(404, json={"error": "no"})
        if json.loads(request.content).get("stream"):
            return httpx2.Response(200, text=sse_body(), headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=completion_body())

    def sdk(self, base_url: str = "http://inference.internal:8000/v1") -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key="k", base_url=base_url, http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        )

    @property
    def probe_count(self) -> int:
        return sum(n for key, n in self.seen.items() if key.startswith("GET "))


# ------------------------------------------------------------------------------- pure parts


@pytest.mark.parametrize(
    ("answers", "kind", "version"),
    [
        ({"/props": LLAMA_PROPS, "/health": {"status": "ok"}}, "llama.cpp", "b6000-abc"),
        ({"/api/version": {"version": "0.12.6"}}, "ollama", "0.12.6"),
        ({"/version": {"version": "0.11.0"}}, "vllm", "0.11.0"),
        ({"/info": {"model_id": "m", "router": "text-generation-router", "version": "3.3.6"}}, "tgi", "3.3.6"),
        ({"/api/v0/models": {"object": "list", "data": []}}, "lmstudio", None),
        (
            {"/health": {"status": "ok", "service": "so-middleware-gateway", "version": "0.2.0"}},
            "so-middleware-gateway",
            "0.2.0",
        ),
        ({"/health": {"status": "ok"}}, "unknown", None),
        ({"/version": "0.1"}, "unknown", None),  # not an object: not recognised
        ({}, "unknown", None),
    ],
)
def test_classify_names_the_server_from_its_probe_answers(
    answers: dict[str, Any], kind: str, version: str | None
) -> None:
    info = classify(answers)
    assert (info.kind, info.version) == (kind, version)


def test_llama_cpp_tool_support_is_read_from_its_template_caps() -> None:
    assert classify({"/props": LLAMA_PROPS}).facts == {"supports_tools": False}
    with_tools = {**LLAMA_PROPS, "chat_template_caps": {"supports_tools": True}}
    assert server_profile(classify({"/props": with_tools}), "chat").tools is True
    assert server_profile(classify({"/props": LLAMA_PROPS}), "chat") is LLAMA_SERVER_CHAT


def test_server_root_and_hosted_hosts() -> None:
    assert server_root("http://h:8000/v1/") == "http://h:8000"
    assert server_root("http://h:8000/proxy/v1") == "http://h:8000/proxy"
    assert server_root("http://h:8000") == "http://h:8000"
    assert is_hosted("https://api.openai.com/v1/") and is_hosted("https://x.openai.azure.com/openai")
    assert is_hosted("https://api.anthropic.com") and not is_hosted("http://127.0.0.1:8080/v1")
    assert not is_hosted("https://api.openai.com.evil.example/v1")


@pytest.mark.parametrize(
    ("info", "route", "profile"),
    [
        (ServerInfo("llama.cpp"), "chat", LLAMA_SERVER_CHAT),
        (ServerInfo("llama.cpp"), "responses", LLAMA_SERVER_RESPONSES),
        (ServerInfo("vllm"), "chat", VLLM_CHAT),
        (ServerInfo("ollama"), "chat", OLLAMA_CHAT),
        (ServerInfo("so-middleware-gateway"), "responses", GATEWAY_RESPONSES),
        (ServerInfo("tgi"), "chat", OPENAI_COMPATIBLE),
        (ServerInfo("unknown"), "responses", OPENAI_COMPATIBLE),
    ],
)
def test_each_server_kind_gets_its_shipped_profile(info: ServerInfo, route: Any, profile: Any) -> None:
    assert server_profile(info, route) == profile


# ------------------------------------------------------------------ over a mock transport


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_the_first_call_identifies_the_server_and_picks_its_profile(stream: bool) -> None:
    backend = Backend({"/version": {"version": "0.11.0"}})
    client = OpenAIChatClient(backend.sdk(), "m")
    assert client.discovery_pending and client.capabilities is OPENAI_COMPATIBLE
    if stream:
        updates = client.get_response("hi", stream=True)
        assert "".join([u.text async for u in updates]) == "hello"
    else:
        response = await client.get_response("hi")
        assert response.text
    assert client.capabilities is VLLM_CHAT
    assert client.server_info == ServerInfo("vllm", "0.11.0")
    assert not client.discovery_pending
    assert backend.probe_count > 0


@pytest.mark.anyio
async def test_a_thousand_concurrent_first_calls_make_one_probe() -> None:
    backend = Backend({"/props": LLAMA_PROPS})
    clients = [OpenAIChatClient(backend.sdk(), "m") for _ in range(4)]  # four adapters, one server

    async def call(index: int) -> None:
        await clients[index % len(clients)].get_response("hi")

    async with anyio.create_task_group() as group:
        for index in range(1000):
            group.start_soon(call, index)
    assert backend.seen["POST /v1/chat/completions"] == 1000
    assert backend.seen["GET /props"] == 1  # every probe path asked once, whatever the callers
    assert all(n == 1 for key, n in backend.seen.items() if key.startswith("GET "))
    assert all(c.capabilities is LLAMA_SERVER_CHAT for c in clients)


@pytest.mark.anyio
async def test_a_stalled_probe_costs_one_short_timeout_and_is_not_retried() -> None:
    backend = Backend(stall=True)
    client = OpenAIChatClient(backend.sdk(), "m")
    with anyio.fail_after(10):  # the probe's own bound is 1.5 s
        await client.get_response("hi")
    probes = backend.probe_count
    assert client.capabilities is OPENAI_COMPATIBLE and client.server_info == ServerInfo("unknown")
    other = OpenAIChatClient(backend.sdk(), "m")  # same server: the failed probe is remembered
    await other.get_response("hi")
    assert backend.probe_count == probes
    assert backend.seen["POST /v1/chat/completions"] == 2


@pytest.mark.anyio
async def test_failing_probes_fall_back_to_the_generic_profile() -> None:
    async def refuse(request: httpx2.Request) -> httpx2.Response:
        if request.method == "GET":
            raise httpx2.ConnectError("refused")
        return httpx2.Response(200, json=completion_body("hello"))

    sdk = openai.AsyncOpenAI(
        api_key="k", base_url="http://h:1/v1", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(refuse))
    )
    client = OpenAIChatClient(sdk, "m")
    assert (await client.get_response("hi")).text == "hello"
    assert client.capabilities is OPENAI_COMPATIBLE


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda sdk: OpenAIChatClient(sdk, "m", discover=False), OPENAI_COMPATIBLE),
        (lambda sdk: OpenAIChatClient(sdk, "m", capabilities=LLAMA_SERVER_CHAT), LLAMA_SERVER_CHAT),
    ],
)
async def test_no_probe_when_discovery_is_off_or_a_profile_is_given(
    make: Callable[[openai.AsyncOpenAI], OpenAIChatClient], expected: Any
) -> None:
    backend = Backend({"/props": LLAMA_PROPS})
    client = make(backend.sdk())
    await client.get_response("hi")
    assert backend.probe_count == 0
    assert client.capabilities is expected


@pytest.mark.anyio
async def test_hosted_apis_are_never_probed() -> None:
    backend = Backend({"/props": LLAMA_PROPS})
    client = OpenAIChatClient(backend.sdk("https://api.openai.com/v1"), "gpt-4o-mini")
    assert not client.discovery_pending
    await client.get_response("hi")
    assert backend.probe_count == 0
    assert client.capabilities is OPENAI_API


@pytest.mark.anyio
async def test_probes_carry_the_sdk_clients_auth_and_log_one_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[httpx2.Request] = []

    async def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if request.url.path == "/api/version":
            return httpx2.Response(200, json={"version": "0.12.6"})
        if request.method == "GET":
            return httpx2.Response(404)
        return httpx2.Response(200, json=completion_body())

    sdk = openai.AsyncOpenAI(
        api_key="secret",
        base_url="http://h:11434/v1",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handle)),
    )
    client = OpenAIChatClient(sdk, "llama3")
    with caplog.at_level(logging.DEBUG, logger="so_middleware.discovery"):
        await client.discover_capabilities()
    probes = [r for r in seen if r.method == "GET"]
    assert {r.url.path for r in probes} >= {"/props", "/api/version", "/version"}
    assert all(r.headers["authorization"] == "Bearer secret" for r in probes)
    assert client.capabilities is OLLAMA_CHAT
    lines = [r.getMessage() for r in caplog.records if r.name == "so_middleware.discovery"]
    assert lines == ["identified ollama at http://h:11434 (version 0.12.6)"]


@pytest.mark.anyio
async def test_a_gateway_is_recognised_on_the_responses_route() -> None:
    backend = Backend({"/health": {"status": "ok", "service": "so-middleware-gateway"}})
    client = OpenAIResponsesClient(backend.sdk(), "m")
    assert await client.discover_capabilities() is GATEWAY_RESPONSES


# -------------------------------------------------------------------- the real llama-server


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_probe_404s_log_at_debug_and_the_calls_own_request_at_info(
    caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    backend = Backend()  # every probe answers 404, as a server of no known kind does
    client = OpenAIChatClient(backend.sdk(), "m")
    with caplog.at_level(logging.INFO):
        if stream:
            assert "".join([u.text async for u in client.get_response("hi", stream=True)]) == "hello"
        else:
            assert (await client.get_response("hi")).text
    http_lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "httpx2"]
    assert backend.probe_count == 6
    assert [line for level, line in http_lines if level >= logging.INFO and "404" in line] == []
    assert any("POST" in line and level == logging.INFO for level, line in http_lines)  # other requests unchanged


@pytest.mark.anyio
async def test_probe_requests_stay_visible_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    backend = Backend()
    client = OpenAIChatClient(backend.sdk(), "m")
    with caplog.at_level(logging.DEBUG):
        await client.discover_capabilities()
    probe_lines = [r for r in caplog.records if r.name == "httpx2" and "GET" in r.getMessage()]
    assert len(probe_lines) == 6 and all(r.levelno == logging.DEBUG for r in probe_lines)
