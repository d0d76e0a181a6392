"""`Feature`, the base of the feature objects carried in `options["features"]`. A leaf module."""

from __future__ import annotations

from typing import ClassVar

__all__ = ["Feature"]


class Feature:
    """Base for feature objects travelling in `options["features"]`.

    `handled_by` names the factory of the layer that must consume the feature; an adapter that
    receives such a feature unconsumed raises `UserError` instead of silently ignoring it.
    Features that need no layer leave it `None`. Any object can be a feature; this base only
    adds that check.
    """

    handled_by: ClassVar[str | None] = None
