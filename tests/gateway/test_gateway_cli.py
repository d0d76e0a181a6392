"""`so-middleware gateway` as a real subprocess: it serves, prints its URL, and stops cleanly on
SIGTERM or Ctrl-C (SIGINT) with no llama-server left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from pydantic import BaseModel

from so_middleware.gateway._cli import EMBEDDED_SLOTS
from so_middleware.gateway._server import free_port

ROOT = Path(__file__).resolve().parents[2]


class Person(BaseModel):
    name: str
    age: int


def _start(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "so_middleware.cli", "gateway", "--port", str(port), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, **(env or {})},
    )  # fmt: skip
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx2.get(f"{root}/health", timeout=2).status_code == 200:
                return process, f"{root}/v1"
        except httpx2.TransportError:
            time.sleep(0.3)
    process.kill()
    raise AssertionError(f"the gateway did not start: {process.communicate()[1][-2000:]}")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.local_server
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_no_arguments_serves_the_local_model_and_stops_both(stop: signal.Signals) -> None:
    process, base_url = _start(env={"SO_MIDDLEWARE_THREADS": "1"})
    try:
        [llama] = _children(process.pid)
        command = (Path("/proc") / str(llama) / "cmdline").read_text().split("\0")
        props = httpx2.get(f"http://127.0.0.1:{command[command.index('--port') + 1]}/props", timeout=30).json()
        # many requests at once (an agent client, a test runner) do not queue behind one long answer,
        # and each slot keeps the model's whole 8,192-token context (one KV pool they share)
        assert props["total_slots"] == EMBEDDED_SLOTS, props
        assert props["default_generation_settings"]["n_ctx"] == 8192, props
        client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=120)
        response = client.responses.parse(input="John Smith is 35.", model="ignored-by-llama-server",
                                          text_format=Person, max_output_tokens=60)  # fmt: skip
        assert isinstance(response.output_parsed, Person)
        client.close()
        process.send_signal(stop)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert f"Responses API base_url: {base_url}" in out
    assert not _alive(llama)  # the llama-server went with it


def test_backend_url_and_api_keys(fake_backend: Any) -> None:
    backend, backend_server = fake_backend
    process, base_url = _start("--backend", backend_server.base_url, "--api-key", "k1",
                               env={"SO_MIDDLEWARE_BACKEND_API_KEY": "backend-secret"})  # fmt: skip
    try:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=base_url, api_key="wrong", max_retries=0).responses.create(model="m", input="hi")
        client = openai.OpenAI(base_url=base_url, api_key="k1", max_retries=0)
        assert client.responses.create(model="m", input="hi").output_text == backend.text
        client.close()
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0
    assert backend.authorizations == ["Bearer backend-secret"]  # the refused request never reached the backend


def test_api_keys_from_the_environment(fake_backend: Any) -> None:
    _, backend_server = fake_backend
    process, base_url = _start("--backend", backend_server.base_url, env={"SO_MIDDLEWARE_GATEWAY_API_KEYS": "a,b"})
    try:
        assert httpx2.post(f"{base_url}/responses", json={"model": "m", "input": "hi"}).status_code == 401
        ok = httpx2.post(
            f"{base_url}/responses", json={"model": "m", "input": "hi"}, headers={"authorization": "Bearer b"}
        )
        assert ok.status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_defaults_are_loopback_port_8000_and_16_mib() -> None:
    from so_middleware.gateway import GatewayConfig
    from so_middleware.gateway._cli import parser

    args = parser().parse_args([])
    assert (args.host, args.port, args.max_body_bytes) == ("127.0.0.1", 8000, 16 * 1024 * 1024)
    assert GatewayConfig(backend_url="x").max_body_bytes == 16 * 1024 * 1024
    assert args.backend is None and args.store is None and args.validate is False
    # the connection limits docs/how-to/gateway.md documents: 400 connections, 10 s for headers, 60 s for a body
    assert (args.max_connections, args.header_timeout, args.body_timeout) == (400, 10.0, 60.0)
    config = GatewayConfig(backend_url="x")
    assert (config.max_connections, config.header_timeout, config.body_timeout) == (400, 10.0, 60.0)
    # after two identical answered calls, an emulated "auto" turn may only answer (docs/how-to/gateway.md)
    assert args.emulated_call_repeats == config.emulated_call_repeats == 2


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--port", "99999"], {}, "99999"),
        (["--port", "0"], {}, "from 1 to 65535"),
        (["--store", "/missing/dir/responses.db"], {}, "/missing/dir/responses.db"),
        (["--max-body-bytes", "-1"], {}, "--max-body-bytes"),
        (["--max-body-bytes", "0"], {}, "--max-body-bytes"),
        (["--max-connections", "0"], {}, "--max-connections"),
        (["--header-timeout", "0"], {}, "--header-timeout"),
        (["--body-timeout", "nan"], {}, "--body-timeout"),
        (["--emulated-call-repeats", "0"], {}, "--emulated-call-repeats"),
        (["--api-key", ""], {}, "API key 1 of 1 is empty"),
        (["--api-key", "k1", "--api-key", "  "], {}, "API key 2 of 2 is empty"),
        ([], {"SO_MIDDLEWARE_GATEWAY_API_KEYS": "k1,,k2"}, "SO_MIDDLEWARE_GATEWAY_API_KEYS has an empty key"),
        ([], {"SO_MIDDLEWARE_GATEWAY_API_KEYS": ""}, "SO_MIDDLEWARE_GATEWAY_API_KEYS has an empty key"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_a_wrong_option_is_exit_2_naming_it_before_anything_starts(
    args: list[str], env: dict[str, str], named: str
) -> None:
    command = [sys.executable, "-m", "so_middleware.cli", "gateway", "--backend", "http://127.0.0.1:9/v1", *args]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**os.environ, **env}, timeout=60)
    assert result.returncode == 2, result.stderr[-2000:]
    assert named in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""  # it never said it was serving


def test_without_the_extra_the_import_error_names_it() -> None:
    code = "import sys; sys.modules['starlette'] = None\nimport so_middleware.gateway"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 1
    assert "pip install 'so-middleware[gateway]'" in result.stderr


def test_the_server_runs_with_its_start_up_objects_frozen_out_of_the_collector() -> None:
    """`so-middleware gateway` serves with `gc.freeze()` done (the modules and the app are not walked
    by every collection a request's garbage triggers), and unfreezes when the server stops."""
    import gc

    from so_middleware.gateway._cli import _serve

    class Server:
        frozen = 0

        def run(self) -> None:
            self.frozen = gc.get_freeze_count()

    server = Server()
    _serve(server)
    assert server.frozen > 10_000  # every object alive at start-up: far more than any request makes
    assert gc.get_freeze_count() == 0


def test_an_app_made_by_create_app_leaves_the_collector_as_it_is() -> None:
    """Only `so-middleware gateway` freezes: an app served some other way does not touch the process's collector."""
    import gc

    from so_middleware.gateway import GatewayConfig, create_app

    create_app(GatewayConfig(backend_url="http://127.0.0.1:1/v1"))
    assert gc.get_freeze_count() == 0
