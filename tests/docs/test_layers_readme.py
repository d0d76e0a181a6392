"""The stack of the small layers in docs/concepts/layers.md ("A stack of them", once the README's), over fakes:
logging, fallback, retries, options, cache."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from pydantic import BaseModel

from so_middleware import (
    disk_store,
    with_cache,
    with_fallback,
    with_logging,
    with_options,
    with_retries,
    with_structured_output,
)
from so_middleware.testing import FakeChatClient, StatusError

pytestmark = pytest.mark.anyio


class Person(BaseModel):
    name: str
    age: int


async def no_wait(seconds: float) -> None:
    return None


@pytest.mark.parametrize("stream", [False, True])
async def test_the_stack_of_the_layers_page(tmp_path: Path, stream: bool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="so_middleware")
    openai_like = FakeChatClient(StatusError(503), model="gpt-4o-mini")
    anthropic_like = FakeChatClient('{"name": "Ada", "age": 36}', model="claude-haiku-4-5")
    client = with_logging(
        with_fallback(
            with_retries(with_options(openai_like, temperature=0), sleep=no_wait),
            with_retries(anthropic_like, sleep=no_wait),
        )
    )
    cached = with_structured_output(with_cache(client, store=disk_store(str(tmp_path))))
    for _ in range(2):
        if stream:
            response = await cached.get_response("Ada, 36", output_type=Person, stream=True).get_final_response()
        else:
            response = await cached.get_response("Ada, 36", output_type=Person)
        assert response.value == Person(name="Ada", age=36)
    assert len(openai_like.calls) == 3 and len(anthropic_like.calls) == 1  # the second run came from the cache
    assert openai_like.calls[0].options.temperature == 0 and anthropic_like.calls[0].options.temperature is None
    events = [r.so_middleware["event"] for r in caplog.records if hasattr(r, "so_middleware")]  # type: ignore[attr-defined]
    assert events == ["failover", "chat"]  # retries are inside the fallback: the primary's own
