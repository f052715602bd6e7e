"""A whole session as one mutable document, for the backends that store it that way.

The in-memory and JSON stores keep each session as a document (metadata, key-value state,
module documents, and either the message logs or pointers to them). Every state operation is
written once, here, and both backends call it inside their own lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ..._internal.json_data import add_numbers
from ..backend import TTL, UNSET, Key
from ..record import FORMAT_VERSION, SessionInfo, resolve_info


class _Node:
    """A module name's part in :class:`LogsByModule`: the paths at or below it, and the
    parts after it (by the next part of the name)."""

    __slots__ = ("after", "paths")

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.after: dict[str, _Node] = {}


class LogsByModule:
    """The paths of a document's logs by module, so that the logs below a few modules cost
    what they hold, not every log of the session: a tree of the paths' parts split at dots,
    each node holding every path at or below it, so that a name holding dots is found by its
    parts (a path of many dots costs a node per part, not a copy of each of its heads).

    Logs are added to a document's ``logs`` and leave only with it; a dict keeps its keys in
    the order they came, so the new ones are taken from its end. Anything else (a log gone,
    the dict replaced) shows in its length or its last key, and the index is made again.
    """

    __slots__ = ("_last", "_root", "_seen")

    def __init__(self) -> None:
        self._root = _Node()
        self._seen = 0
        self._last: str | None = None  # the newest path indexed

    def below(self, logs: dict[str, Any], names: Iterable[str]) -> list[str]:
        """The paths in ``logs`` lying below modules ``names`` (``below.py``), each
        once, in the order of the names, then of the logs' coming."""
        self._catch_up(logs)
        wanted = dict.fromkeys(names)
        found = []
        for name in wanted:
            node = self._root.after.get(name) if "." not in name else self._node(name)
            if node is not None:
                found.append(node.paths)
        if len(found) <= 1:  # the common read: one module's logs, or none
            return list(found[0]) if found else []
        paths = [path for held in found for path in held]
        if any("." in name for name in wanted):  # one may lie below another: each path once
            return list(dict.fromkeys(paths))
        return paths

    def _node(self, name: str) -> _Node | None:
        """The node of a name holding dots, found part by part (None: no log below it)."""
        node = self._root
        for part in name.split("."):
            after = node.after.get(part)
            if after is None:
                return None
            node = after
        return node

    def _catch_up(self, logs: dict[str, Any]) -> None:
        added = len(logs) - self._seen
        newest = reversed(logs)
        fresh = list(islice(newest, max(added, 0)))
        if added < 0 or next(newest, None) != self._last:  # not only added: all again
            self._root, fresh = _Node(), list(reversed(logs))
        elif not fresh:
            return
        for path in reversed(fresh):
            node = self._root
            for part in path.split("."):
                below = node.after.get(part)
                if below is None:
                    below = node.after[part] = _Node()
                node = below
                node.paths.append(path)
        self._seen, self._last = len(logs), next(reversed(logs), None)


@dataclass
class SessionDocument:
    info: SessionInfo
    state: dict[str, Any] = field(default_factory=dict)
    modules: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, Any] = field(default_factory=dict)
    _by_module: LogsByModule = field(
        default_factory=LogsByModule, init=False, repr=False, compare=False
    )

    @classmethod
    def new(
        cls, key: Key, ttl: float | None, metadata: dict[str, Any], at: float
    ) -> SessionDocument:
        return cls(SessionInfo.new(key.user_id, key.session_id, ttl, metadata, at))

    # -- lifecycle ------------------------------------------------------------------------

    def touch(self, at: float, sliding: bool, ttl: TTL = UNSET) -> None:
        if ttl is not UNSET:
            self.info = self.info._replace(ttl=ttl, expires_at=None if ttl is None else at + ttl)
        self.info = self.info.touched(at, sliding)

    def merge_metadata(self, metadata: dict[str, Any]) -> None:
        self.info = self.info._replace(metadata={**self.info.metadata, **metadata})

    def changed(self, at: float) -> None:
        self.info = self.info._replace(version=self.info.version + 1, updated_at=at)

    def logs_below(self, names: Iterable[str]) -> list[str]:
        """The paths of the logs below those of modules ``names`` that have a document here
        (``below.py``): what ``read_modules`` returns with the documents. For a
        document kept between operations (the memory store's): the JSON store reads its
        document afresh each time, and one pass over its paths (``paths_below``) costs
        less than the index."""
        return self._by_module.below(self.logs, [n for n in names if n in self.modules])

    # -- state ----------------------------------------------------------------------------

    def patch(self, updates: dict[str, Any], deletes: list[str], replace_all: bool) -> None:
        if replace_all:
            self.state = {}
        for name in deletes:
            self.state.pop(name, None)
        self.state.update(updates)

    def increment(self, name: str, amount: int | float, default: int | float) -> int | float:
        value = add_numbers(self.state.get(name, default), amount, name)
        self.state[name] = value
        return value

    # -- encoding -------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            **self.info.to_json(),
            "state": self.state,
            "modules": self.modules,
            "logs": self.logs,
        }

    @classmethod
    def from_json(cls, data: Any, key: Key, what: str, at: float) -> SessionDocument:
        """Decode a stored document, migrating older formats."""
        if not isinstance(data, dict):
            raise ValueError("the document is not a JSON object")
        if "format" not in data:
            # Format 0: an AgentScope JSONSession file, {module name: state dict}.
            doc = cls.new(key, None, {}, at)
            doc.modules = data
            return doc
        info = SessionInfo.from_json(data, what)
        if (info.user_id, info.session_id) != (key.user_id, key.session_id):
            raise ValueError(f"it belongs to session {info.session_id!r} of user {info.user_id!r}")
        return cls(
            info._replace(format=FORMAT_VERSION),
            dict(data.get("state") or {}),
            dict(data.get("modules") or {}),
            dict(data.get("logs") or {}),
        )


def resolve(
    doc: SessionDocument | None, key: Key, at: float, must_exist: bool
) -> SessionDocument | None:
    """The live document, or None; with ``must_exist`` a missing session raises instead."""
    info = resolve_info(
        None if doc is None else doc.info, key.user_id, key.session_id, at, must_exist
    )
    return None if info is None else doc
