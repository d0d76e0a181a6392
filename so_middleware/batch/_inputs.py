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
Files are UTF-8 (a leading byte-order mark is skipped). Ids are unique: a duplicate, given or
derived (a given id equal to another item's derived id too), is a `UserError` naming both items.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from .. import UserError
from ..core import describe_surrogate, lone_surrogate_at

__all__ = ["InputSource", "Item", "checked_inputs", "read_inputs"]


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
        rows, where = _rows_of_path(Path(source))
    elif isinstance(source, (bytes, Mapping)):
        raise UserError(f"inputs must be a path or an iterable of items, not {type(source).__name__}")
    else:
        rows, where = enumerate(source, 1), "inputs item "
    owner: dict[str, int] = {}  # each id and the item that has it
    repeats: dict[str, int] = {}
    for number, row in rows:
        item_id, text = _id_and_text(row, id_field, text_field, f"{where}{number}")
        derived = item_id is None
        if item_id is None:
            digest = hashlib.sha256(text.encode()).hexdigest()[:16]
            repeats[digest] = repeats.get(digest, 0) + 1
            item_id = digest if repeats[digest] == 1 else f"{digest}#{repeats[digest]}"
        if item_id in owner:
            how = " (derived from its text)" if derived else ""
            raise UserError(
                f"{where}{number}: the id {item_id!r}{how} was already given to {where}{owner[item_id]}; "
                "ids must be unique"
            )
        owner[item_id] = number
        yield Item(item_id, text)


def checked_inputs(source: InputSource, *, id_field: str = "id", text_field: str = "text") -> Iterator[Item]:
    """`read_inputs`, with every item of a file, a directory or a collection (a list, a tuple...)
    read once first: a bad item or a duplicate id is a `UserError` before any item starts. A
    one-pass iterator (a generator) is read as the run goes."""
    if isinstance(source, (str, os.PathLike)):
        for _ in read_inputs(source, id_field=id_field, text_field=text_field):
            pass
    elif isinstance(source, Collection) and not isinstance(source, (str, bytes, Mapping)):
        return iter(list(read_inputs(source, id_field=id_field, text_field=text_field)))
    return read_inputs(source, id_field=id_field, text_field=text_field)


def _id_and_text(row: Any, id_field: str, text_field: str, where: str) -> tuple[str | None, str]:
    if isinstance(row, Item):
        item_id, text = row.id, row.text
    elif isinstance(row, str):
        item_id, text = None, row
    elif isinstance(row, tuple) and len(row) == 2:
        item_id, text = row
    elif isinstance(row, Mapping):
        if text_field not in row:
            raise UserError(
                f"{where} has no {text_field!r} field (it has {sorted(row)}); name the text's field: "
                "text_field= (--text-field on the command line)"
            )
        item_id, text = row.get(id_field), row[text_field]
    else:
        raise UserError(f"{where} is a {type(row).__name__}; expected a str, an (id, text) pair, a dict or an Item")
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: the text must be a non-empty string, not {text!r}")
    if lone_surrogate_at(text) is not None:  # half a surrogate pair: no request can carry it
        raise UserError(f"{where}: the text holds a lone surrogate {describe_surrogate(text)}; fix its encoding")
    if (item_id is not None and not isinstance(item_id, (str, int))) or item_id == "":
        raise UserError(f"{where}: the id must be a non-empty string or an int, not {item_id!r}")
    return (None if item_id is None else str(item_id)), text


def _rows_of_path(path: Path) -> tuple[Iterator[tuple[int, Any]], str]:
    """The rows of a file, each with its line number, or of a directory, numbered; how to name one."""
    if path.is_dir():
        return enumerate(_files_of(path), 1), f"{path} item "
    if not path.is_file():
        raise UserError(f"no such input file or directory: {path}")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _json_lines(path), f"{path}:"
    if suffix == ".csv":
        return _csv_rows(path), f"{path}:"
    raise UserError(f"{path}: expected a .jsonl, .ndjson or .csv file, or a directory of text files")


def _files_of(directory: Path) -> Iterator[Any]:
    for file in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith(".")):
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError as error:
            raise UserError(f"cannot read the input file {file}: {error.strerror}") from None
        yield Item(file.relative_to(directory).as_posix(), text)


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Each line of `path` decoded from UTF-8 (its own line number in the error if it is not)."""
    try:
        with path.open("rb") as lines:
            for number, line in enumerate(lines, 1):
                try:
                    yield number, line.decode("utf-8-sig" if number == 1 else "utf-8")
                except UnicodeDecodeError as error:
                    raise UserError(
                        f"{path}:{number} is not UTF-8 text (byte {error.start + 1} of the line: {error.reason}); "
                        "save the file as UTF-8"
                    ) from None
    except OSError as error:
        raise UserError(f"cannot read the input file {path}: {error.strerror}") from None


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as error:
            raise UserError(f"{path}:{number} is not JSON: {error}") from None


def _csv_rows(path: Path) -> Iterator[tuple[int, Any]]:
    at = 0  # the line read last: where a row ends, or where the reader failed

    def lines() -> Iterator[str]:
        nonlocal at
        for at, line in _text_lines(path):  # noqa: B007 (`at` is read outside)
            yield line

    try:
        for row in csv.DictReader(lines()):
            yield at, row
    except csv.Error as error:
        raise UserError(f"{path}:{at} is not a CSV row: {error}") from None
