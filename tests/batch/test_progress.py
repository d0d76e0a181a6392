"""What `extract --input` shows while it runs: the item in flight longest, and one warning for an item
that runs far longer than the answers so far (a call that never ends is not silent)."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest
from extraction_server import ExtractionServer, Row, _item_of

from so_middleware.batch import extract_many
from so_middleware.batch._progress import SlowItems, follow
from so_middleware.openai import OpenAIChatClient

pytestmark = pytest.mark.anyio


class OneSlowItem(ExtractionServer):
    """Answers item 3 after `seconds`, the others at once."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def next_fault(self, request: Any) -> Any:
        if _item_of(request.body) == 3:
            time.sleep(self.seconds)
        return super().next_fault(request)


def test_a_slow_item_is_reported_once_with_the_median_answer() -> None:
    said: list[str] = []
    slow = SlowItems(said.append, factor=5, floor=1.0)
    slow.check(("a", 0.5))  # under the floor: nothing yet
    for seconds in (0.1, 0.2, 0.3):
        slow.finished(seconds)
    slow.check(("a", 0.9))
    assert said == []
    slow.check(("a", 1.5))
    slow.check(("a", 9.0))  # once per item
    slow.check(("b", 0.5))
    assert said == [
        "item a has been in flight for 2s (a median answer took 0.2s): the model may be repeating itself; "
        "--max-tokens bounds each answer"
    ]


async def test_the_run_names_its_oldest_item_in_flight_and_the_slow_one_is_reported() -> None:
    said: list[str] = []
    with OneSlowItem(seconds=2.0) as server:
        sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        client = OpenAIChatClient(sdk, "m")
        items = [{"id": f"r{n}", "text": f"item {n}"} for n in range(6)]
        run = extract_many(client, items, Row, concurrency=6)
        seen: list[tuple[str, float] | None] = []

        original = run.oldest_in_flight

        def oldest() -> tuple[str, float] | None:
            seen.append(original())
            return seen[-1]

        run.oldest_in_flight = oldest  # type: ignore[method-assign]
        await follow(run, len(items), said.append, tick=0.05, slow=SlowItems(said.append, factor=5, floor=0.5))
        await sdk.close()
    assert run.summary.done == 6
    assert any(entry is not None and entry[0] == "r3" and entry[1] > 0.5 for entry in seen)
    assert original() is None  # nothing in flight once the run ended
    assert [line for line in said if line.startswith("item r3 has been in flight for ")] != []
    assert not [line for line in said if line.startswith("item r") and not line.startswith("item r3")]
