"""Every surface that shows a URL or an error hides the same credentials by the one rule of
`so_middleware.core.redact` (its table: tests/core/test_redaction.py): the logs, the adapters'
reprs and connection errors, the gateway's forwarded error bodies and its printed backend URL,
and the cassettes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx2
import openai
import pytest

from so_middleware import as_chat_client, with_logging
from so_middleware.core import redact_url
from so_middleware.gateway._secrets import RedactingClient
from so_middleware.gateway._server import free_port
from so_middleware.testing import FakeChatClient
from so_middleware.testing._cassettes import recorder
from so_middleware.testing._faults import Fault, FaultServer, completion

PASSWORD = "pw-0123456789"
USER_TOKEN = "ghp_usertoken0123"
QUERY_KEY = "qk-0123456789"
KEY = "sk-proj-0123456789abcdef"
SECRETS = (PASSWORD, USER_TOKEN, QUERY_KEY, KEY)

pytestmark = pytest.mark.anyio


def url(port: int, *, user: str = f"ada:{PASSWORD}") -> str:
    return f"http://{user}@127.0.0.1:{port}/v1?api_key={QUERY_KEY}"


def message() -> str:
    return f"failed at {url(9)} and {url(9, user=USER_TOKEN)} with Authorization: Bearer {KEY} ({KEY})"


def assert_hidden(shown: str) -> None:
    assert not [secret for secret in SECRETS if secret in shown], shown
    assert "***" in shown


@pytest.mark.parametrize("include_content", [False, True])
async def test_logs(caplog: pytest.LogCaptureFixture, include_content: bool) -> None:
    caplog.set_level(logging.DEBUG)
    client = with_logging(FakeChatClient(RuntimeError(message())), include_content=include_content)
    with pytest.raises(RuntimeError):
        await client.get_response("hi")
    records = [json.dumps(getattr(r, "so_middleware", {}), default=str) + r.getMessage() for r in caplog.records]
    if include_content:  # the error's message is content: shown, masked
        assert_hidden("".join(records))
    assert not [secret for secret in SECRETS if secret in "".join(records)]


async def test_an_adapters_repr_and_its_connection_error() -> None:
    port = free_port()  # nothing listens there
    sdk = openai.AsyncOpenAI(base_url=url(port), api_key=KEY, max_retries=0, timeout=10)
    client = as_chat_client(sdk, model="m")
    assert_hidden(repr(client))
    with pytest.raises(openai.APIConnectionError) as caught:
        await client.get_response("hi")
    assert str(port) in str(caught.value)  # it names the server it could not reach
    assert not [secret for secret in SECRETS if secret in str(caught.value)]


async def test_the_gateways_forwarded_error_body() -> None:
    """The backend's 401 body (OpenAI's documented error shape), answered by `httpx2.MockTransport`."""
    body = {"error": {"message": message(), "type": "invalid_request_error", "code": "invalid_api_key"}}
    transport = httpx2.MockTransport(lambda request: httpx2.Response(401, json=body))
    async with RedactingClient([KEY], transport=transport) as http:
        response = await http.post("http://backend/v1/chat/completions", json={})
    shown = response.text
    assert_hidden(shown)
    assert json.loads(shown)["error"]["code"] == "invalid_api_key"  # still the backend's JSON


def test_the_cassettes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SO_MIDDLEWARE_RECORD_MODE", "once")
    with FaultServer(Fault("json", body=completion("Hello").body)) as server:
        sdk = openai.OpenAI(base_url=url(server.port), api_key=KEY, max_retries=0)
        with recorder(tmp_path).use_cassette("surface.yaml"), sdk:
            sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=5)
    recording = (tmp_path / "surface.yaml").read_text()
    assert not [secret for secret in SECRETS if secret in recording]  # the URL's, the query's, the key header's


def test_the_gateways_printed_backend_url() -> None:
    assert_hidden(redact_url(url(1)) + redact_url(url(1, user=USER_TOKEN)))
