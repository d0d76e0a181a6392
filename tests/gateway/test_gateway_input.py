"""How the gateway reads a request's input, over a real socket: files reach the backend byte for
byte whatever their spelling, and what could not be sent or stored (a file URL, unreadable file
data, a number past a double) is a 400 naming the field, before any backend call, on every store."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\n\x00\xff"
PDF64 = base64.b64encode(PDF).decode()
TEXT = "caf\u00e9 \u2713\nsecond line\n"


def _post(url: str, body: dict[str, Any] | bytes) -> httpx2.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(f"{url}/responses", content=raw, headers={"content-type": "application/json"}, timeout=30)


def _user(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"type": "input_text", "text": "Read it."}, *parts]}]


@pytest.mark.parametrize(
    "file_data",
    [f"data:application/pdf;base64,{PDF64}", f"DATA:application/pdf;base64,{PDF64}", PDF64],
    ids=["data-url", "upper-scheme", "bare"],
)
def test_a_file_reaches_the_backend_byte_for_byte(fake_gateway: Any, file_data: str) -> None:
    backend, gateway = fake_gateway()
    part = {"type": "input_file", "filename": "a.pdf", "file_data": file_data}
    reply = _post(gateway.base_url, {"model": "m", "input": _user(part)})
    assert reply.status_code == 200, reply.text
    sent = backend.bodies[-1]["messages"][0]["content"][1]
    assert sent["type"] == "file" and sent["file"]["filename"] == "a.pdf"
    header, _, data = sent["file"]["file_data"].partition(",")
    assert header == "data:application/pdf;base64" and base64.b64decode(data, validate=True) == PDF


def test_a_text_file_reaches_the_backend_as_its_text(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    encoded = base64.b64encode(TEXT.encode()).decode()
    parts = [{"type": "input_file", "filename": "notes.txt", "file_data": f"data:text/plain;base64,{encoded}"},
             {"type": "input_file", "filename": "notes.txt", "file_data": encoded}]  # fmt: skip
    reply = _post(gateway.base_url, {"model": "m", "input": _user(*parts)})
    assert reply.status_code == 200, reply.text
    assert backend.bodies[-1]["messages"][0]["content"][1:] == [{"type": "text", "text": TEXT}] * 2


def test_unreadable_file_data_is_a_400_naming_it(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    part = {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,not base64!"}
    reply = _post(gateway.base_url, {"model": "m", "input": _user(part)})
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == "input[0].content[1].file_data"
    assert backend.raw_bodies == []


@pytest.mark.parametrize("kind", ["function_call_output", "custom_tool_call_output"])
def test_a_file_url_in_a_tool_output_is_a_400_before_the_backend_call(fake_gateway: Any, kind: str) -> None:
    """The gateway fetches no URL for a client, wherever the part sits."""
    backend, gateway = fake_gateway()
    call = {"type": "function_call" if kind == "function_call_output" else "custom_tool_call", "call_id": "c1",
            "name": "read", "arguments": "{}", "input": "x"}  # fmt: skip
    output = [{"type": "input_file", "file_url": "http://169.254.169.254/latest/meta-data/"}]
    items = [{"role": "user", "content": "hi"}, call, {"type": kind, "call_id": "c1", "output": output}]
    reply = _post(gateway.base_url, {"model": "m", "input": items})
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == "input[2].output[0].file_url" and "fetches no URL" in error["message"]
    assert backend.raw_bodies == []


def _store(kind: str, tmp_path: Path, postgres_url: str | None) -> str | None:
    return {"memory": None, "sqlite": str(tmp_path / "responses.db"), "postgres": postgres_url}[kind]


UNSTORABLE = [
    (b'{"model": "m", "input": "hi", "metadata": {"x": 1e999}}', "metadata.x"),
    (b'{"model": "m", "input": "hi", "metadata": {"x": -1E400}}', "metadata.x"),
    (
        b'{"model": "m", "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},'
        b' {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "t", "n": 2e308}]}]}',
        "input[1].output[0].n",
    ),
    (
        b'{"model": "m", "input": "hi", "tools": [{"type": "function", "name": "f",'
        b' "parameters": {"type": "number", "maximum": 1e999}}]}',
        "tools[0].parameters.maximum",
    ),
    (b'{"model": "m", "input": "hi", "temperature": 1e999}', "temperature"),
    (
        b'{"model": "m", "input": "hi", "text": {"format": {"type": "json_schema", "name": "n",'
        b' "schema": {"type": "number", "minimum": -1e999}}}}',
        "text.format.schema.minimum",
    ),
]


@pytest.mark.parametrize("store", ["memory", "sqlite", "postgres"])
@pytest.mark.parametrize(
    ("raw", "param"), UNSTORABLE, ids=["metadata", "negative", "tool-output", "tool", "temperature", "format"]
)
def test_a_number_past_a_double_is_a_400_before_the_backend_call(
    fake_gateway: Any, request: pytest.FixtureRequest, tmp_path: Path, store: str, raw: bytes, param: str
) -> None:
    postgres_url = request.getfixturevalue("postgres_url") if store == "postgres" else None
    backend, gateway = fake_gateway(store=_store(store, tmp_path, postgres_url))
    for flags in (b"", b', "stream": true', b', "background": true'):
        reply = _post(gateway.base_url, raw[:-1] + flags + b"}")
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert error["param"] == param and "past the range of a double" in error["message"]
    assert backend.raw_bodies == []
    largest = (
        b'{"model": "m", "input": [{"role": "user", "content": "hi", "n": 1.7976931348623157e308}],'
        b' "metadata": {"x": 1.7976931348623157e308}}'
    )  # the largest double: stored on the same store
    kept = _post(gateway.base_url, largest)
    assert kept.status_code == 200, kept.text
    stored = httpx2.get(f"{gateway.base_url}/responses/{kept.json()['id']}", timeout=30).json()
    assert stored["metadata"] == {"x": 1.7976931348623157e308} and len(backend.raw_bodies) == 1
