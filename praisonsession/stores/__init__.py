"""Async session stores (AgentScope's ``SessionBase`` layer) and ``open_store``."""

from .base import SessionBase
from .json_files import JSONSession
from .memory import InMemorySession
from .record import FORMAT_VERSION, SessionInfo
from .sqlite import SqliteSession
from .urls import open_store

__all__ = [
    "FORMAT_VERSION",
    "InMemorySession",
    "JSONSession",
    "SessionBase",
    "SessionInfo",
    "SqliteSession",
    "open_store",
]
