"""Token usage: what the LLM reported, kept per turn and added up per agent and per session.

Each turn's answer carries the turn's summed ``usage`` (every request of the turn, tool rounds
included) in its ``metadata`` (never sent to the model); each summary record carries the
usage of its summary call. Totals are read back from the logs, so they survive restarts and
travel with forks, snapshots and archives like the conversation itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

__all__ = ["USAGE_FIELDS", "USAGE_KEY", "add_usage", "agent_name_of", "usage_totals"]

#: Where a turn's usage is kept: ``answer["metadata"][USAGE_KEY]``.
USAGE_KEY = "usage"
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
_HISTORY = ".history"
_SUMMARIES = ".summaries"
_PREFIX = "agent:"


def add_usage(total: dict[str, int], usage: Mapping[str, Any] | None) -> None:
    """Add one response's ``usage`` to ``total`` (and count the request)."""
    total["requests"] = total.get("requests", 0) + 1
    if not isinstance(usage, Mapping):
        return
    for name in USAGE_FIELDS:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            total[name] = total.get(name, 0) + value


def _empty() -> dict[str, int]:
    return {"turns": 0, "requests": 0, "summaries": 0, **dict.fromkeys(USAGE_FIELDS, 0)}


def agent_name_of(log: str) -> str | None:
    """The name of the agent whose history or summaries ``log`` is, else None."""
    for suffix in (_HISTORY, _SUMMARIES):
        if log.startswith(_PREFIX) and log.endswith(suffix):
            escaped = log[len(_PREFIX) : -len(suffix)]
            # module keys escape names as %XX (identifiers.filename_for); a digest stays as is
            return escaped if escaped.startswith("~") else unquote(escaped)
    return None


def usage_totals(logs: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, Any]:
    """``{"session": totals, "agents": {agent name: totals}}`` from agents' logs by path.

    Totals hold ``turns``, ``requests``, ``summaries`` and the usage fields; a turn whose
    endpoint reported no usage counts as a turn and its requests, with no tokens.
    """
    agents: dict[str, dict[str, int]] = {}
    for path, messages in sorted(logs.items()):
        key = agent_name_of(path)
        if key is None:
            continue
        totals = agents.setdefault(key, _empty())
        summaries = path.endswith(_SUMMARIES)
        for message in messages:
            if summaries:
                if message.get("role") == "summary" and message.get("method") == "llm":
                    totals["summaries"] += 1
                    _add(totals, message.get(USAGE_KEY), 1)
                continue
            if message.get("role") == "user":
                totals["turns"] += 1
            metadata = message.get("metadata")
            if isinstance(metadata, Mapping) and isinstance(metadata.get(USAGE_KEY), Mapping):
                usage = metadata[USAGE_KEY]
                _add(totals, usage, int(usage.get("requests", 1) or 1))
    session = _empty()
    for totals in agents.values():
        for name, value in totals.items():
            session[name] += value
    return {"session": session, "agents": agents}


def _add(totals: dict[str, int], usage: Any, requests: int) -> None:
    totals["requests"] += requests
    if not isinstance(usage, Mapping):
        return
    for name in USAGE_FIELDS:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            totals[name] += value
