"""Module trees to stored documents and back: what a store does with ``save_session_state``.

Each named module becomes one JSON document (a foreign one, AgentScope's say, its
``state_dict()``: see ``state/protocol.py``). The :class:`MessageLog` instances inside a tree
are taken out of it, by dotted path (``agent.history``), so that a store can append to a log
instead of rewriting it; a document keeps an empty placeholder where each log was. Loading
puts the stored logs back in their places and applies every module's state: all are checked
first, then all applied, or none is. Stores call these functions; they know nothing of stores.
"""

from __future__ import annotations

import logging
from typing import Any

from .._internal.identifiers import check_key
from ..errors import InvalidIdError, StateDictError
from .message_log import MessageLog
from .module import StateModule, _plan_of, _snapshot_of
from .protocol import check_modules as check_protocol
from .protocol import foreign_state, is_ours, load_foreign

__all__ = [
    "attach_logs",
    "check_module_name",
    "check_modules",
    "is_ours",
    "load_states",
    "logs_of",
    "ours",
    "snapshot_module",
]

_logger = logging.getLogger("praisonsession")


def check_module_name(name: object) -> str:
    """A module's name: a state key without ``.``, which separates it from the names of the
    message logs inside it (``agent.memory``); with one it could be saved but not read back."""
    key = check_key(name, "module name")
    if "." in key:
        raise InvalidIdError(
            f"module name {key!r} contains '.', which separates a module from the logs inside "
            "it; use '_' instead."
        )
    return key


def check_modules(call: str, modules: dict[str, Any]) -> None:
    """Refuse, before anything is read or written, a name that cannot be read back or an
    object that speaks neither our StateModule nor the state-dict protocol."""
    for name in modules:
        check_module_name(name)
    check_protocol(call, modules)


def snapshot_module(module: Any, name: str, logs: dict[str, MessageLog] | None = None) -> Any:
    """The document a module is stored as: ours with its message logs set apart in ``logs``
    (when given), a foreign one as its ``state_dict()``, checked to be JSON data."""
    return _snapshot_of(module, name, logs) if is_ours(module) else foreign_state(module, name)


def ours(modules: dict[str, Any]) -> dict[str, StateModule]:
    """This library's StateModules among ``modules`` (the ones with message logs)."""
    return {name: module for name, module in modules.items() if is_ours(module)}


def logs_of(module: StateModule, name: str) -> dict[str, MessageLog]:
    """The message logs in a module tree, by dotted path."""
    return {path: sub for path, sub in module._walk(name).items() if isinstance(sub, MessageLog)}


def attach_logs(
    module: StateModule, name: str, document: Any, logs: dict[str, list[dict[str, Any]]]
) -> Any:
    """Put each stored log back where the module tree has a MessageLog placeholder."""
    for path, sub in module._walk(name).items():
        if not isinstance(sub, MessageLog):
            continue
        parts = path.split(".")[1:]
        if not parts:
            if document == {}:
                document = {"messages": logs.get(path, [])}
            continue
        node = document
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(parts[-1]) == {}:
            node[parts[-1]] = {"messages": logs.get(path, [])}
    return document


def load_states(
    modules: dict[str, Any], states: dict[str, Any], where: str, trusted: bool = False
) -> None:
    """Load ``states[name]`` into each module that has one: all are checked, then all are
    applied, or none is. A missing key raises; a stored key no module has is logged.

    Our modules are planned and checked first; foreign ones load through their own
    ``load_state_dict`` (undone if one of them raises), then ours are applied.
    ``trusted`` states were just decoded from a store, so they are neither checked nor copied.
    """
    actions = []
    missing: list[str] = []
    unexpected: list[str] = []
    for name, module in ours(modules).items():
        if name in states:
            actions.extend(
                _plan_of(module, states[name], True, f"{name}.", missing, unexpected, trusted)
            )
    if missing:
        raise StateDictError(where, missing, unexpected)
    if unexpected:
        _logger.warning("Ignored stored keys that no module has: %s", unexpected)
    load_foreign({n: m for n, m in modules.items() if not is_ours(m)}, states)
    for apply in actions:
        apply()
