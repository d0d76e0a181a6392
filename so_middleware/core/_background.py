"""Background-run checks shared by the client base and the layer base (see `_continuation.py`)."""

from __future__ import annotations

from typing import Any

from ._continuation import ContinuationToken
from ._exceptions import UserError
from ._options import ChatOptions, OptionsInput

__all__ = ["check_background", "with_continuation"]


def with_continuation(options: OptionsInput, token: ContinuationToken | str | None) -> ChatOptions:
    """`options` as `ChatOptions`, carrying `token` (a `get_response(continuation_token=...)` keyword)."""
    chat_options = ChatOptions.coerce(options)
    return chat_options if token is None else chat_options.replace(continuation_token=ContinuationToken.coerce(token))


def check_background(client: Any, options: ChatOptions) -> None:
    """Raise `UserError` when `client` (an adapter) has no background runs to start or continue."""
    if not client.supports_background:
        asked = "background=True" if options.background else "a continuation_token"
        raise UserError(
            f"{type(client).__name__} has no long-running (background) runs, so {asked} cannot be used: "
            "use the OpenAI Responses adapter (OpenAIResponsesClient), or drop the option"
        )
