"""Agents over chat clients (seeds 000, 001, 003): typed runs, threads, streaming, decorators,
tools, and runs paused for approval kept in a store."""

from ._agent import Agent, AgentStream, AgentThread, ChatAgent, DelegatingAgent, TypedAgentStream
from ._paused import MemoryPausedRuns, PausedRunStore, PausedRunStoreError, PostgresPausedRuns, SQLitePausedRuns
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
    "MemoryPausedRuns",
    "PausedRunStore",
    "PausedRunStoreError",
    "PostgresPausedRuns",
    "SQLitePausedRuns",
    "SecondaryOutput",
    "StructuredOutputAgent",
    "TypedAgentStream",
]
