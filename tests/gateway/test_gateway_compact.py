"""`POST /v1/responses/compact` over a real socket with the unmodified OpenAI SDK: a `compaction`
item that holds the window, usable as the base input of a new response (the backend then sees the
whole conversation), made without a backend call; a request without `model` or with a damaged item
is a 400 naming the field."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import httpx2
import openai
import pytest
from fakes import sdk

WINDOW = [
    {"type": "message", "role": "user", "content": "We launch on Tuesday and notify support first."},
    {"type": "message", "role": "assistant", "content": "Understood: Tuesday, support first."},
]


def _compact(url: str, body: dict[str, Any]) -> httpx2.Response:
    return httpx2.post(f"{url}/responses/compact", json=body, timeout=30)


def test_compaction_is_the_base_input_of_a_new_response(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    client = sdk(gateway)
    compacted = client.responses.compact(model="m", input=WINDOW, prompt_cache_key="k")  # type: ignore[arg-type]
    assert compacted.object == "response.compaction"
    assert [item.type for item in compacted.output] == ["compaction"]
    assert backend.bodies == []  # compacted at the gateway: no model call
    base = [item.model_dump(exclude_none=True) for item in compacted.output]
    client.responses.create(model="m", input=[*base, {"role": "user", "content": "When do we launch?"}])
    sent = backend.bodies[-1]["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [
        ("user", WINDOW[0]["content"]),
        ("assistant", WINDOW[1]["content"]),
        ("user", "When do we launch?"),
    ]


def test_compaction_holds_the_previous_response(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    backend.text = "Tuesday."
    client = sdk(gateway)
    first = client.responses.create(model="m", input="When do we launch?")
    compacted = client.responses.compact(model="m", previous_response_id=first.id, input="And support?")
    base = [item.model_dump(exclude_none=True) for item in compacted.output]
    client.responses.create(model="m", input=base)
    sent = [(m["role"], m["content"]) for m in backend.bodies[-1]["messages"]]
    assert sent == [("user", "When do we launch?"), ("assistant", "Tuesday."), ("user", "And support?")]


@pytest.mark.parametrize("body", [{"input": WINDOW}, {"model": "", "input": WINDOW}], ids=["absent", "empty"])
def test_compact_without_model_is_a_400_naming_it(fake_gateway: Any, body: dict[str, Any]) -> None:
    _, gateway = fake_gateway(default_model="m")
    reply = _compact(gateway.base_url, body)
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == "model"


def test_compact_with_a_bad_item_is_a_400_naming_it(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    reply = _compact(gateway.base_url, {"model": "m", "input": [{"role": "wizard", "content": "x"}]})
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["param"] == "input[0].role"


def test_compact_of_an_unknown_previous_response_is_a_404(fake_gateway: Any) -> None:
    _, gateway = fake_gateway()
    reply = _compact(gateway.base_url, {"model": "m", "input": "x", "previous_response_id": "resp_nothere"})
    assert reply.status_code == 404, reply.text
    assert reply.json()["error"]["param"] == "previous_response_id"


def _packed(value: Any) -> str:
    return "smc1." + base64.urlsafe_b64encode(zlib.compress(json.dumps(value).encode())).decode()


@pytest.mark.parametrize(
    "content",
    ["opaque-from-elsewhere", "smc1.!!!", _packed({"not": "a list"}),
     "smc1." + base64.urlsafe_b64encode(zlib.compress(b" " * (65 * 1024 * 1024))).decode()],
    ids=["foreign", "not-base64", "not-a-list", "inflates-past-the-bound"],
)  # fmt: skip
def test_a_compaction_item_the_gateway_did_not_make_is_a_400(fake_gateway: Any, content: str) -> None:
    backend, gateway = fake_gateway()
    client = sdk(gateway)
    item = {"type": "compaction", "encrypted_content": content}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="m", input=[item])  # type: ignore[list-item]
    assert caught.value.body["param"] == "input[0].encrypted_content"  # type: ignore[index]
    assert backend.bodies == []


def test_an_item_inside_a_compaction_is_checked_as_input(fake_gateway: Any) -> None:
    backend, gateway = fake_gateway()
    item = {"type": "compaction", "encrypted_content": _packed([{"role": "wizard", "content": "x"}])}
    with pytest.raises(openai.BadRequestError) as caught:
        sdk(gateway).responses.create(model="m", input=[item])  # type: ignore[list-item]
    assert caught.value.body["param"] == "input[0].role"  # type: ignore[index]
    assert backend.bodies == []
