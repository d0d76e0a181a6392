"""`OutputSettings`: how a run asks for its typed answer and how often it re-asks, in one place."""

from __future__ import annotations

from dataclasses import dataclass

from typing_extensions import TypedDict

from ...core import UserError
from ..strategies import Mode

__all__ = ["OutputSettings", "SettingsKeywords"]


@dataclass(frozen=True)
class OutputSettings:
    """The settings of a structured-output run, checked when made: a bad one is a `UserError` then.

    `name` names the answer on the wire (a schema or tool name); `description` tells the model
    what it is. `strict`: `None` (the default) sends a strict schema where the backend has strict
    mode and the type allows it, and a non-strict one otherwise; `True` demands strict; `False`
    never sends strict. `mode` is `auto` or one strategy (`native`, `tool`, `json_object`,
    `prompted`, or one added to the client's list). `max_retries` is how many times an invalid
    answer is re-asked with its validation errors.

    `StructuredOutput(...)` and `with_structured_output(...)` take these fields as keywords.

    Example:
        settings = OutputSettings(mode="tool", max_retries=1)
        StructuredOutputChatClient(client, settings=settings)
    """

    name: str | None = None
    description: str | None = None
    strict: bool | None = None
    mode: Mode = "auto"
    max_retries: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.mode, str) or not self.mode:
            raise UserError(f"mode must be 'auto' or a strategy name, got {self.mode!r}")
        if self.strict not in (None, True, False):
            raise UserError(f"strict must be True, False or None (automatic), got {self.strict!r}")
        retries = self.max_retries
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise UserError(f"max_retries must be an integer >= 0, got {retries!r}")
        if self.name is not None and (not isinstance(self.name, str) or not self.name.strip()):
            raise UserError(f"name must be a non-empty string, got {self.name!r}")
        if self.description is not None and not isinstance(self.description, str):
            raise UserError(f"description must be a string, got {type(self.description).__name__}")


class SettingsKeywords(TypedDict, total=False):
    """`OutputSettings`' fields as keyword arguments (`**settings: Unpack[SettingsKeywords]`);
    a test keeps the two the same."""

    name: str | None
    description: str | None
    strict: bool | None
    mode: Mode
    max_retries: int
