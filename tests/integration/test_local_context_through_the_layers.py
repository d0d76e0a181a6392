"""The local server's context limit under the structured-output layer: an overflow in a structured run,
a default extraction with its re-asks that fits."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel, Field
from small_server import LONG_TEXT, small_server_running

from so_middleware import (
    ChatMessage,
    ChatResponse,
    DelegatingChatClient,
    FinishReason,
    IncompleteOutputError,
    LayerCall,
    ModelBehaviorError,
    TextContent,
    UsageDetails,
    with_structured_output,
)
from so_middleware.local import (
    ContextSizeError,
    LocalModelServer,
    chat_client,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def small_server() -> Iterator[LocalModelServer]:
    yield from small_server_running()


class Ramble(BaseModel):
    """Hard for a 135M model to get right at once: the answers are re-asked."""

    code: str = Field(pattern=r"^ZQX-[0-9]{9}-QQQ$", description="the record's code")
    name: str


class LongAnswersFirst(DelegatingChatClient):
    """Answers the first two calls itself with `max_tokens` tokens of prose that ends there (the
    longest answer a call can get; complete, so invalid rather than cut off, and re-asked), without
    calling the model; later calls go to the real server.
    So the third attempt of a default run carries the longest conversation a run can build. That
    call is sent with a short answer limit: the test adds the full limit to the prompt's tokens
    itself (llama-server refuses only a prompt that does not fit), which keeps it quick."""

    def __init__(self, inner: Any, text: str) -> None:
        super().__init__(inner)
        self._self_text = text
        self._self_calls = 0

    def respond(self, call: LayerCall) -> Any:
        self._self_calls += 1
        if self._self_calls > 2:
            return super().respond(call.replace(options=call.options.replace(max_tokens=4)))

        async def rambling() -> ChatResponse[Any]:
            # the second answer differs from the first: an answer repeated word for word ends the run early
            text = self._self_text if self._self_calls == 1 else self._self_text.replace("The record", "A record", 1)
            message = ChatMessage("assistant", [TextContent(text)])
            return ChatResponse(message, finish_reason=FinishReason.STOP, usage=UsageDetails(300, 256, 556))

        return rambling()


def tokens(server: LocalModelServer, text: str) -> int:
    request = urllib.request.Request(
        f"{server.root_url}/tokenize", data=json.dumps({"content": text}).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return len(json.load(reply)["tokens"])


async def test_overflow_in_a_structured_run(small_server: LocalModelServer) -> None:
    class Person(BaseModel):
        name: str

    client = with_structured_output(chat_client(small_server, "chat", max_retries=0))
    with pytest.raises(ContextSizeError, match="context per request is 512 tokens"):
        await client.get_response(LONG_TEXT, output_type=Person, options={"max_tokens": 8})
    await client.sdk_client.close()


def test_a_default_extraction_with_its_re_asks_fits() -> None:
    """docs/how-to/local-model.md's promise ("Context"): with the default sizes (16,384 tokens shared by 2 slots) the third
    attempt of a default run (two re-asks) on the prompted Messages route (the longest prompt),
    after two answers as long as allowed (the adapter's default max_tokens, 1,024; the command's
    256 is shorter), still fits."""
    with LocalModelServer() as server:
        adapter = chat_client(server, "anthropic", sync=True)
        limit = adapter.max_tokens
        prose = "The record mentions many people and places, and nothing else of note. " * (limit // 6)
        assert tokens(server, prose) >= limit == 1024
        client = with_structured_output(LongAnswersFirst(adapter, prose))
        try:
            response = client.get_response_sync("Record ZQX-123456789-QQQ belongs to Ada Lovelace.", output_type=Ramble)
            attempts = response.attempts
        except (ModelBehaviorError, IncompleteOutputError) as error:  # the third answer was cut at 4 tokens
            assert not isinstance(error, ContextSizeError)
            attempts = error.attempts
        finally:
            adapter.sdk_client.close()
        assert len(attempts) == 3 and attempts[2].usage is not None
        needed = attempts[2].usage.input_tokens + limit
        assert 4096 < needed <= server.context_per_request == 8192, needed  # 16,384 / 4 slots would not do
