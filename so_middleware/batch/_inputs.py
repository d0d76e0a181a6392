"""Inputs of a batch: `Item`s with a stable id, read lazily from an iterable, a JSONL or CSV file or
a directory of text files.

| source                         | an item                                  | its id                          |
|--------------------------------|------------------------------------------|---------------------------------|
| iterable of `str`              | the string                               | derived from the text           |
| iterable of `(id, text)`       | the text                                 | given                           |
| iterable of dicts / `Item`s    | `row[text_field]`                        | `row[id_field]`, else derived   |
| `*.jsonl` file                 | each line: an object as above, or a JSON string | as above                 |
| `*.csv` file (with a header)   | each row, as a dict                      | as above                        |
| a directory                    | each file's text (sorted, recursively)   | its path inside the directory  |

A derived id is the first 16 hex digits of the text's SHA-256, with `#2`, `#3`... added to a text
seen before: the same inputs give the same ids on every run, so a re-run can skip what is done.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from .. import UserError

__all__ = ["InputSource", "Item", "read_inputs"]


@dataclass(frozen=True)
class Item:
    """One input of a batch: its `id` (unique in the batch) and the `text` to extract from."""

    id: str
    text: str


InputSource = Union[str, "os.PathLike[str]", Iterable[Any]]


def read_inputs(source: InputSource, *, id_field: str = "id", text_field: str = "text") -> Iterator[Item]:
    """The items of `source`, lazily, each with its id; `UserError` names a bad or duplicate one.

    Example:
        list(read_inputs(["Ada, 36", {"id": "b", "text": "Bob, 41"}]))
        # [Item(id='6f1c...', text='Ada, 36'), Item(id='b', text='Bob, 41')]
    """
    if isinstance(source, (str, os.PathLike)):
        rows, where = _rows_of_path(Path(source)), str(source)
    elif isinstance(source, (bytes, Mapping)):
        raise UserError(f"inputs must be a path or an iterable of items, not {type(source).__name__}")
    else:
        rows, where = iter(source), "inputs"
    seen: dict[str, int] = {}
    given: set[str] = set()
    for number, row in enumerate(rows, 1):
        item_id, text = _id_and_text(row, id_field, text_field, f"{where} item {number}")
        if item_id is None:
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            seen[digest] = seen.get(digest, 0) + 1
            item_id = digest if seen[digest] == 1 else f"{digest}#{seen[digest]}"
        elif item_id in given:
            raise UserError(f"{where} item {number}: the id {item_id!r} was already given to an earlier item")
        given.add(item_id)
        yield Item(item_id, text)


def _id_and_text(row: Any, id_field: str, text_field: str, where: str) -> tuple[str | None, str]:
    if isinstance(row, Item):
        item_id, text = row.id, row.text
    elif isinstance(row, str):
        item_id, text = None, row
    elif isinstance(row, tuple) and len(row) == 2:
        item_id, text = row
    elif isinstance(row, Mapping):
        if text_field not in row:
            raise UserError(f"{where} has no {text_field!r} field (it has {sorted(row)}); set text_field=")
        item_id, text = row.get(id_field), row[text_field]
    else:
        raise UserError(f"{where} is a {type(row).__name__}; expected a str, an (id, text) pair, a dict or an Item")
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: the text must be a non-empty string, not {text!r}")
    if (item_id is not None and not isinstance(item_id, (str, int))) or item_id == "":
        raise UserError(f"{where}: the id must be a non-empty string or an int, not {item_id!r}")
    return (None if item_id is None else str(item_id)), text


def _rows_of_path(path: Path) -> Iterator[Any]:
    if path.is_dir():
        return _files_of(path)
    if not path.is_file():
        raise UserError(f"no such input file or directory: {path}")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _json_lines(path)
    if suffix == ".csv":
        return _csv_rows(path)
    raise UserError(f"{path}: expected a .jsonl, .ndjson or .csv file, or a directory of text files")


def _files_of(directory: Path) -> Iterator[Any]:
    for file in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")):
        yield Item(file.relative_to(directory).as_posix(), file.read_text(encoding="utf-8", errors="replace"))


def _json_lines(path: Path) -> Iterator[Any]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError as error:
                raise UserError(f"{path}:{number} is not JSON: {error}") from None


def _csv_rows(path: Path) -> Iterator[Any]:
    with path.open(encoding="utf-8", newline="") as rows:
        yield from csv.DictReader(rows)
