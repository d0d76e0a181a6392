"""Requests that used to crash the gateway (a 500 with a stack trace, or a stored response nobody
can read) get a typed answer: 400 before any backend call, 404 for an id that cannot exist, 502 for
a backend answer that cannot be read."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest
from fakes import sdk


def _post(url: str, raw: bytes) -> httpx2.Response:
    return httpx2.post(f"{url}/responses", content=raw, headers={"content-type": "application/json"}, timeout=30)


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"model": "m", "input": "\\ud83d"}', "input"),
        (b'{"model": "m", "input": [{"role": "user", "content": "hi \\udc00"}]}', "input[0].content"),
        (b'{"model": "m", "input": "hi", "metadata": {"k": "\\ud83d"}}', "metadata.k"),
        (b'{"model": "m", "input": "hi", "metadata": {"\\ud83d": "v"}}', "metadata"),
    ],
)
def test_a_lone_surrogate_is_a_400_before_the_backend_call(fake_gateway: Any, raw: bytes, param: str) -> None:
    backend, gateway = fake_gateway()
    reply = _post(gateway.base_url, raw)
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["param"] == param and "lone surrogate" in error["message"] and "\\ud" in error["message"]
    assert backend.raw_bodies == []


@pytest.mark.parametrize("depth", [65, 100_000])
def test_a_deeply_nested_body_is_a_400(fake_gateway: Any, depth: int) -> None:
    backend, gateway = fake_gateway()
    nested = "[" * depth + "]" * depth
    reply = _post(gateway.base_url, b'{"model": "m", "input": "hi", "metadata": {"k": %s}}' % nested.encode())
    assert reply.status_code == 400 and "deeper than 64 levels" in reply.json()["error"]["message"]
    assert backend.raw_bodies == []
    ok = {"model": "m", "input": "hi", "metadata": {"k": json.loads("[" * 60 + "]" * 60)}}
    assert _post(gateway.base_url, json.dumps(ok).encode()).status_code == 200


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_is_not_json(fake_gateway: Any, constant: str) -> None:
    backend, gateway = fake_gateway()
    reply = _post(gateway.base_url, b'{"model": "m", "input": "hi", "temperature": %s}' % constant.encode())
    assert reply.status_code == 400 and "not valid JSON" in reply.json()["error"]["message"]
    assert backend.raw_bodies == []


def _impossible_ids(client_url: str) -> None:
    for bad in ("resp_%00", "resp_a%00b", "resp_%ED%A0%BD", "nope", "resp_" + "a" * 300):
        for method, path in (("GET", ""), ("DELETE", ""), ("POST", "/cancel"), ("GET", "/input_items")):
            reply = httpx2.request(method, f"{client_url}/responses/{bad}{path}", timeout=10)
            assert reply.status_code == 404, (bad, method, path, reply.text)
            assert reply.json()["error"]["param"] == "response_id"
    reply = httpx2.post(f"{client_url}/responses", json={"model": "m", "input": "hi", "previous_response_id": "r\x00"})
    assert reply.status_code == 404 and reply.json()["error"]["param"] == "previous_response_id"


def test_an_id_that_cannot_exist_is_a_404_on_sqlite(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    _impossible_ids(gateway.base_url)


def test_an_id_that_cannot_exist_is_a_404_on_postgres(fake_gateway: Any, postgres_url: str) -> None:
    _, gateway = fake_gateway(store=postgres_url)
    _impossible_ids(gateway.base_url)


@pytest.mark.parametrize("validate", [False, True], ids=["passthrough", "validate"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_backend_answering_html_is_a_502(fake_gateway: Any, stream: bool, validate: bool) -> None:
    backend, gateway = fake_gateway(validate=validate)
    backend.html = True
    body: dict[str, Any] = {"model": "m", "input": "hi", "stream": stream}
    if validate:
        body["text"] = {"format": {"type": "json_schema", "name": "p", "schema": {"type": "object"}}}
    reply = _post(gateway.base_url, json.dumps(body).encode())
    assert reply.status_code == 502, reply.text
    error = reply.json()["error"]
    assert error["code"] == "backend_bad_response" and error["type"] == "server_error"
    assert "Traceback" not in error["message"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_502_keeps_the_page_the_backend_answered(fake_gateway: Any, stream: bool) -> None:
    backend, gateway = fake_gateway()
    backend.html = True
    with pytest.raises(openai.APIStatusError) as caught:
        if stream:
            with sdk(gateway).responses.create(model="m", input="hi", stream=True) as events:
                list(events)
        else:
            sdk(gateway).responses.create(model="m", input="hi")
    assert caught.value.status_code == 502
    assert "Welcome to nginx!" in caught.value.body["raw_text"]  # type: ignore[index]


def test_starting_after_must_be_a_sequence_number(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    client = sdk(gateway)
    started = client.responses.create(model="m", input="hi", background=True)
    url = f"{gateway.base_url}/responses/{started.id}"
    for value in ("-3", "-1", "x", "1.5"):
        reply = httpx2.get(url, params={"stream": "true", "starting_after": value}, timeout=10)
        assert reply.status_code == 400 and reply.json()["error"]["param"] == "starting_after", value
    events = list(client.responses.retrieve(started.id, stream=True, starting_after=0))
    assert events[0].sequence_number == 1 and events[-1].type == "response.completed"
    client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_lone_surrogate_in_the_answer_leaves_a_readable_response(fake_gateway: Any, stream: bool) -> None:
    """A backend may send `"\\ud83d"` (valid JSON, not text): the answer, paid for, is kept with
    U+FFFD in its place, as a UTF-8 decoder would, and the stored response can be read."""
    backend, gateway = fake_gateway()
    backend.text = "Ada \ud83d Lovelace"
    client = sdk(gateway)
    if stream:
        response = list(client.responses.create(model="m", input="hi", stream=True))[-1].response
    else:
        response = client.responses.create(model="m", input="hi")
    assert response.output_text == "Ada \ufffd Lovelace"
    assert client.responses.retrieve(response.id).output_text == "Ada \ufffd Lovelace"
    client.close()


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "input": [{"role": []}]}, "input[0].role"),  # found by test_gateway_fuzz (was a 500)
        ({"model": "m", "input": [{"role": {"a": 1}, "content": "x"}]}, "input[0].role"),
    ],
)
def test_an_unhashable_role_is_a_400(fake_gateway: Any, body: dict[str, Any], param: str) -> None:
    backend, gateway = fake_gateway()
    reply = _post(gateway.base_url, json.dumps(body).encode())
    assert reply.status_code == 400 and reply.json()["error"]["param"] == param
    assert backend.raw_bodies == []


@pytest.mark.parametrize(("method", "path", "status"), [("GET", "/v1/nothing", 404), ("PUT", "/v1/responses", 405)])
def test_the_routers_own_errors_are_in_the_error_shape(fake_gateway: Any, method: str, path: str, status: int) -> None:
    _, gateway = fake_gateway()  # found by test_gateway_fuzz: these were plain text
    reply = httpx2.request(method, f"{gateway.root_url}{path}", timeout=10)
    assert reply.status_code == status and set(reply.json()["error"]) == {"message", "type", "param", "code"}
