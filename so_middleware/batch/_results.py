"""Per-item results and the JSONL file they are appended to, crash-safe and resumable.

One line per finished item, written by one `write()` call the moment the item finishes (so a
killed process loses only the items still in flight) and `fsync`ed in small groups (so does a
crashed machine, up to the last group). A line torn by a kill mid-write can only be the last:
it is detected and cut off when the file is opened again. A write that fails (a full disk) is
cut off at once, so the lines before it stay whole, and raises `ResultsWriteError`.

    {"id": "a", "ok": true, "value": {...}, "attempts": [...], "usage": {...}, "seconds": 0.8}
    {"id": "b", "ok": false, "error": {"type": "ModelBehaviorError", "message": "..."}, "attempts": [...], ...}
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter

from .. import Attempt, SOMiddlewareError, UsageDetails, UserError, failure_of

__all__ = ["ItemResult", "ResultLog", "ResultsWriteError", "usage_record"]

T = TypeVar("T")
# Valid unescaped in a JSON string, but line breaks to `str.splitlines()`: escaped, one record a line
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


@dataclass(frozen=True)
class ItemResult(Generic[T]):
    """The outcome of one input: a `value`, or a typed `error` with the raw text of every attempt.

    `error` is the exception itself (`ModelBehaviorError`, `RefusalError`, the SDK's
    `RateLimitError` after every retry...); `attempts` and `usage` are the model calls made.

    Example:
        async for result in extract_many(client, ["Ada, 36"], Person):
            print(result.id, result.value if result.ok else type(result.error).__name__)
    """

    id: str
    value: T | None = None
    error: BaseException | None = None
    attempts: list[Attempt] = field(default_factory=list)
    usage: UsageDetails | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the item has a value."""
        return self.error is None

    @classmethod
    def failed(cls, item_id: str, error: BaseException, seconds: float) -> ItemResult[Any]:
        """The result of an item whose call raised `error`, with the attempts and usage it carries
        (an `OutputError`'s, or those the structured-output layer adds to an SDK error that ended
        the run after answers were paid for)."""
        attempts = getattr(error, "attempts", None)
        attempts = [a for a in attempts if isinstance(a, Attempt)] if isinstance(attempts, list) else []
        usage = getattr(error, "usage", None)
        usage = usage if isinstance(usage, UsageDetails) else None
        return cls(item_id, error=error, attempts=attempts, usage=usage, seconds=seconds)

    def to_record(self, output_type: Any = Any) -> dict[str, Any]:
        """The JSON-ready dict written to the results file (and given per row by the Ray path)."""
        record: dict[str, Any] = {"id": self.id, "ok": self.ok}
        if self.error is None:
            record["value"] = TypeAdapter(output_type).dump_python(self.value, mode="json")
        else:
            record["error"] = error_record(self.error)
        record["attempts"] = [_attempt_record(attempt) for attempt in self.attempts]
        record["usage"] = usage_record(self.usage)
        record["seconds"] = round(self.seconds, 3)
        return record


def error_record(error: BaseException) -> dict[str, Any]:
    """`{"type", "message"}` and, for an HTTP error, its `status_code`; for an unreadable line of a
    provider batch's results, `raw_lines`: the line as the provider wrote it."""
    record: dict[str, Any] = {"type": type(error).__name__, "message": str(error)[:2000]}
    failure = failure_of(error)
    if failure.status is not None:
        record["status_code"] = failure.status
    body = failure.body
    for part in (body, body.get("error") if isinstance(body, dict) else None):  # OpenAI's body, Anthropic's
        if isinstance(part, dict) and isinstance(part.get("raw_lines"), list):
            record["raw_lines"] = part["raw_lines"]
    return record


def _attempt_record(attempt: Attempt) -> dict[str, Any]:
    return {
        "text": attempt.text,
        "error": None if attempt.error is None else f"{type(attempt.error).__name__}: {attempt.error}"[:2000],
        "strategy": attempt.strategy,
        "usage": usage_record(attempt.usage),
    }


def usage_record(usage: UsageDetails | None) -> dict[str, int] | None:
    """The token counts that were reported, as a dict (None when none was)."""
    if usage is None:
        return None
    names = ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens")
    return {name: getattr(usage, name) for name in names if getattr(usage, name) is not None}


