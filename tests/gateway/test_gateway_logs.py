"""The gateway's logs: one access line per request (no key, no content), text or JSON, at the
level asked for; and a quiet stop with a request in flight, in a real `so-middleware gateway`."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from websockets.sync.client import connect

from so_middleware.gateway._logs import ACCESS_LOGGER, JSONFormatter
from so_middleware.gateway._server import free_port

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-client-key-0123456789"
SECRET_INPUT = "the launch code is 0000"


def _wait(condition: Any, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        time.sleep(0.05)


def test_one_access_line_per_request_with_no_key_and_no_content(
    fake_gateway: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    backend, gateway = fake_gateway(api_keys=(KEY,))
    client = openai.OpenAI(base_url=gateway.base_url, api_key=KEY, max_retries=0)
    created = client.responses.create(model="m", input=SECRET_INPUT)
    with pytest.raises(openai.BadRequestError):  # hosted tools: refused before any backend call
        client.responses.create(model="m", input=SECRET_INPUT, tools=[{"type": "web_search"}])
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=gateway.base_url, api_key="wrong", max_retries=0).responses.create(model="m", input="x")
    backend.chunk_delay = 0.5  # the stream lasts 2 s after its first event
    with client.responses.create(model="m", input=SECRET_INPUT, stream=True) as events:
        next(iter(events))
        assert len([r for r in caplog.records if r.name == ACCESS_LOGGER]) == 3  # a stream's line comes at its end
        streamed = next(e for e in events if e.type == "response.completed").response
    client.close()
    _wait(lambda: len([r for r in caplog.records if r.name == ACCESS_LOGGER]) == 4)
    ok, refused, stranger, stream = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    key_id = hashlib.sha256(KEY.encode()).hexdigest()[:12]
    assert (stream.status, stream.response_id, stream.key_id) == (200, streamed.id, key_id)  # type: ignore[attr-defined]
    assert (ok.method, ok.path, ok.status, ok.response_id, ok.key_id) == (  # type: ignore[attr-defined]
        "POST", "/v1/responses", 200, created.id, key_id,
    )  # fmt: skip
    assert '"POST /v1/responses" 200 ' in ok.getMessage() and f"id={created.id} key={key_id}" in ok.getMessage()
    assert (refused.status, refused.key_id) == (400, key_id)  # type: ignore[attr-defined]
    assert (stranger.status, stranger.key_id) == (401, None)  # type: ignore[attr-defined]
    for record in (ok, refused, stranger, stream):
        assert record.duration_ms >= 0  # type: ignore[attr-defined]
        logged = record.getMessage() + JSONFormatter().format(record)
        assert KEY not in logged and "wrong" not in logged
        assert SECRET_INPUT not in logged and backend.text not in logged and "web_search" not in logged


def test_one_access_line_per_websocket_turn(fake_gateway: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Each `response.create` on a socket is a line as an HTTP request is: 200 for a turn that
    streamed its response, the error event's status for one refused; no key, no content."""
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    backend, gateway = fake_gateway(api_keys=(KEY,))
    url = gateway.base_url.replace("http", "ws", 1) + "/responses"
    with connect(url, additional_headers={"Authorization": f"Bearer {KEY}"}) as socket:
        socket.send(json.dumps({"type": "response.create", "model": "m", "input": SECRET_INPUT}))
        while (event := json.loads(socket.recv(timeout=30)))["type"] != "response.completed":
            pass
        socket.send(json.dumps({"type": "response.create", "model": "m", "input": SECRET_INPUT, "stream": True}))
        assert json.loads(socket.recv(timeout=30))["status"] == 400
        _wait(lambda: len([r for r in caplog.records if r.name == ACCESS_LOGGER]) == 2)
    done, refused = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    key_id = hashlib.sha256(KEY.encode()).hexdigest()[:12]
    assert (done.method, done.path, done.status, done.response_id, done.key_id) == (  # type: ignore[attr-defined]
        "response.create", "/v1/responses", 200, event["response"]["id"], key_id,
    )  # fmt: skip
    assert (refused.method, refused.status, refused.response_id, refused.key_id) == (  # type: ignore[attr-defined]
        "response.create", 400, None, key_id,
    )  # fmt: skip
    assert '"response.create /v1/responses" 200 ' in done.getMessage()
    for record in (done, refused):
        assert record.duration_ms >= 0  # type: ignore[attr-defined]
        logged = record.getMessage() + JSONFormatter().format(record)
        assert KEY not in logged and SECRET_INPUT not in logged and backend.text not in logged


