"""`ContinuationToken`: where a long-running (background) run can be picked up again.

A run asked for with `options={"background": True}` answers at once with
`finish_reason == FinishReason.LONG_RUNNING` and a `continuation_token`; passing that token back as
`get_response(continuation_token=token)` polls the run (or, with `stream=True`, resumes its event
stream after the last event the token saw). The token is opaque to callers but serialisable:
`str(token)` is a short ASCII string, and `ContinuationToken.parse(text)` (or passing the string
itself) gives it back, so a token can be stored in a database or sent to another process.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, replace
from typing import Any

from ._exceptions import UserError
from ._surrogates import lone_surrogate_at

__all__ = ["ContinuationToken"]

_PREFIX = "somw1."
_UNSAFE_ID = re.compile(r"[/\\?#%\x00-\x1f\x7f]")
_UNSAFE_TRACE = re.compile("[^0-9a-zA-Z-]")  # a traceparent is hex digits and dashes


@dataclass(frozen=True)
class ContinuationToken:
    """A reference to a long-running run: the response id and, for streams, the last event seen.

    `sequence_number` is the sequence number of the last stream event delivered with this token
    (None for a run that was not streamed yet): resuming starts right after it, so no delta is
    lost and none repeated. `trace` holds the W3C `traceparent` of the span that started the run,
    when telemetry was on, so every later poll's span links back to it.

    Example:
        response = await client.get_response("Summarise ...", options={"background": True})
        text = str(response.continuation_token)          # store it anywhere
        later = await client.get_response(continuation_token=text)
    """

    response_id: str
    sequence_number: int | None = None
    trace: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.response_id, str) or not self.response_id:
            raise UserError(f"a continuation token needs a non-empty response id, not {self.response_id!r:.60}")
        # The id goes into URL paths (`/responses/{id}`) and store keys: "..", a separator or a
        # control character would name another resource; a lone surrogate cannot be encoded.
        unsafe = _UNSAFE_ID.search(self.response_id) or lone_surrogate_at(self.response_id) is not None
        if self.response_id in (".", "..") or unsafe:
            raise UserError(
                f"a continuation token's response id must be plain text without '/', '\\', '?', '#', '%', "
                f"control characters or lone surrogates, and not '.' or '..'; got {self.response_id!r:.60}"
            )
        number = self.sequence_number
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < -1):
            raise UserError(f"a continuation token's sequence_number must be an int >= -1, not {number!r:.60}")
        trace = self.trace
        if trace is not None and (not isinstance(trace, str) or _UNSAFE_TRACE.search(trace)):
            raise UserError(f"a continuation token's trace must be a W3C traceparent string, not {trace!r:.60}")

    def __str__(self) -> str:
        fields: dict[str, Any] = {"id": self.response_id}
        if self.sequence_number is not None:
            fields["seq"] = self.sequence_number
        if self.trace is not None:
            fields["trace"] = self.trace
        raw = json.dumps(fields, separators=(",", ":")).encode()
        return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def parse(cls, text: str) -> ContinuationToken:
        """The token `str(token)` wrote; anything else raises `UserError`."""
        if not isinstance(text, str) or not text.startswith(_PREFIX):
            raise UserError(f"not a continuation token: {text!r:.60}")
        body = text[len(_PREFIX) :]
        try:
            fields = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        except (binascii.Error, ValueError) as error:
            raise UserError(f"a damaged continuation token: {text!r:.60}") from error
        if not isinstance(fields, dict):
            raise UserError(f"a damaged continuation token: {text!r:.60}")
        return cls(fields.get("id"), fields.get("seq"), fields.get("trace"))  # type: ignore[arg-type]

    @classmethod
    def coerce(cls, token: ContinuationToken | str) -> ContinuationToken:
        """`token` as a `ContinuationToken` (a string is parsed); anything else raises `UserError`."""
        if isinstance(token, ContinuationToken):
            return token
        if isinstance(token, str):
            return cls.parse(token)
        raise UserError(f"continuation_token must be a ContinuationToken or its string, not {type(token).__name__}")

    def after(self, sequence_number: int | None) -> ContinuationToken:
        """This token moved on to a later stream event."""
        return replace(self, sequence_number=sequence_number)