class ResultsWriteError(SOMiddlewareError, OSError):
    """The results file could not be written during a run (a full disk, an I/O error).

    The run stops starting items; the items in flight end and are given to the caller, and the
    lines written before stay whole (a re-run with the same output resumes from them). `filename`
    names the file, `errno` the reason, `unwritten` the ids whose result is not in the file.
    """

    def __init__(self, path: Path, error: OSError) -> None:
        super().__init__(error.errno, error.strerror or str(error), str(path))
        self.unwritten: list[str] = []

    def __str__(self) -> str:
        ids = ", ".join(repr(item_id) for item_id in self.unwritten[:10])
        more = f" and {len(self.unwritten) - 10} more" if len(self.unwritten) > 10 else ""
        unwritten = f"; not written (run again to redo them): {ids}{more}" if ids else ""
        return f"cannot write the results to {self.filename}: {self.strerror}; the lines before are kept{unwritten}"


class ResultLog:
    """Appends result records to a JSONL file; knows the ids a previous run finished.

    Opening locks the file (a second run on it gets a `UserError`, as does a file that cannot be
    opened, read or written) and reads what is there: `done`
    (ids with a value) and `failed` (ids with an error). With
    `retry_failed=True` the failed lines are removed (the file is rewritten atomically) so their
    items run again and each id still appears once.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        retry_failed: bool = False,
        fsync_every: int = 16,
        fsync_seconds: float = 1.0,
    ) -> None:
        self.path = Path(path)
        self.done: set[str] = set()
        self.failed: set[str] = set()
        self._fsync_every, self._fsync_seconds = fsync_every, fsync_seconds
        self._unsynced, self._synced_at = 0, time.monotonic()
        self._fd = -1
        self._fd = self._open_locked()
        try:
            self._read()
            if retry_failed and self.failed:
                self._rewrite_without_failures()
                os.close(self._fd)
                self._fd = -1
                self._fd = self._open_locked()  # the rewritten file is a new one
                self.failed = set()
        except OSError as error:
            self.close()
            raise UserError(f"cannot use {self.path} for the results: {error.strerror or error}") from None

    def _open_locked(self) -> int:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as error:  # a missing directory, no permission, a read-only file system...
            raise UserError(f"cannot write the results to {self.path}: {error.strerror or error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when the process ends, even by kill -9
        except BlockingIOError:
            os.close(fd)
            raise UserError(f"{self.path} is being written by another run; wait for it or use another output") from None
        return fd

    def _records(self) -> Iterator[tuple[bytes, Mapping[str, Any]]]:
        """The complete lines and their records, read one at a time (the file may be large)."""
        with self.path.open("rb") as file:
            for number, line in enumerate(file, 1):
                if not line.endswith(b"\n"):
                    return  # the torn last line; `_read` cuts it off
                try:
                    record = json.loads(line)
                    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or "ok" not in record:
                        raise ValueError("not a result record")
                except ValueError as error:
                    raise UserError(
                        f"{self.path}:{number} is not a result line ({error}); is it another file?"
                    ) from None
                yield line, record

    def _read(self) -> None:
        complete = 0
        for line, record in self._records():
            (self.done if record["ok"] else self.failed).add(record["id"])
            complete += len(line)
        if complete < self.path.stat().st_size:  # a line torn by a kill mid-write
            os.truncate(self.path, complete)
            os.fsync(self._fd)

    def _rewrite_without_failures(self) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            with temporary.open("wb") as file:
                for line, record in self._records():
                    if record["ok"]:
                        file.write(line)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:  # the results file is untouched; its half-written copy goes
            temporary.unlink(missing_ok=True)
            raise

    def append(self, record: Mapping[str, Any]) -> None:
        """Write one record as one line, now; fsync when the group is full or old enough."""
        text = json.dumps(record, ensure_ascii=False, separators=(",", ":")).translate(_LINE_BREAKS)
        # a lone surrogate (from a model's answer) becomes its JSON escape, `\\udc83`: the line stays UTF-8
        line = text.encode("utf-8", "backslashreplace") + b"\n"
        written = end = 0
        try:
            end = os.fstat(self._fd).st_size
            while written < len(line):
                written += os.write(self._fd, line[written:])
        except OSError as error:
            if written:  # part of the line went in: cut it off, so the next line starts on a line
                with contextlib.suppress(OSError):  # else the next opening cuts the torn last line
                    os.ftruncate(self._fd, end)
            raise ResultsWriteError(self.path, error) from error
        (self.done if record["ok"] else self.failed).add(record["id"])
        self._unsynced += 1
        if self._unsynced >= self._fsync_every or time.monotonic() - self._synced_at >= self._fsync_seconds:
            self.sync()

    def sync(self) -> None:
        """fsync what was written."""
        if self._unsynced:
            try:
                os.fsync(self._fd)
            except OSError as error:
                raise ResultsWriteError(self.path, error) from error
            self._unsynced = 0
        self._synced_at = time.monotonic()

    def __del__(self) -> None:
        # a run never iterated must not keep its output locked for the life of the process
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)

    def close(self) -> None:
        """fsync and close the file (safe to call twice)."""
        if self._fd >= 0:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = -1
