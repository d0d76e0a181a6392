"""The embedded local model: llama.cpp's `llama-server` with SmolLM2-135M-Instruct, offline.

Example:
    from so_middleware.local import LocalModelServer
    with LocalModelServer() as server:
        print(server.base_url)   # http://127.0.0.1:PORT/v1
"""

from ._clients import ROUTES, Route, chat_client
from ._server import LocalModelServer, default_model_path, llama_server_path, local_server

__all__ = [
    "ROUTES",
    "LocalModelServer",
    "Route",
    "chat_client",
    "default_model_path",
    "llama_server_path",
    "local_server",
]
