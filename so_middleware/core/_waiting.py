"""`wait_for_response`: poll a long-running run with backoff until it is done, within a deadline."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio

from ._client import ChatClient
from ._continuation import ContinuationToken
from ._exceptions import DeadlineExceededError, UserError
from ._options import OptionsInput
from ._responses import ChatResponse
from ._usage import FinishReason

__all__ = ["cancel_run", "wait_for_response"]

CANCEL_TIMEOUT = 10.0  # seconds a best-effort cancel may take when a wait gives up


async def wait_for_response(
    client: ChatClient,
    continuation_token: ContinuationToken | str,
    *,
    deadline: float = 600.0,
    first_delay: float = 0.5,
    max_delay: float = 10.0,
    output_type: Any = None,
    options: OptionsInput = None,
    cancel_on_exit: bool = True,
) -> ChatResponse[Any]:
    """Poll `client` with `continuation_token` until the run is no longer `LONG_RUNNING`.

    Waits grow by half each time, from `first_delay` to `max_delay` seconds. `deadline` (seconds)
    bounds the whole wait: when it passes, `DeadlineExceededError` is raised. When the wait ends
    without a result (the deadline, or the waiting task cancelled) and `cancel_on_exit` is true,
    the run is cancelled on the server too (`client.cancel(token)`, best effort). `output_type`
    asks a structured-output layer for the typed value of the completed run. From blocking code:
    `run_sync(lambda: wait_for_response(client, token))`.

    Example:
        started = await client.get_response("Write a report", options={"background": True})
        done = await wait_for_response(client, started.continuation_token, deadline=120)
        print(done.text)
    """
    if not (isinstance(deadline, (int, float)) and deadline > 0 and 0 < first_delay <= max_delay):
        raise UserError(
            f"need deadline > 0 and 0 < first_delay <= max_delay, got {deadline}, {first_delay}, {max_delay}"
        )
    token = ContinuationToken.coerce(continuation_token)
    delay = first_delay
    try:
        with anyio.move_on_after(deadline):  # a poll's own TimeoutError is not this deadline
            while True:
                response = await client.get_response(options=options, output_type=output_type, continuation_token=token)
                if response.finish_reason != FinishReason.LONG_RUNNING:
                    return response
                token = response.continuation_token or token
                await anyio.sleep(delay)
                delay = min(delay * 1.5, max_delay)
    except anyio.get_cancelled_exc_class():
        if cancel_on_exit:
            await _cancel_quietly(client, token)
        raise
    if cancel_on_exit:
        await _cancel_quietly(client, token)
    raise DeadlineExceededError(
        f"the background run {token.response_id} was not done within {deadline:g} s", deadline=deadline
    )


async def _cancel_quietly(client: ChatClient, token: ContinuationToken) -> None:
    with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_TIMEOUT), contextlib.suppress(Exception):
        await cancel_run(client, token)  # best effort: the wait's own outcome is what the caller gets


async def cancel_run(client: ChatClient | Any, continuation_token: ContinuationToken | str) -> str:
    """Cancel the long-running run `continuation_token` names, through any stack of layers over
    an adapter that has background runs; returns the run's status after the cancel.

    Example: `await cancel_run(client, response.continuation_token)  # "cancelled"`
    """
    cancel = getattr(client, "cancel", None)
    if cancel is None or not getattr(client, "supports_background", False):
        raise UserError(f"{type(client).__name__} has no long-running runs to cancel")
    return str(await cancel(ContinuationToken.coerce(continuation_token)))
