"""Token usage: what the LLM reported, kept per turn and added up per agent and per session.

Each turn appends one record to the agent's usage log (``agent:<name>.usage``, beside its
history, never sent to the model)::

    {"role": "usage", "turn": 40, "model": "gpt-4o-mini", "requests": 2,
     "prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876}

``turn`` is the index of the turn's user message in the history; ``requests`` counts the
turn's requests (tool rounds included). A summary record carries the usage of its summary call.
Totals are read back from the logs, so they survive restarts and travel with forks (a fork cut
at message ``n`` counts only the turns and summaries before ``n``), snapshots and archives.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote

__all__ = [
    "USAGE_FIELDS",
    "add_usage",
    "agent_name_of",
    "read_usage",
    "usage_record",
    "usage_totals",
]

USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
_PREFIX = "agent:"
_LOGS = (".history", ".summaries", ".usage")


def add_usage(total: dict[str, int], usage: Mapping[str, Any] | None) -> None:
    """Add one response's ``usage`` to ``total`` (and count the request)."""
    total["requests"] = total.get("requests", 0) + 1
    if not isinstance(usage, Mapping):
        return
    for name in USAGE_FIELDS:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            total[name] = total.get(name, 0) + value


def usage_record(turn: int, model: str, usage: Mapping[str, int]) -> dict[str, Any]:
    """The usage log's record for the turn whose user message is at index ``turn``."""
    return {"role": "usage", "turn": turn, "model": model, **usage}


def agent_name_of(log: str) -> tuple[str, str] | None:
    """``(agent name, "history" | "summaries" | "usage")`` for an agent's log, else None."""
    if not log.startswith(_PREFIX):
        return None
    for suffix in _LOGS:
        if log.endswith(suffix):
            escaped = log[len(_PREFIX) : -len(suffix)]
            # module keys escape names as %XX (identifiers.filename_for); a digest stays as is
            name = escaped if escaped.startswith("~") else unquote(escaped)
            return name, suffix[1:]
    return None


def _empty() -> dict[str, int]:
    return {"turns": 0, "requests": 0, "summaries": 0, **dict.fromkeys(USAGE_FIELDS, 0)}


def usage_totals(logs: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, Any]:
    """``{"session": totals, "agents": {agent name: totals}}`` from agents' logs by path.

    Totals hold ``turns``, ``requests``, ``summaries`` and the usage fields; a turn whose
    endpoint reported no usage counts as a turn and a request, with no tokens.
    """
    by_agent: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    for path, messages in logs.items():
        named = agent_name_of(path)
        if named is not None:
            by_agent.setdefault(named[0], {})[named[1]] = list(messages)
    agents: dict[str, dict[str, int]] = {}
    for name, parts in sorted(by_agent.items()):
        history = parts.get("history", [])
        totals = agents[name] = _empty()
        totals["turns"] = sum(1 for message in history if message.get("role") == "user")
        for record in parts.get("usage", []):
            turn = record.get("turn")
            if isinstance(turn, int) and turn < len(history):
                _add(totals, record, int(record.get("requests", 1) or 1))
        for record in parts.get("summaries", []):
            covers = record.get("covers")
            if (
                record.get("method") == "llm"
                and isinstance(covers, list)
                and len(covers) == 2
                and isinstance(covers[1], int)
                and covers[1] <= len(history)
            ):
                totals["summaries"] += 1
                _add(totals, record.get("usage"), 1)
    session = _empty()
    for totals in agents.values():
        for field, value in totals.items():
            session[field] += value
    return {"session": session, "agents": agents}


async def read_usage(
    paths: Iterable[str], read: Callable[[str], Awaitable[list[dict[str, Any]]]]
) -> dict[str, Any]:
    """:func:`usage_totals` of a session whose logs are ``paths``, each read with ``read``."""
    logs = {path: await read(path) for path in sorted(paths) if agent_name_of(path) is not None}
    return usage_totals(logs)


def _add(totals: dict[str, int], usage: Any, requests: int) -> None:
    totals["requests"] += requests
    if not isinstance(usage, Mapping):
        return
    for name in USAGE_FIELDS:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            totals[name] += value
