"""``create_agent``: what ``session.Agent(...)`` does.

One live ``Agent`` per (session object, agent name): asking again returns the same object,
reconfigured with the new arguments and keeping its history, so nothing can ever replace a
live conversation with an older stored copy (PraisonAI's ``restore_state`` detached live
agents that way). The first time, the agent's saved history is loaded from the store, so a
new process that opens the same session and creates the same agent continues the conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import InvalidValueError
from ..identifiers import check_key
from ..llm.config import LLMConfig
from .agent import Agent
from .host import AgentHost

__all__ = ["AGENT_OPTIONS", "AgentRegistry", "create_agent"]

#: Options accepted besides PraisonAI's named parameters.
AGENT_OPTIONS = frozenset(
    {
        "goal",
        "backstory",
        "history_window",
        "max_tool_rounds",
        "context_items",
        "context_budget",
        "token_counter",
        "recall_turns",
        "compact_every",
    }
)
#: PraisonAI options that have no effect here (PraisonAI's factory drops them too).
IGNORED_OPTIONS = frozenset({"verbose", "user_id", "markdown"})


class AgentRegistry:
    """A session's live agents, and the knowledge sources their creation already added."""

    def __init__(self) -> None:
        self.agents: dict[str, Agent] = {}
        self.knowledge_added: set[str] = set()

    def close(self) -> None:
        for agent in self.agents.values():
            agent.close()  # releases HTTP connections; the agent reconnects if used again


async def create_agent(
    host: AgentHost,
    registry: AgentRegistry,
    name: str,
    role: str = "Assistant",
    instructions: str | None = None,
    tools: Iterable[Callable[..., Any]] | None = None,
    memory: bool = True,
    knowledge: Iterable[str] | bool | None = None,
    llm: str | Mapping[str, Any] | LLMConfig | None = None,
    **kwargs: Any,
) -> Agent:
    """The host's agent called ``name``: the live one, or a new one with its saved history.

    ``knowledge`` sources are added to the session (``add_knowledge``) and reach the prompt
    through ``get_context``, with the session's memory, when ``memory=True``.
    """
    unknown = sorted(set(kwargs) - AGENT_OPTIONS - IGNORED_OPTIONS)
    if unknown:
        raise InvalidValueError(
            f"Agent() got unexpected keyword arguments {unknown}; it accepts name, role, "
            f"instructions, tools, memory, knowledge, llm and {sorted(AGENT_OPTIONS)}."
        )
    options = {k: v for k, v in kwargs.items() if k in AGENT_OPTIONS}
    name = check_key(name, "agent name")
    agent = registry.agents.get(name)
    if agent is not None:
        agent.configure(role, instructions, tools, memory, knowledge, llm, **options)
    else:
        agent = Agent(host, name, role, instructions, tools, memory, knowledge, llm, **options)
        await agent._load()
        agent = registry.agents.setdefault(name, agent)  # a concurrent creation may have won
    for source in agent.knowledge or ():
        if source not in registry.knowledge_added:
            await host.add_knowledge(source)
            registry.knowledge_added.add(source)
    return agent
