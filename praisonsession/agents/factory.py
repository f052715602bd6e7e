"""``create_agent``: what ``session.Agent(...)`` does.

One live ``Agent`` per (Session object, agent name): asking again returns the same object,
reconfigured with the new arguments and keeping its history, so nothing can ever replace a
live conversation with an older stored copy (PraisonAI's ``restore_state`` detached live
agents that way). The first time, the agent's saved history is loaded from the store, so a
new process that opens the same session and creates the same agent continues the conversation.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .. import runtime
from ..identifiers import check_key
from ..llm.config import LLMConfig
from .agent import Agent

if TYPE_CHECKING:
    from ..session import Session

__all__ = ["create_agent"]

_lock = threading.RLock()
_knowledge_added: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()

#: Options accepted besides PraisonAI's named parameters.
AGENT_OPTIONS = frozenset(
    {"goal", "backstory", "history_window", "max_tool_rounds", "context_items"}
)
#: PraisonAI options that have no effect here (PraisonAI's factory drops them too).
IGNORED_OPTIONS = frozenset({"verbose", "user_id", "markdown"})


def create_agent(
    session: Session,
    name: str,
    role: str = "Assistant",
    instructions: str | None = None,
    tools: Iterable[Callable[..., Any]] | None = None,
    memory: bool = True,
    knowledge: Iterable[str] | bool | None = None,
    llm: str | Mapping[str, Any] | LLMConfig | None = None,
    **kwargs: Any,
) -> Agent:
    """The session's agent called ``name``: the live one, or a new one with its saved history.

    ``knowledge`` sources are added to the session (``session.add_knowledge``) and reach the
    prompt through ``session.get_context``, with the session's memory, when ``memory=True``.
    """
    unknown = sorted(set(kwargs) - AGENT_OPTIONS - IGNORED_OPTIONS)
    if unknown:
        raise TypeError(
            f"Agent() got unexpected keyword arguments {unknown}; it accepts name, role, "
            f"instructions, tools, memory, knowledge, llm and {sorted(AGENT_OPTIONS)}."
        )
    options = {k: v for k, v in kwargs.items() if k in AGENT_OPTIONS}
    name = check_key(name, "agent name")
    with _lock:
        agents = _agents_of(session)
        agent = agents.get(name)
        if agent is not None:
            agent.configure(role, instructions, tools, memory, knowledge, llm, **options)
        else:
            agent = Agent(
                session, name, role, instructions, tools, memory, knowledge, llm, **options
            )
            runtime.run(agent._load(), inline=session.store.runs_inline)
            agents[name] = agent
        _add_knowledge(session, agent)
    return agent


def _agents_of(session: Session) -> dict[str, Agent]:
    """The session's live agents (``Session._agents``; created here if the Session lacks it)."""
    agents = getattr(session, "_agents", None)
    if agents is None:
        agents = {}
        session._agents = agents  # type: ignore[attr-defined]
    return agents


def _add_knowledge(session: Session, agent: Agent) -> None:
    """Add the agent's knowledge sources to the session, each once per Session object."""
    if not agent.knowledge:
        return
    add = getattr(session, "add_knowledge", None)
    if add is None:
        raise NotImplementedError(
            f"Agent {agent.name!r} was given knowledge={agent.knowledge!r}, but this Session "
            "has no add_knowledge(); add the sources with a Session that supports knowledge."
        )
    added = _knowledge_added.setdefault(session, set())
    for source in agent.knowledge:
        if source not in added:
            add(source)
            added.add(source)
