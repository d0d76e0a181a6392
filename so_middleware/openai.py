"""OpenAI adapters: `from so_middleware.openai import OpenAIChatClient`.

Needs the extra: `pip install so-middleware[openai]`.
"""

from .providers.openai import *  # noqa: F403
from .providers.openai import __all__ as __all__
