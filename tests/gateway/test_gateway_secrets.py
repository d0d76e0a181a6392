"""No secret leaves where it was put: keys refused when empty, backend keys masked in the errors the
gateway forwards, credentials never printed, store files private."""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import openai
import pytest
from test_gateway_cli import _start

from so_middleware import UserError
from so_middleware.gateway import GatewayConfig, SQLiteStore, create_app
from so_middleware.gateway._server import free_port

BACKEND_KEY = "backend-key-0123456789"


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (("",), "API key 1 of 1 is empty"),
        (("k1", "   "), "API key 2 of 2 is empty"),
        ((" k1",), "whitespace"),
        ("secret", "not one string"),
        ((b"k1",), "is a bytes, not a string"),
    ],
)
def test_empty_or_malformed_keys_are_refused(keys: Any, message: str) -> None:
    with pytest.raises(UserError, match=message):
        GatewayConfig(backend_url="http://127.0.0.1:9/v1", api_keys=keys)
    with pytest.raises(UserError, match=message):
        create_app(GatewayConfig(backend_url="http://127.0.0.1:9/v1", api_keys=keys))


def test_the_environment_keys_are_stripped(fake_backend: Any) -> None:
    _, backend_server = fake_backend
    process, base_url = _start("--backend", backend_server.base_url, env={"SO_MIDDLEWARE_GATEWAY_API_KEYS": "k1, k2"})
    try:
        for key in ("k1", "k2"):
            reply = httpx2.post(f"{base_url}/responses", json={"model": "m", "input": "hi"}, timeout=30,
                                headers={"authorization": f"Bearer {key}"})  # fmt: skip
            assert reply.status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=30)


@pytest.mark.parametrize("mode", ["plain", "stream", "background"])
def test_a_backend_error_quoting_keys_is_forwarded_masked(fake_gateway: Any, mode: str) -> None:
    backend, gateway = fake_gateway(backend_api_key=BACKEND_KEY)
    quoted = (f"Incorrect API key provided: {BACKEND_KEY}. Headers: Authorization: Bearer {BACKEND_KEY}; "
              "other keys: sk-proj-abcdef123456, http://user:hunter22@db.internal/x")  # fmt: skip
    backend.error = (401, {"error": {"message": quoted, "type": "invalid_request_error", "param": None,
                                     "code": "invalid_api_key"}})  # fmt: skip
    body = {"model": "m", "input": "hi", "stream": mode == "stream", "background": mode == "background"}
    reply = httpx2.post(f"{gateway.base_url}/responses", json=body, timeout=30)
    seen = reply.text
    if mode == "background":  # the run fails on its own; its stored error is what a client reads
        response_id = reply.json()["id"]
        deadline = time.monotonic() + 30
        while reply.json()["status"] in ("queued", "in_progress") and time.monotonic() < deadline:
            reply = httpx2.get(f"{gateway.base_url}/responses/{response_id}", timeout=30)
        assert reply.json()["status"] == "failed"
        seen = reply.text
    else:
        assert reply.status_code == 401
    assert "Incorrect API key provided" in seen and "sk-***" in seen and "Bearer ***" in seen
    assert "http://***@db.internal" in seen
    for secret in (BACKEND_KEY, "sk-proj-abcdef123456", "hunter22"):
        assert secret not in seen
    assert backend.authorizations[-1] == f"Bearer {BACKEND_KEY}"  # the backend got the real key


def test_credentials_in_the_backend_url_are_never_printed() -> None:
    backend = f"http://gateway:pa55w0rd-x@127.0.0.1:{free_port()}/v1"  # nothing listens there
    process, base_url = _start("--backend", backend)
    try:
        reply = httpx2.post(f"{base_url}/responses", json={"model": "m", "input": "hi"}, timeout=60)
        assert reply.status_code == 502 and "pa55w0rd" not in reply.text
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)
    assert "backend:                http://***@127.0.0.1:" in out
    assert "pa55w0rd" not in out + err


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_sqlite_store_is_created_private(tmp_path: Path) -> None:
    path = tmp_path / "responses.db"
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")

    async def use(store: SQLiteStore, in_wal_mode: bool) -> None:
        await store.open()
        try:
            await store.put({"id": "resp_1", "status": "completed"}, [], "owner")
            assert [_mode(made) for made in (path, wal, shm) if made.exists()] == [0o600] * (3 if in_wal_mode else 1)
        finally:
            await store.close()

    old = os.umask(0o022)  # the usual umask: without care, the file would be 0644
    try:
        anyio.run(use, SQLiteStore(str(path)), False)
        with sqlite3.connect(path) as db:  # a store its owner switched to WAL: SQLite makes -wal and -shm
            db.execute("PRAGMA journal_mode=WAL")
        db.close()
        anyio.run(use, SQLiteStore(str(path)), True)
    finally:
        os.umask(old)


def test_an_existing_store_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    path.touch(mode=0o640)
    path.chmod(0o640)  # the owner chose to share it with a group
    anyio.run(_open_and_close, SQLiteStore(str(path)))
    assert _mode(path) == 0o640


async def _open_and_close(store: SQLiteStore) -> None:
    await store.open()
    await store.close()


def test_through_the_gateway_the_store_file_is_0600(fake_gateway: Any, tmp_path: Path) -> None:
    path = tmp_path / "responses.db"
    old = os.umask(0o022)
    try:
        _, gateway = fake_gateway(store=str(path))
        client = openai.OpenAI(base_url=gateway.base_url, api_key="none", max_retries=0)
        client.responses.create(model="m", input="hi")
        client.close()
    finally:
        os.umask(old)
    assert _mode(path) == 0o600
