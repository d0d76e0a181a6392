"""Reading a results file back: each line as a typed `ItemResult`, its value validated against the type.

The file is the one `extract_many(..., output=...)` (or the command line's `--output`) appends to,
one JSON record a line (see `_results`). Each record becomes the `ItemResult` the run gave: the
value is validated into `output_type` again (a model, not a dict), an error becomes a
`RecordedError` keeping its type's name, message and HTTP status, and the attempts and usage come
back as `Attempt` and `UsageDetails`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import TypeAdapter, ValidationError

from .. import Attempt, SOMiddlewareError, UsageDetails, UserError
from ._results import ItemResult

__all__ = ["RecordedError", "read_results"]

T = TypeVar("T")
_USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens")


class RecordedError(SOMiddlewareError):
    """An item's error as a results file keeps it: the exception's type name, message and HTTP status.

    `type_name` is the name of the exception the item ended with (`ModelBehaviorError`,
    `RateLimitError`...), `status_code` its HTTP status when it had one, `raw_lines` the provider's
    unreadable line for a `batch_unreadable_line` error.

    Example:
        for result in read_results("out.jsonl", Person):
            if not result.ok and result.error.type_name == "RateLimitError":
                ...
    """

    def __init__(
        self, type_name: str, message: str, *, status_code: int | None = None, raw_lines: list[str] | None = None
    ) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message
        self.status_code = status_code
        self.raw_lines = list(raw_lines or [])


@overload
def read_results(path: str | os.PathLike[str], output_type: type[T]) -> Iterator[ItemResult[T]]: ...
@overload
def read_results(path: str | os.PathLike[str], output_type: Any) -> Iterator[ItemResult[Any]]: ...
def read_results(path: str | os.PathLike[str], output_type: Any) -> Iterator[ItemResult[Any]]:
    """The results in a file `extract_many` wrote, in file order, each value an `output_type`.

    A result with an error has a `RecordedError` (the original's type name, message and status).
    A line torn by a kill mid-write (the last one, without its line end) is skipped, as a re-run
    skips it; a file being written can be read. A missing file is a `UserError` at once; a line
    that is not a result record, or a value that is not an `output_type`, is a `UserError` naming
    the line when the iteration reaches it.

    Example:
        for result in read_results("people.results.jsonl", Person):
            print(result.id, result.value.name if result.ok else result.error.type_name)
    """
    file = Path(path)
    if not file.is_file():
        raise UserError(f"{file} is not a results file: it does not exist or is not a file")
    try:
        adapter = TypeAdapter(output_type)
    except Exception as error:  # a type pydantic cannot validate: the caller's to fix
        raise UserError(f"{output_type!r} cannot be validated: {error}") from None
    return _read(file, adapter, getattr(output_type, "__name__", repr(output_type)))


def _read(file: Path, adapter: TypeAdapter[Any], type_name: str) -> Iterator[ItemResult[Any]]:
    with file.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            if not line.endswith(b"\n"):
                return  # torn by a kill: the run that wrote it did not finish that item
            record = _record(line, f"{file}:{number}")
            attempts, usage, seconds = _attempts(record), _usage(record.get("usage")), _seconds(record)
            if not record["ok"]:
                yield ItemResult(record["id"], None, _error(record.get("error")), attempts, usage, seconds)
                continue
            try:
                value = adapter.validate_python(record.get("value"))
            except ValidationError as invalid:
                raise UserError(
                    f"{file}:{number}: the value of {record['id']!r} is not a {type_name}: {invalid}"
                ) from None
            yield ItemResult(record["id"], value, None, attempts, usage, seconds)


def _record(line: bytes, where: str) -> Mapping[str, Any]:
    try:
        record = json.loads(line)
    except ValueError as error:
        raise UserError(f"{where} is not a result line ({error}); is it another file?") from None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or not isinstance(record.get("ok"), bool):
        raise UserError(f"{where} is not a result line (no string `id` and boolean `ok`); is it another file?")
    return record


def _error(record: Any) -> RecordedError:
    record = record if isinstance(record, dict) else {}
    status = record.get("status_code")
    raw_lines = record.get("raw_lines")
    return RecordedError(
        str(record.get("type", "Error")),
        str(record.get("message", "")),
        status_code=status if isinstance(status, int) else None,
        raw_lines=[str(line) for line in raw_lines] if isinstance(raw_lines, list) else None,
    )


def _attempts(record: Mapping[str, Any]) -> list[Attempt]:
    attempts: list[Attempt] = []
    for index, attempt in enumerate(record.get("attempts") or []):
        if not isinstance(attempt, dict):
            continue
        error = attempt.get("error")
        type_name, _, message = str(error).partition(": ")
        attempts.append(
            Attempt(
                index,
                str(attempt.get("text", "")),
                error=None if error is None else RecordedError(type_name, message),
                usage=_usage(attempt.get("usage")),
                strategy=attempt.get("strategy"),
            )
        )
    return attempts


def _usage(record: Any) -> UsageDetails | None:
    if not isinstance(record, dict):
        return None
    return UsageDetails(**{name: record[name] for name in _USAGE_FIELDS if isinstance(record.get(name), int)})


def _seconds(record: Mapping[str, Any]) -> float:
    seconds = record.get("seconds")
    return float(seconds) if isinstance(seconds, (int, float)) else 0.0
