"""Images for a backend that cannot see: a 400 naming the image, before the backend is called.

llama-server without a vision projector answers an image with a 500 (`image input is not
supported`), which relayed would blame the gateway for the client's input. llama-server says what
it reads at `GET /props` (`modalities.vision`), which the adapter's capability discovery already
asks once per server: `false` there refuses images with a 400; a server that does not say (not
llama-server) is left to answer the image itself, and its answer is relayed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from so_middleware import ChatClient
from so_middleware.openai import OpenAIChatClient

from ._errors import BadRequest

__all__ = ["ImageCheck", "image_fields"]


def image_fields(items: list[dict[str, Any]]) -> Iterator[str]:
    """Where the input has images: `input[0].content[1]`, `input[2].output[0]`."""
    for index, item in enumerate(items):
        for key in ("content", "output"):  # a message's parts; a tool output given as parts
            parts = item.get(key)
            if isinstance(parts, list):
                for position, part in enumerate(parts):
                    if isinstance(part, dict) and part.get("type") == "input_image":
                        yield f"input[{index}].{key}[{position}]"


class ImageCheck:
    """Whether the backend behind `client` reads images, as its discovered server info says."""

    def __init__(self, client: ChatClient) -> None:
        self._adapter: OpenAIChatClient | None = getattr(client, "get_service", lambda kind: None)(OpenAIChatClient)

    async def check(self, items: list[dict[str, Any]]) -> None:
        """Raise a 400 naming the first image when the backend says it cannot read images."""
        field = next(image_fields(items), None)
        if field is None or self._adapter is None:
            return
        await self._adapter.discover_capabilities()  # once per server, shared with the chat calls
        info = self._adapter.server_info
        if info is not None and info.facts.get("vision") is False:
            raise BadRequest(
                f"The backend cannot read images (its model has no vision support); remove the image at {field}.",
                field,
                code="image_input_not_supported",
            )
