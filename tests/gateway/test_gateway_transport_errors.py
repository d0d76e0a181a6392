"""The gateway answers every backend transport error from one table, the model list included:
a backend status error with its status and OpenAI-shaped body, a timeout with 504, an unreachable
backend with 502. Real sockets: the gateway (uvicorn) in front of `FaultServer` (a real HTTP
server answering OpenAI's documented error body) or a closed loopback port, asked by the
unmodified OpenAI SDK."""

from __future__ import annotations

import openai
import pytest

from so_middleware.gateway import GatewayConfig, create_app
from so_middleware.gateway._server import AppServer, free_port
from so_middleware.testing._faults import FaultServer, stall, status


def _client(gateway: AppServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key="none", max_retries=0, timeout=30)


def test_the_model_list_of_an_unreachable_backend_is_a_502() -> None:
    port = free_port()
    app = create_app(GatewayConfig(backend_url=f"http://127.0.0.1:{port}/internal/v1", max_attempts=1))
    with AppServer(app) as gateway, _client(gateway) as client, pytest.raises(openai.InternalServerError) as caught:
        client.models.list()
    assert caught.value.status_code == 502 and caught.value.code == "backend_unreachable"
    assert str(port) not in str(caught.value.body) and "/internal" not in str(caught.value.body)


def test_the_model_list_forwards_a_backend_rate_limit_with_its_body() -> None:
    fault = status(429, headers={"retry-after": "2"}, error_type="requests", message="Rate limit reached")
    with FaultServer([fault] * 8) as backend:
        app = create_app(GatewayConfig(backend_url=backend.base_url, max_attempts=1))
        with AppServer(app) as gateway, _client(gateway) as client, pytest.raises(openai.RateLimitError) as caught:
            client.models.list()
    assert caught.value.status_code == 429 and caught.value.body == {
        "message": "Rate limit reached",
        "type": "requests",
        "param": None,
        "code": None,
    }


def test_a_backend_that_never_answers_is_a_504() -> None:
    with FaultServer([stall(before_headers=True, hold=10.0)] * 8) as backend:
        app = create_app(GatewayConfig(backend_url=backend.base_url, max_attempts=1, backend_timeout=0.5))
        with AppServer(app) as gateway, _client(gateway) as client, pytest.raises(openai.APIStatusError) as caught:
            client.responses.create(model="m", input="hi")
    assert caught.value.status_code == 504 and caught.value.code == "backend_timeout"
