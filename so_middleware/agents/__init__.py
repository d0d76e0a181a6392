"""Agents over chat clients (seeds 000, 001, 003): typed runs, threads, streaming, decorators."""

from ._agent import Agent, AgentStream, AgentThread, ChatAgent, DelegatingAgent, TypedAgentStream
from ._response import AgentResponse, AgentResponseUpdate, SecondaryOutput
from ._structured import StructuredOutputAgent

__all__ = [
    "Agent",
    "AgentResponse",
    "AgentResponseUpdate",
    "AgentStream",
    "AgentThread",
    "ChatAgent",
    "DelegatingAgent",
    "SecondaryOutput",
    "StructuredOutputAgent",
    "TypedAgentStream",
]
