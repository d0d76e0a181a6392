"""Each provider's JSON-schema dialect: the strict rewrite, the per-provider rules and limits,
and recursion unrolled where a provider refuses it. `render_profile` is the entry."""

from ._profiles import PROFILES, render_profile
from ._unroll import DEFAULT_RECURSION_DEPTH

__all__ = ["DEFAULT_RECURSION_DEPTH", "PROFILES", "render_profile"]
