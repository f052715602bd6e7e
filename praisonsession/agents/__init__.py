"""Agents that remember: ``session.Agent(...)`` and the pieces behind it.

Importing this package does not import ``requests`` or ``tenacity``; an agent's first chat does.
A service floor: it imports ``llm``, ``state`` and the ground, and reaches its session only
through the narrow port ``host.AgentHost`` (never ``Session`` or a store).
"""

from .agent import Agent, module_key
from .factory import create_agent
from .spec import AgentSpec
from .tools import Toolbox, function_schema

__all__ = ["Agent", "AgentSpec", "Toolbox", "create_agent", "function_schema", "module_key"]
