"""Mistral adapter: `from so_middleware.mistral import MistralChatClient`.

Needs the extra: `pip install so-middleware[mistral]`.
"""

from .providers.mistral import *  # noqa: F403
from .providers.mistral import __all__ as __all__
