"""The quality task set: extraction tasks from simple to nested, each with an input and an expected value.

Every task's output type is a pydantic model (the shape every library under test supports), with
fields that cover scalars, nested models, lists, enums, literals, unions and optional fields.
A task is exactly correct when the returned value equals the expected one after `normalize`
(strings compared stripped and case-folded, floats to 2 decimals); nothing else is forgiven.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel

# ---------------------------------------------------------------------------- types


class City(BaseModel):
    city: str


class Age(BaseModel):
    name: str
    age: int


class Price(BaseModel):
    product: str
    price: float


class Flag(BaseModel):
    is_open: bool


class Book(BaseModel):
    title: str
    author: str
    year: int


class Address(BaseModel):
    street: str
    city: str
    country: str


class Employee(BaseModel):
    name: str
    address: Address


class Point(BaseModel):
    x: int
    y: int


class Segment(BaseModel):
    start: Point
    end: Point


class Colors(BaseModel):
    colors: list[str]


class Numbers(BaseModel):
    numbers: list[int]


class Item(BaseModel):
    name: str
    quantity: int


class ShoppingList(BaseModel):
    items: list[Item]


class Person(BaseModel):
    name: str
    age: int


class Team(BaseModel):
    team: str
    members: list[Person]


class Sentiment(str, Enum):
    positive = "positive"
    negative = "negative"
    neutral = "neutral"


class Review(BaseModel):
    sentiment: Sentiment


class Priority(str, Enum):
    low = "low"
    medium = "medium"
    high = "high"


class Ticket(BaseModel):
    title: str
    priority: Priority


class Weekday(BaseModel):
    day: Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


class Unit(BaseModel):
    value: float
    unit: Literal["kg", "g", "lb"]


class Email(BaseModel):
    kind: Literal["email"]
    address: str


class Phone(BaseModel):
    kind: Literal["phone"]
    number: str


class Contact(BaseModel):
    contact: Email | Phone


class IdValue(BaseModel):
    id: int | str


class Contacts(BaseModel):
    contacts: list[Email | Phone]


class MaybeMiddle(BaseModel):
    first_name: str
    middle_name: str | None
    last_name: str


class MaybePhone(BaseModel):
    name: str
    phone: str | None


class Event(BaseModel):
    name: str
    year: int
    location: str | None


class Movie(BaseModel):
    title: str
    genre: Literal["comedy", "drama", "horror", "action"]
    rating: int


class Order(BaseModel):
    order_id: int
    customer: str
    items: list[Item]
    express: bool


class Recipe(BaseModel):
    name: str
    ingredients: list[str]
    minutes: int


class Country(BaseModel):
    name: str
    capital: str
    languages: list[str]


class Temperature(BaseModel):
    celsius: float


class Meeting(BaseModel):
    topic: str
    day: Literal["monday", "tuesday", "wednesday", "thursday", "friday"]
    attendees: list[str]


class Company(BaseModel):
    name: str
    founded: int
    ceo: Person


# ---------------------------------------------------------------------------- tasks


@dataclass(frozen=True)
class Task:
    """One extraction: `text` in, a `output_type` value out, compared with `expected`."""

    name: str
    category: str
    output_type: type[BaseModel]
    text: str
    expected: dict[str, Any]

    def prompt(self) -> str:
        return f"Extract the information from this text.\n\nText: {self.text}"

    def is_exact(self, value: Any) -> bool:
        if not isinstance(value, self.output_type):
            return False
        return bool(
            normalize(value.model_dump(mode="json"))
            == normalize(self.output_type.model_validate(self.expected).model_dump(mode="json"))
        )


def normalize(value: Any) -> Any:
    """Strings stripped and case-folded, floats rounded to 2 decimals, recursively."""
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    return value


TASKS: list[Task] = [
    # simple scalars
    Task("city", "simple", City, "I moved to Paris last spring.", {"city": "Paris"}),
    Task("age", "simple", Age, "Maria is 29 years old.", {"name": "Maria", "age": 29}),
    Task("price", "simple", Price, "The blue kettle costs 24.50 dollars.", {"product": "blue kettle", "price": 24.5}),
    Task("bool", "simple", Flag, "Sorry, the shop is closed today.", {"is_open": False}),
    Task(
        "book",
        "simple",
        Book,
        "Moby-Dick was written by Herman Melville in 1851.",
        {"title": "Moby-Dick", "author": "Herman Melville", "year": 1851},
    ),
    Task("temperature", "simple", Temperature, "It was 21.5 degrees Celsius at noon.", {"celsius": 21.5}),
    # nested
    Task(
        "employee",
        "nested",
        Employee,
        "Tom Baker lives at 12 Elm Street, Leeds, England.",
        {"name": "Tom Baker", "address": {"street": "12 Elm Street", "city": "Leeds", "country": "England"}},
    ),
    Task(
        "segment",
        "nested",
        Segment,
        "Draw a line from point (1, 2) to point (5, 9).",
        {"start": {"x": 1, "y": 2}, "end": {"x": 5, "y": 9}},
    ),
    Task(
        "company",
        "nested",
        Company,
        "Acme was founded in 1990. Its CEO, Jane Roe, is 52.",
        {"name": "Acme", "founded": 1990, "ceo": {"name": "Jane Roe", "age": 52}},
    ),
    Task(
        "country",
        "nested",
        Country,
        "France's capital is Paris, and people there speak French.",
        {"name": "France", "capital": "Paris", "languages": ["French"]},
    ),
    # lists
    Task("colors", "list", Colors, "The flag is red, white and blue.", {"colors": ["red", "white", "blue"]}),
    Task("numbers", "list", Numbers, "The winning numbers were 4, 8 and 15.", {"numbers": [4, 8, 15]}),
    Task(
        "shopping",
        "list",
        ShoppingList,
        "Buy 2 apples and 3 pears.",
        {"items": [{"name": "apples", "quantity": 2}, {"name": "pears", "quantity": 3}]},
    ),
    Task(
        "team",
        "list",
        Team,
        "Team Red has Ann, 31, and Bob, 45.",
        {"team": "Red", "members": [{"name": "Ann", "age": 31}, {"name": "Bob", "age": 45}]},
    ),
    Task(
        "recipe",
        "list",
        Recipe,
        "Pancakes take 20 minutes and need flour, milk and eggs.",
        {"name": "Pancakes", "ingredients": ["flour", "milk", "eggs"], "minutes": 20},
    ),
    Task(
        "order",
        "list",
        Order,
        "Order 1042 for Sam: 1 lamp and 4 bulbs, express delivery.",
        {
            "order_id": 1042,
            "customer": "Sam",
            "items": [{"name": "lamp", "quantity": 1}, {"name": "bulbs", "quantity": 4}],
            "express": True,
        },
    ),
    # enums and literals
    Task("sentiment_pos", "enum", Review, "I loved this phone, it is wonderful!", {"sentiment": "positive"}),
    Task("sentiment_neg", "enum", Review, "Terrible service, I hated every minute.", {"sentiment": "negative"}),
    Task(
        "ticket",
        "enum",
        Ticket,
        "Urgent: the login page is down for everyone. High priority.",
        {"title": "login page is down", "priority": "high"},
    ),
    Task("weekday", "enum", Weekday, "Let's meet on Friday.", {"day": "friday"}),
    Task("unit", "enum", Unit, "The parcel weighs 3 kg.", {"value": 3, "unit": "kg"}),
    Task(
        "movie",
        "enum",
        Movie,
        "Alien is a horror film; I rate it 9.",
        {"title": "Alien", "genre": "horror", "rating": 9},
    ),
    Task(
        "meeting",
        "enum",
        Meeting,
        "Budget review on Tuesday with Ann and Raj.",
        {"topic": "Budget review", "day": "tuesday", "attendees": ["Ann", "Raj"]},
    ),
    # unions
    Task(
        "contact_email",
        "union",
        Contact,
        "Write to me at ann@example.com.",
        {"contact": {"kind": "email", "address": "ann@example.com"}},
    ),
    Task(
        "contact_phone", "union", Contact, "Call me on 555-0134.", {"contact": {"kind": "phone", "number": "555-0134"}}
    ),
    Task("id_int", "union", IdValue, "The record id is 7781.", {"id": 7781}),
    Task("id_str", "union", IdValue, "The record id is AB-12.", {"id": "AB-12"}),
    Task(
        "contacts",
        "union",
        Contacts,
        "Reach Li at li@example.org or on 555-0199.",
        {"contacts": [{"kind": "email", "address": "li@example.org"}, {"kind": "phone", "number": "555-0199"}]},
    ),
    # optional fields
    Task(
        "middle_present",
        "optional",
        MaybeMiddle,
        "Her full name is Mary Ann Smith.",
        {"first_name": "Mary", "middle_name": "Ann", "last_name": "Smith"},
    ),
    Task(
        "middle_absent",
        "optional",
        MaybeMiddle,
        "His name is John Brown.",
        {"first_name": "John", "middle_name": None, "last_name": "Brown"},
    ),
    Task(
        "phone_absent",
        "optional",
        MaybePhone,
        "Contact: Eva Green (no phone number given).",
        {"name": "Eva Green", "phone": None},
    ),
    Task(
        "event",
        "optional",
        Event,
        "The Olympics were held in 2012.",
        {"name": "Olympics", "year": 2012, "location": None},
    ),
]

# The --quick subset: one task of five different kinds.
QUICK = ["age", "employee", "colors", "sentiment_pos", "middle_absent"]
