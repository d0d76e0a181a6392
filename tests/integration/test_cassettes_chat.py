"""Chat Completions through the official SDK, replayed from cassettes recorded from the local
llama-server (recorded once on first run; replayed, never recorded, in CI). The mapping is
checked against the recorded bodies themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from so_middleware import FinishReason, with_structured_output
from so_middleware.local import LocalModelServer
from so_middleware.openai import LLAMA_SERVER, OpenAIChatClient
from so_middleware.testing._cassettes import is_secret_name

pytestmark = pytest.mark.anyio

CASSETTES = Path(__file__).resolve().parent.parent.parent / "cassettes" / "test_cassettes_chat"
FORBIDDEN_HEADERS = {
    "authorization",
    "x-api-key",
    "api-key",
    "openai-organization",
    "openai-project",
    "cookie",
    "set-cookie",
}


def recorded(name: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((CASSETTES / f"{name}.yaml").read_text())
    return data["interactions"]  # type: ignore[no-any-return]


def client_for(server: LocalModelServer, local_sdk: Any) -> OpenAIChatClient:
    return OpenAIChatClient(local_sdk("async-openai"), server.model, capabilities=LLAMA_SERVER)


async def test_plain_completion_maps_the_recorded_body(
    local_server: LocalModelServer, local_sdk: Any, cassette: Any
) -> None:
    with cassette("plain"):
        response = await client_for(local_server, local_sdk).get_response(
            "Name a fruit.", options={"max_tokens": 16, "temperature": 0, "seed": 3}
        )
    body = json.loads(recorded("plain")[0]["response"]["body"]["string"])
    assert response.text == body["choices"][0]["message"]["content"]
    assert response.usage is not None
    assert response.usage.input_tokens == body["usage"]["prompt_tokens"]
    assert response.usage.output_tokens == body["usage"]["completion_tokens"]
    assert response.finish_reason == FinishReason(body["choices"][0]["finish_reason"])
    assert response.response_id == body["id"]


async def test_streamed_completion_maps_the_recorded_events(
    local_server: LocalModelServer, local_sdk: Any, cassette: Any
) -> None:
    with cassette("stream"):
        stream = client_for(local_server, local_sdk).get_response(
            "Name a color.", options={"max_tokens": 16, "temperature": 0, "seed": 3}, stream=True
        )
        deltas = [update.text async for update in stream]
        response = await stream.get_final_response()
    events = [
        json.loads(line[len("data: ") :])
        for line in recorded("stream")[0]["response"]["body"]["string"].splitlines()
        if line.startswith("data: {")
    ]
    text = "".join(choice["delta"].get("content") or "" for e in events for choice in e["choices"])
    usage = next(e["usage"] for e in events if e.get("usage"))
    assert "".join(deltas) == response.text == text
    assert response.usage is not None and response.usage.output_tokens == usage["completion_tokens"]


async def test_structured_answer_replayed(local_server: LocalModelServer, local_sdk: Any, cassette: Any) -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        country: str

    with cassette("structured"):
        client = with_structured_output(client_for(local_server, local_sdk))
        response = await client.get_response(
            "Paris is in France.", output_type=City, options={"max_tokens": 60, "temperature": 0}
        )
    request = json.loads(recorded("structured")[0]["request"]["body"])
    assert request["response_format"]["type"] == "json_schema"
    assert request["response_format"]["json_schema"]["name"] == "City"
    assert response.value == City.model_validate_json(
        json.loads(recorded("structured")[0]["response"]["body"]["string"])["choices"][0]["message"]["content"]
    )


def test_cassettes_hold_no_secrets() -> None:
    files = sorted(Path(CASSETTES.parent).rglob("*.yaml"))
    assert files, "no cassettes recorded"
    for path in files:
        for interaction in yaml.safe_load(path.read_text())["interactions"]:
            for side in ("request", "response"):
                headers = {name.lower() for name in interaction[side].get("headers", {})}
                assert not headers & FORBIDDEN_HEADERS, f"{path.name}: {headers & FORBIDDEN_HEADERS}"
                assert not [name for name in headers if is_secret_name(name)], path.name
            assert interaction["request"]["uri"].startswith("http://local-model/"), path.name
