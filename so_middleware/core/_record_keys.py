"""The keys so_middleware writes into `response.additional_properties`: every one, here once.

Each layer writes its record of a call under its own key; readers (logging, telemetry, agents,
the gateway) look them up by these names, never by a spelled-out string. A leaf module.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CACHE_HIT_KEY",
    "FALLBACK_KEY",
    "RECORD_KEYS",
    "RESUMED_KEY",
    "RETRIES_KEY",
    "RETRY_EVENT",
    "STRUCTURED_OUTPUT_KEY",
]

STRUCTURED_OUTPUT_KEY: Final = "so_middleware.structured_output"  # the run: strategy, attempts, outcome
RETRIES_KEY: Final = "so_middleware.retries"  # one dict per transient retry, from `with_retries`
FALLBACK_KEY: Final = "so_middleware.fallback"  # which client answered and which failed, from `with_fallback`
CACHE_HIT_KEY: Final = "so_middleware.cache_hit"  # True on a response replayed by `with_cache`
RESUMED_KEY: Final = "so_middleware.resumed_response"  # the whole response, on a resumed stream's last update

RETRY_EVENT: Final = "so_middleware.retry"  # the span event `with_retries` adds, one per retry

RECORD_KEYS: Final = (STRUCTURED_OUTPUT_KEY, RETRIES_KEY, FALLBACK_KEY, CACHE_HIT_KEY, RESUMED_KEY)
