"""The embedded local model: llama.cpp's `llama-server` with SmolLM2-135M-Instruct, offline.

Example:
    from so_middleware.local import LocalModelServer
    with LocalModelServer() as server:
        print(server.base_url)   # http://127.0.0.1:PORT/v1
"""

from ._build import setup_local
from ._clients import ROUTES, Route, chat_client
from ._context import ContextSizeChatClient, ContextSizeError, with_context_size_errors
from ._server import (
    MODEL_ID,
    LocalModelServer,
    PortInUseError,
    default_model_path,
    default_threads,
    llama_server_path,
    local_server,
)

__all__ = [
    "ROUTES",
    "ContextSizeChatClient",
    "ContextSizeError",
    "LocalModelServer",
    "MODEL_ID",
    "PortInUseError",
    "Route",
    "chat_client",
    "default_model_path",
    "default_threads",
    "llama_server_path",
    "local_server",
    "setup_local",
    "with_context_size_errors",
]
