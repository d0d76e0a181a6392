"""Gemini adapter: `from so_middleware.google import GeminiChatClient`.

Needs the extra: `pip install so-middleware[google]`.
"""

from .providers.google import *  # noqa: F403
from .providers.google import __all__ as __all__
