"""The Ollama adapter under the structured-output layer, through the real, unmodified `ollama` SDK
against the loopback server of `tests/providers/ollama/ollama_server.py` (it names the documented
wire format it speaks)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import ollama
import pytest
from ollama_server import Answer, OllamaServer, chat_answer, chunk
from pydantic import BaseModel

from so_middleware import IncompleteOutputError, with_structured_output
from so_middleware.gateway._server import AppServer
from so_middleware.ollama import OllamaChatClient

pytestmark = pytest.mark.anyio


class Comment(BaseModel):
    text: str
    replies: list[Comment] = []


@pytest.fixture
async def local_ollama() -> AsyncIterator[tuple[OllamaServer, ollama.AsyncClient]]:
    server = OllamaServer()
    with AppServer(server.app()) as running:
        sdk = ollama.AsyncClient(host=running.root_url)
        yield server, sdk
        await sdk._client.aclose()


async def test_a_recursive_type_is_sent_unrolled_and_read_whole(
    local_ollama: tuple[OllamaServer, ollama.AsyncClient],
) -> None:
    server, sdk = local_ollama
    deep = '{"text": "a", "replies": [{"text": "b", "replies": [{"text": "c", "replies": [{"text": "d"}]}]}]}'
    server.script(Answer(chat_answer(deep)))
    client = with_structured_output(OllamaChatClient(sdk, "llama3.2"))
    value = (await client.get_response("Thread?", output_type=Comment)).value
    assert value.replies[0].replies[0].replies[0].text == "d"
    sent = server.requests[0]["format"]
    assert "$defs" not in sent and "$ref" not in str(sent)


async def test_a_streamed_typed_answer_and_a_cut_one(local_ollama: tuple[OllamaServer, ollama.AsyncClient]) -> None:
    server, sdk = local_ollama
    last = {**chunk("}"), "done": True, "done_reason": "stop", "prompt_eval_count": 3, "eval_count": 4}
    server.script(Answer(chunks=[chunk('{"text": '), chunk('"hi"'), last]))
    server.script(*[Answer(chat_answer('{"text": "h', done_reason="length"))] * 5)
    client = with_structured_output(OllamaChatClient(sdk, "llama3.2"))
    stream = client.get_response("x", output_type=Comment, stream=True)
    async for _ in stream:
        pass
    assert (await stream.get_final_response()).value == Comment(text="hi")
    with pytest.raises(IncompleteOutputError):
        await client.get_response("x", output_type=Comment)
