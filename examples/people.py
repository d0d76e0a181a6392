"""Types for the extraction demo: `so-middleware extract --type examples/people.py:Person`."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field


class Person(BaseModel):
    """A person mentioned in the text."""

    name: str = Field(description="the person's full name")
    age: int = Field(description="age in years")


class Sentiment(str, Enum):
    positive = "positive"
    negative = "negative"
    neutral = "neutral"


class Review(BaseModel):
    """A product review."""

    product: str
    sentiment: Sentiment
    stars: int = Field(ge=1, le=5)
    reviewer: str | None = None
