"""`read_results`: a results file read back as typed `ItemResult`s, in file order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from so_middleware import Attempt, UsageDetails, UserError
from so_middleware.batch import RecordedError, extract_many_sync, read_results
from so_middleware.testing import FakeChatClient


class Person(BaseModel):
    name: str
    age: int


def test_a_files_values_come_back_typed_and_its_errors_as_recorded_errors(tmp_path: Path) -> None:
    """What a run wrote (one value, one item whose every answer was invalid) reads back as the
    run gave it: the value a `Person`, the error a `RecordedError` naming the original's type,
    with the attempts' raw text and usage."""
    output = tmp_path / "out.jsonl"
    fake = FakeChatClient(['{"name": "Ada", "age": 36}', "not json"])
    given = list(
        extract_many_sync(fake, [("ada", "Ada, 36"), ("bad", "?")], Person, output=output, concurrency=1, max_retries=0)
    )

    read = list(read_results(output, Person))

    assert [result.id for result in read] == ["ada", "bad"]
    ada, bad = read
    assert ada.ok and ada.value == Person(name="Ada", age=36) and type(ada.value) is Person
    assert not bad.ok and bad.value is None
    assert isinstance(bad.error, RecordedError)
    assert bad.error.type_name == type(given[1].error).__name__ == "ModelBehaviorError"
    assert [attempt.text for attempt in bad.attempts] == [attempt.text for attempt in given[1].attempts]
    assert {attempt.text for attempt in bad.attempts} == {"not json"}
    assert isinstance(bad.attempts[0], Attempt) and isinstance(bad.attempts[0].error, RecordedError)
    assert [attempt.text for attempt in ada.attempts] == ['{"name": "Ada", "age": 36}']
    assert ada.usage == given[0].usage and isinstance(ada.usage, UsageDetails | None)


def test_an_http_error_keeps_its_status_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    limited = {"type": "RateLimitError", "message": "slow down", "status_code": 429}
    lines = [
        {"id": "a", "ok": False, "error": limited, "attempts": [], "usage": {"input_tokens": 3}, "seconds": 1.5},
        {"id": "b", "ok": True, "value": {"name": "Bo", "age": 2}, "attempts": [], "usage": None, "seconds": 0.1},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    output.write_text(text + '{"id": "c", "ok": tr')  # a kill mid-write tears the last line

    read = list(read_results(output, Person))

    assert [result.id for result in read] == ["a", "b"]
    error = read[0].error
    assert isinstance(error, RecordedError)
    assert (error.type_name, error.message, error.status_code) == ("RateLimitError", "slow down", 429)
    assert read[0].usage == UsageDetails(input_tokens=3) and read[0].seconds == 1.5


def test_a_missing_file_is_a_user_error_at_once(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"missing\.jsonl"):
        read_results(tmp_path / "missing.jsonl", Person)


def test_a_value_of_another_type_is_a_user_error_naming_the_line_and_id(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text(
        json.dumps({"id": "a", "ok": True, "value": {"name": "Ada", "age": 36}})
        + "\n"
        + json.dumps({"id": "b", "ok": True, "value": {"title": "A book"}})
        + "\n"
    )
    results = read_results(output, Person)
    assert next(results).value == Person(name="Ada", age=36)
    with pytest.raises(UserError, match=r"out\.jsonl:2: the value of 'b' is not a Person"):
        next(results)


@pytest.mark.parametrize("line", ["[1, 2]", '{"name": "Ada"}', "not json", '{"id": "a", "ok": "yes"}'])
def test_a_line_that_is_not_a_result_is_a_user_error_naming_it(tmp_path: Path, line: str) -> None:
    output = tmp_path / "other.jsonl"
    output.write_text(line + "\n")
    with pytest.raises(UserError, match=r"other\.jsonl:1 is not a result line"):
        list(read_results(output, Person))
