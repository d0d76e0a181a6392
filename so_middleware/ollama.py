"""Ollama adapter (native API): `from so_middleware.ollama import OllamaChatClient`.

Needs the extra: `pip install so-middleware[ollama]`.
"""

from .providers.ollama import *  # noqa: F403
from .providers.ollama import __all__ as __all__
