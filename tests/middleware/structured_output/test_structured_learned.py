"""What a structured-output layer learns about a backend is evidence-based, visible, and expires:
the next run after that probes the first strategy again."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from so_middleware.middleware.structured_output import with_structured_output
from so_middleware.middleware.structured_output._learned import LESSON_RUNS, LESSON_TTL, Learned
from so_middleware.testing import FakeChatClient

pytestmark = pytest.mark.anyio

KEY = ("FakeChatClient", "fake-model")
VALID = '{"name": "Ada", "age": 36}'


class Person(BaseModel):
    name: str
    age: int


def ignoring_backend() -> FakeChatClient:
    def answer(messages: Any, options: Any) -> str:
        return "Sure! Ada is 36." if options.response_format is not None or options.tools else VALID

    return FakeChatClient(answer, capabilities=FakeChatClient().capabilities.replace(name="everything"))


async def test_a_lesson_shows_why_and_when_and_counts_the_runs_it_started() -> None:
    client = with_structured_output(ignoring_backend())
    await client.get_response("Ada, 36", output_type=Person)
    lesson = client.learned[KEY]
    assert lesson.ignored == {"native", "tool", "json_object"} and lesson.runs == 0
    assert set(lesson.evidence) == lesson.ignored and "Sure! Ada is 36." in lesson.evidence["native"]
    assert lesson.learned_at is not None
    await client.get_response("Ada, 36", output_type=Person)
    assert client.learned[KEY].runs == 1 and client.learned[KEY].learned_at == lesson.learned_at


def test_a_lesson_expires_after_its_time() -> None:
    now = [1000.0]
    learned = Learned(clock=lambda: now[0])
    learned.ignored(KEY, "native", "prose")
    now[0] += LESSON_TTL - 1
    assert learned.get(KEY).ignored == {"native"}
    now[0] += 1
    assert dict(learned.view()) == {} and learned.get(KEY).ignored == frozenset()


def test_a_lesson_expires_after_its_runs() -> None:
    learned = Learned(clock=lambda: 0.0)
    learned.ignored(KEY, "native", "prose")
    for _ in range(LESSON_RUNS):
        assert learned.get(KEY, run=True).ignored == {"native"}
    assert learned.get(KEY, run=True).ignored == frozenset()  # probed again
    learned.ignored(KEY, "native", "prose again")
    assert learned.get(KEY).evidence == {"native": "prose again"} and learned.get(KEY).runs == 0


async def test_an_expired_lesson_lets_the_next_run_probe_the_first_strategy() -> None:
    fake = ignoring_backend()
    client = with_structured_output(fake)
    await client.get_response("Ada, 36", output_type=Person)
    for _ in range(LESSON_RUNS):
        response = await client.get_response("Ada, 36", output_type=Person)
        assert [a.strategy for a in response.attempts] == ["prompted"]
    response = await client.get_response("Ada, 36", output_type=Person)
    assert response.attempts[0].strategy == "native"
