"""Anthropic adapter: `from so_middleware.anthropic import AnthropicChatClient`.

Needs the extra: `pip install so-middleware[anthropic]`.
"""

from .providers.anthropic import *  # noqa: F403
from .providers.anthropic import __all__ as __all__