def test_a_path_cannot_forge_a_line(fake_gateway: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    _, gateway = fake_gateway()
    assert httpx2.get(f"{gateway.root_url}/v1/responses/x%0A200%20forged", timeout=10).status_code == 404
    _wait(lambda: any(r.name == ACCESS_LOGGER for r in caplog.records))
    [record] = [r for r in caplog.records if r.name == ACCESS_LOGGER]
    assert "\n" not in record.getMessage() and record.path == "/v1/responses/x%0A200%20forged"  # type: ignore[attr-defined]
    assert record.response_id is None  # type: ignore[attr-defined]


def test_a_client_that_hangs_up_mid_body_is_a_quiet_499(fake_gateway: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="so_middleware")
    backend, gateway = fake_gateway()
    with socket.create_connection((gateway.host, gateway.port), timeout=10) as raw:
        raw.sendall(b"POST /v1/responses HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n"
                    b'content-length: 100\r\n\r\n{"model": ')  # fmt: skip
        _wait(lambda: len(gateway.server.server_state.tasks) == 1)  # its headers are in: the app runs
    _wait(lambda: any(r.name == ACCESS_LOGGER for r in caplog.records))
    assert [r.status for r in caplog.records if r.name == ACCESS_LOGGER] == [499]  # type: ignore[attr-defined]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []  # no "unexpected error"
    assert backend.raw_bodies == []


def test_the_json_format_is_one_object_a_line() -> None:
    record = logging.LogRecord(ACCESS_LOGGER, logging.INFO, __file__, 1, 'a "quoted"\nline %d', (7,), None)
    record.__dict__.update(status=200, key_id=None, method="GET")
    line = JSONFormatter().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["message"] == 'a "quoted"\nline 7' and parsed["status"] == 200 and parsed["key_id"] is None
    assert parsed["level"] == "INFO" and parsed["logger"] == ACCESS_LOGGER and parsed["time"].endswith("+00:00")


# ------------------------------------------------------------------ a real `so-middleware gateway`


def _start(backend_url: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "so_middleware.cli", "gateway", "--port", str(port), "--backend", backend_url, *args],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=dict(os.environ),
    )  # fmt: skip
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx2.get(f"{root}/health", timeout=2).status_code == 200:
                return process, root
        except httpx2.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the gateway did not start: {process.communicate()[1][-2000:]}")


def _stopped(process: subprocess.Popen[str], stop: signal.Signals = signal.SIGTERM) -> str:
    try:
        process.send_signal(stop)
        return process.communicate(timeout=30)[1]
    finally:
        process.kill()


def test_json_logs_on_stderr_one_object_a_line(fake_backend: Any) -> None:
    _, backend_server = fake_backend
    process, root = _start(backend_server.base_url, "--log-format", "json")
    assert (
        httpx2.post(f"{root}/v1/responses", json={"model": "m", "input": SECRET_INPUT}, timeout=30).status_code == 200
    )
    assert httpx2.post(f"{root}/v1/responses", content=b"{not json", timeout=30).status_code == 400
    stderr = _stopped(process)
    assert process.returncode == 0
    lines = [json.loads(line) for line in stderr.splitlines()]  # every line is JSON
    access = [line for line in lines if line["logger"] == ACCESS_LOGGER and line["path"] == "/v1/responses"]
    assert [line["status"] for line in access] == [200, 400]
    assert access[0]["response_id"].startswith("resp_") and access[0]["method"] == "POST"
    assert SECRET_INPUT not in stderr


@pytest.mark.parametrize("level", [None, "warning"], ids=["default", "warning"])
def test_the_log_level_is_honoured(fake_backend: Any, level: str | None) -> None:
    _, backend_server = fake_backend
    process, root = _start(backend_server.base_url, *(["--log-level", level] if level else []))
    assert httpx2.post(f"{root}/v1/responses", json={"model": "m", "input": "hi"}, timeout=30).status_code == 200
    stderr = _stopped(process)
    assert process.returncode == 0
    assert ('"POST /v1/responses" 200' in stderr) is (level is None), stderr[-2000:]  # info by default
    assert (" INFO " in stderr) is (level is None)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream-before-first-byte"])
def test_ctrl_c_with_a_request_in_flight_is_quiet_and_exits_0(fake_backend: Any, stream: bool) -> None:
    backend, backend_server = fake_backend
    backend.plain_delay = backend.first_byte_delay = 120.0  # the backend will not answer before the stop
    process, root = _start(backend_server.base_url)
    answers: list[httpx2.Response] = []
    body = {"model": "m", "input": "hi", "stream": stream}
    asking = threading.Thread(target=lambda: answers.append(httpx2.post(f"{root}/v1/responses", json=body, timeout=60)))
    asking.start()
    _wait(lambda: len(backend.raw_bodies) == 1)
    stderr = _stopped(process, signal.SIGINT)
    asking.join(60)
    assert process.returncode == 0
    assert "Traceback" not in stderr and "Exception in ASGI application" not in stderr, stderr[-3000:]
    [answer] = answers
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "server_shutting_down"
    assert '"POST /v1/responses" 503' in stderr
    _wait(lambda: backend.plain_abandoned + backend.streams_closed_early == 1)  # its backend call was closed
