"""``create_agent``: what ``session.Agent(...)`` does.

One live ``Agent`` per (session object, agent name): asking again returns the same object,
reconfigured with the new arguments and keeping its history, so nothing can ever replace a
live conversation with an older stored copy (PraisonAI's ``restore_state`` detached live
agents that way). The first time, the agent's saved history is loaded from the store, so a
new process that opens the same session and creates the same agent continues the conversation.
"""

from __future__ import annotations

from .agent import Agent
from .host import AgentHost
from .spec import AgentSpec

__all__ = ["AgentRegistry", "create_agent"]


class AgentRegistry:
    """A session's live agents, and the knowledge sources their creation already added."""

    def __init__(self) -> None:
        self.agents: dict[str, Agent] = {}
        self.knowledge_added: set[str] = set()

    def close(self) -> None:
        for agent in self.agents.values():
            agent.close()  # releases HTTP connections; the agent reconnects if used again


async def create_agent(host: AgentHost, registry: AgentRegistry, spec: AgentSpec) -> Agent:
    """The host's agent named ``spec.name``: the live one, given ``spec``, or a new one with
    its saved history.

    ``knowledge`` sources are added to the session (``add_knowledge``) and reach the prompt
    through ``get_context``, with the session's memory, when ``memory=True``.
    """
    agent = registry.agents.get(spec.name)
    if agent is not None:
        agent.configure(spec)
    else:
        agent = Agent(host, spec)
        await agent._load()
        agent = registry.agents.setdefault(spec.name, agent)  # a concurrent creation may have won
    for source in agent.knowledge or ():
        if source not in registry.knowledge_added:
            await host.add_knowledge(source)
            registry.knowledge_added.add(source)
    return agent
