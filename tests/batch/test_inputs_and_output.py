"""extract_many's inputs and output under bad conditions: a duplicate id, a file that is not UTF-8,
a CSV with a byte-order mark, an output that cannot be opened or a disk that fills up. Each is a
typed error naming the file (and line), before any call where it can be; a paid answer is never lost.
Against `ExtractionServer`, a real HTTP server on loopback, through the OpenAI SDK."""

from __future__ import annotations

import errno
import hashlib
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from extraction_server import ExtractionServer, Row

from so_middleware import UserError
from so_middleware.batch import Item, ResultLog, ResultsWriteError, extract_many, read_inputs
from so_middleware.openai import OpenAIChatClient

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Any:
    with ExtractionServer() as running:
        yield running


@pytest.fixture
async def adapter(server: ExtractionServer) -> AsyncIterator[OpenAIChatClient]:
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test") as sdk:
        yield OpenAIChatClient(sdk, "m", discover=False)


def ids_in(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def derived_id(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ------------------------------------------------------------------ duplicate ids


async def test_a_duplicate_id_in_a_list_is_refused_before_any_call(
    server: ExtractionServer, adapter: Any, tmp_path: Path
) -> None:
    inputs = [(f"id{n}", f"item {n}") for n in range(1, 13)] + [("id3", "item 99")]
    with pytest.raises(UserError, match=r"inputs item 13: the id 'id3' was already given to inputs item 3"):
        extract_many(adapter, inputs, Row, output=tmp_path / "out.jsonl", concurrency=8)
    assert server.served == []


async def test_a_duplicate_id_in_a_file_is_refused_before_any_call_naming_both_lines(
    server: ExtractionServer, adapter: Any, tmp_path: Path
) -> None:
    lines = [json.dumps({"id": f"r{n}", "text": f"item {n}"}) for n in range(1, 11)] + ["", '{"id": "r2", "text": "x"}']
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"in\.jsonl:12: the id 'r2' was already given to .*in\.jsonl:2;"):
        extract_many(adapter, tmp_path / "in.jsonl", Row, concurrency=8)
    assert server.served == []


async def test_a_duplicate_id_in_a_generator_stops_the_run_after_the_items_in_flight_end(
    server: ExtractionServer, adapter: Any, tmp_path: Path
) -> None:
    server.delay = 0.2  # the items started before the duplicate is read are still in flight then
    output = tmp_path / "out.jsonl"

    def rows() -> Iterator[tuple[str, str]]:
        yield from ((f"id{n}", f"item {n}") for n in range(1, 10))
        yield ("id3", "item 99")
        yield ("id10", "item 10")

    run = extract_many(adapter, rows(), Row, output=output, concurrency=4)
    results = []
    with pytest.raises(UserError, match=r"inputs item 10: the id 'id3' was already given to inputs item 3"):
        async for result in run:
            results.append(result)
    # every item started before the duplicate ended, was written and given to the caller; none after it
    assert sorted(r.id for r in results) == [f"id{n}" for n in range(1, 10)] and all(r.ok for r in results)
    assert sorted(ids_in(output)) == [f"id{n}" for n in range(1, 10)]
    assert sorted(server.items_requested()) == list(range(1, 10))


def test_a_given_id_equal_to_another_items_derived_id_is_refused_naming_both() -> None:
    taken = derived_id("item 1")
    with pytest.raises(UserError, match=rf"inputs item 2: the id '{taken}' was already given to inputs item 1"):
        list(read_inputs(["item 1", (taken, "item 2")]))
    with pytest.raises(UserError, match=rf"item 2: the id '{taken}' \(derived from its text\) .* inputs item 1"):
        list(read_inputs([Item(taken, "item 2"), "item 1"]))
    with pytest.raises(UserError, match=rf"the id '{taken}#2' \(derived from its text\)"):
        list(read_inputs([(f"{taken}#2", "x"), "item 1", "item 1"]))  # a repeated text's id too


async def test_an_id_collision_is_found_before_any_call(server: ExtractionServer, adapter: Any) -> None:
    with pytest.raises(UserError, match="was already given"):
        extract_many(adapter, ["item 1", (derived_id("item 1"), "item 2")], Row)
    assert server.served == []


# ------------------------------------------------------------------ encodings


def test_a_text_with_a_lone_surrogate_is_a_user_error_naming_the_item() -> None:
    with pytest.raises(UserError, match=r"inputs item 2: the text holds a lone surrogate .* at character 5"):
        list(read_inputs(["item 1", "item \ud83d"]))


@pytest.mark.parametrize("name", ["in.jsonl", "in.csv"])
async def test_an_input_that_is_not_utf8_is_a_user_error_naming_the_line_before_any_call(
    server: ExtractionServer, adapter: Any, tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    if name.endswith(".csv"):
        path.write_bytes(b"id,text\na,item 1\nb,caf\xe9 item 2\n")  # Latin-1, not UTF-8
    else:
        path.write_bytes(b'{"id": "a", "text": "item 1"}\n{"id": "b", "text": "caf\xe9 item 2"}\n')
    line = 3 if name.endswith(".csv") else 2
    with pytest.raises(UserError, match=rf"{name}:{line} is not UTF-8 text \(byte \d+ of the line"):
        extract_many(adapter, path, Row)
    assert server.served == []


def test_a_csv_or_jsonl_with_a_byte_order_mark_keeps_its_first_column(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text("id,text\na,item 1\nb,item 2\n", encoding="utf-8-sig")
    assert list(read_inputs(tmp_path / "in.csv")) == [Item("a", "item 1"), Item("b", "item 2")]
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "item 1"}\n', encoding="utf-8-sig")
    assert list(read_inputs(tmp_path / "in.jsonl")) == [Item("a", "item 1")]


def test_a_broken_csv_row_is_a_user_error_naming_its_line(tmp_path: Path) -> None:
    (tmp_path / "in.csv").write_text(f'id,text\na,item 1\nb,"{"x" * 200_000}"\n')  # past csv's field limit
    with pytest.raises(UserError, match=r"in\.csv:3 is not a CSV row"):
        list(read_inputs(tmp_path / "in.csv"))


# ------------------------------------------------------------------ the output


def refuse(monkeypatch: pytest.MonkeyPatch, path: Path, code: int) -> None:
    """`os.open` of `path` fails with `code`. The tests run as root, which no permission stops:
    only a mock makes EACCES (or a read-only file system) here."""
    real_open = os.open

    def fake_open(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(file) == path:
            raise OSError(code, os.strerror(code), str(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS])
async def test_an_output_that_cannot_be_opened_is_a_user_error_before_any_call(
    server: ExtractionServer, adapter: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text('{"id": "a", "ok": true}\n')
    refuse(monkeypatch, output, code)
    with pytest.raises(UserError, match=rf"{output}.*{os.strerror(code)}"):
        extract_many(adapter, ["item 1"], Row, output=output)
    assert server.served == []


def fill_the_disk(monkeypatch: pytest.MonkeyPatch, path: Path, after: int) -> None:
    """Writes to `path` fail with ENOSPC once `after` lines are in: the first failing write puts
    part of its line in, as a real full disk can. A real full disk needs a small file system
    (root and a mount): this patch of `os.write` stands for it."""
    real_write, state = os.write, {"lines": 0, "torn": False}

    def write(fd: int, data: Any) -> int:
        if os.path.realpath(f"/proc/self/fd/{fd}") != str(path.resolve()):
            return real_write(fd, data)
        if state["lines"] >= after:
            if not state["torn"]:
                state["torn"] = True
                return real_write(fd, bytes(data)[:7])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        state["lines"] += 1
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)


async def test_a_full_disk_stops_the_run_with_a_typed_error_and_keeps_every_line_written(
    server: ExtractionServer, adapter: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "out.jsonl"
    inputs = [(f"id{n}", f"item {n}") for n in range(1, 7)]
    fill_the_disk(monkeypatch, output, after=2)
    results = []
    with pytest.raises(ResultsWriteError) as raised:
        async for result in extract_many(adapter, inputs, Row, output=output, concurrency=1):
            results.append(result)
    error = raised.value
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC and error.filename == str(output)
    assert f"cannot write the results to {output}: No space left on device" in str(error)
    assert error.unwritten == ["id3"] and "not written (run again to redo them): 'id3'" in str(error)
    assert [r.id for r in results] == ["id1", "id2", "id3"]  # id3's paid answer still reached the caller
    assert results[2].value == Row(n=3, word="w3")
    assert len(server.served) == 3  # no item started after the failed write
    assert output.read_text().count("\n") == 2 and ids_in(output) == ["id1", "id2"]  # no torn line
    monkeypatch.undo()  # space is freed: the same run again resumes
    rest = [r.id async for r in extract_many(adapter, inputs, Row, output=output, concurrency=1)]
    assert rest == ["id3", "id4", "id5", "id6"] and ids_in(output) == [f"id{n}" for n in range(1, 7)]


def test_a_lone_surrogate_or_a_unicode_line_separator_in_a_result_stays_in_one_utf8_line(tmp_path: Path) -> None:
    log = ResultLog(tmp_path / "out.jsonl")
    log.append({"id": "a", "ok": True, "value": "half \ud83d"})  # a model's broken answer
    log.append({"id": "b", "ok": True, "value": "one\u2028two\x85three\u2029"})
    log.close()
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()  # as a reader would split them
    assert [json.loads(line)["value"] for line in lines] == ["half \ud83d", "one\u2028two\x85three\u2029"]
    assert ResultLog(tmp_path / "out.jsonl").done == {"a", "b"}
