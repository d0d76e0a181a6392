"""A MkDocs hook: the search ranks the task pages above the API reference.

A reader searching "retry" or "timeout" wants the page that says how, not the attribute whose name
holds the word. Material's search multiplies a page's score by its `search.boost`; a page's own
front matter still wins over the boost given here by its folder.
"""

from __future__ import annotations

from typing import Any

# folder of docs/ -> the boost of its pages
BOOSTS = {"how-to/": 3.0, "integrations/": 3.0, "concepts/": 2.0, "reference/": 0.3}


def boost_of(src_uri: str) -> float | None:
    """The search boost of the page at `src_uri` (None: the default, 1)."""
    return next((boost for folder, boost in BOOSTS.items() if src_uri.startswith(folder)), None)


def on_page_markdown(markdown: str, *, page: Any, **_: Any) -> str:
    """Set the page's `search.boost` from its folder unless its front matter sets one."""
    boost = boost_of(page.file.src_uri)
    search = page.meta.setdefault("search", {})
    if boost is not None and isinstance(search, dict):
        search.setdefault("boost", boost)
    return markdown
