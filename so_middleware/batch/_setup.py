"""What every batch run is built from: the client stack, and the checked inputs, call options and
output file (`prepare`), all before any call."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from typing import Any

from .. import (
    ChatClient,
    LimitsChatClient,
    RetryingChatClient,
    StructuredOutput,
    StructuredOutputChatClient,
    as_chat_client,
    with_limits,
    with_retries,
)
from ..middleware.structured_output import OutputSettings
from ._inputs import InputSource, Item, checked_inputs
from ._results import ResultLog

__all__ = ["build_client", "prepare"]


def build_client(
    client: ChatClient | Any,
    *,
    concurrency: int = 8,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    max_attempts: int = 4,
    settings: OutputSettings | None = None,
    period: float = 60.0,
) -> ChatClient:
    """`with_structured_output(with_retries(with_limits(client)))`, keeping the layers `client` has.

    Limits sit innermost so every HTTP request, retries and re-asks included, passes them.

    Example:
        stack = build_client(adapter, concurrency=16, requests_per_minute=500)
    """
    stack = as_chat_client(client)
    has = getattr(stack, "get_service", lambda kind: None)
    if has(LimitsChatClient) is None:
        stack = with_limits(
            stack,
            max_concurrency=concurrency,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            period=period,
        )
    if has(RetryingChatClient) is None:
        stack = with_retries(stack, max_attempts=max_attempts)
    if has(StructuredOutputChatClient) is None:
        stack = StructuredOutputChatClient(stack, settings=settings)
    return stack


def prepare(
    inputs: InputSource,
    output_type: Any,
    *,
    output: str | os.PathLike[str] | None,
    retry_failed: bool,
    instructions: str | None,
    options: dict[str, Any] | None,
    settings: OutputSettings,
    id_field: str,
    text_field: str,
) -> tuple[Iterator[Item], StructuredOutput[Any], dict[str, Any], ResultLog | None, set[str]]:
    """What every run needs: the items, the feature and options of each call, the output file and
    the ids it already holds. The type, the inputs (a file, a directory, a list: every item, ids
    unique) and the output are checked here, before any call."""
    feature: StructuredOutput[Any] = StructuredOutput(output_type, **dataclasses.asdict(settings))
    call_options = {**(options or {}), "features": [feature]}
    if instructions is not None:
        call_options["instructions"] = instructions
    items = checked_inputs(inputs, id_field=id_field, text_field=text_field)
    log = None if output is None else ResultLog(output, retry_failed=retry_failed)
    skip = set() if log is None else log.done | log.failed
    return items, feature, call_options, log, skip
