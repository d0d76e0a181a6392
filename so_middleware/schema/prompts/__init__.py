"""The schema in words for the model: a skeleton to fill in (`shape_hint`), an outline of what a
grammar enforces unseen (`schema_outline`), and the prefill that starts an answer (`opening`).

Pure code, like the rest of `schema`: text from a JSON schema, nothing sent anywhere.
"""

from ._opening import opening
from ._render import says_more_than_its_grammar, schema_outline
from ._shape import shape_hint

__all__ = ["opening", "says_more_than_its_grammar", "schema_outline", "shape_hint"]
