"""LangGraph's checkpointer on praisonsession stores: :class:`PraisonSaver`.

``graph = builder.compile(checkpointer=PraisonSaver("sqlite://graphs.db"))`` keeps every thread
as one of our sessions, ``(user_id, thread_id)``: ``Session(...)`` lists it, and ``praisonsession
show/export/fork/erase-user``, the browser, TTL (``default_ttl``), ``praisonsession purge``,
encryption at rest (``encryption_key``) and archives work on it as on any session. How a
thread is laid out in the session is ``langgraph_threads.py``; this module is LangGraph's
protocol (``BaseCheckpointSaver`` of langgraph 1.2) over it:

- ``thread_id`` is our ``session_id``. The user is the saver's ``user_id=``, else
  ``configurable["user_id"]``, else the default user. ``checkpoint_ns`` stays inside the
  thread's session, so deleting or listing a thread covers all its namespaces.
- ``put`` stores the checkpoint without its channel values, and only the values of the
  channels that changed (``new_versions``), each once; an unchanged value is never stored
  again. ``put_writes`` merges a task's writes into the checkpoint's pending writes.
- Every value goes through ``self.serde`` and is stored as the bytes it made (base64 text in
  our JSON records, zlib-compressed when that is smaller), so it comes back byte-equal; nothing
  here pickles.
- The optional capabilities of LangGraph's conformance suite: ``copy_thread`` (our fork),
  ``delete_for_runs``, ``prune`` (``keep_latest`` keeps what ``DeltaChannel`` rebuilds from) and
  ``get_delta_channel_history`` (ancestors read a page at a time).
- Both the async methods and the sync ones work anywhere: the sync ones run the same
  coroutines through praisonsession's runtime (on the caller's thread when it runs no event
  loop and the store allows it, else on the runtime's loop), inside Jupyter too.

Needs the ``langgraph`` extra; ``import praisonsession`` never imports LangGraph, and only this
module and ``langgraph_store.py`` do.
"""

from __future__ import annotations

import builtins
import random
import uuid
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Coroutine,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, TypeVar

from .._internal import runtime
from .._internal.checks import check_count, check_items
from .._internal.identifiers import DEFAULT_USER, check_session_id
from ..errors import InvalidIdError, InvalidValueError, MissingDependencyError, install_line
from ..settings import Settings
from ..stores import Key, SessionBase
from ..stores.backend import all_records
from ._adapter import SyncClose, checked_key, checked_user_id
from .langgraph_threads import Loaded, Threads, Write, is_thread, pack, unpack, what_of

try:
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        CheckpointTuple,
        get_checkpoint_metadata,
    )
except ImportError as missing:  # pragma: no cover - the extra is installed where this runs
    raise MissingDependencyError(
        "praisonsession.integrations.langgraph needs LangGraph: " + install_line("langgraph") + "."
    ) from missing

__all__ = ["STORE_PREFIX", "PraisonSaver"]

T = TypeVar("T")
#: A RunnableConfig, as LangGraph passes it: ``{"configurable": {"thread_id": ...}, ...}``.
Config = Mapping[str, Any]
#: The session ids of ``PraisonStore``'s namespaces start with it; no thread id may.
STORE_PREFIX = "langgraph-store"
_STRATEGIES = ("keep_latest", "delete")
_PAGE = 1000
_AT_ONCE = 100  # a list(limit=) up to this many is read in one call of the runtime, not by page
_KEYS_REMEMBERED = 1024  # (thread_id, user_id) pairs of configs checked, per saver
_NAMES = (type(None), str)


class _Where:
    """What a config addresses: the thread's key, the namespace, the checkpoint (or None)."""

    __slots__ = ("checkpoint_id", "key", "ns", "shown_user")

    def __init__(self, key: Key, ns: str, checkpoint_id: str | None, shown_user: bool) -> None:
        self.key = key
        self.ns = ns
        self.checkpoint_id = checkpoint_id
        self.shown_user = shown_user  # a user other than the default: returned configs name it


class PraisonSaver(SyncClose, BaseCheckpointSaver[str]):
    """LangGraph's ``BaseCheckpointSaver`` over a praisonsession store.

    ``store`` is what ``Session(store=...)`` takes: a URL (``memory://``, ``json:///dir``,
    ``sqlite://file.db``, ``redis://...``, ``postgresql://...``), a store instance, or None
    for the default store (SQLite under ``./.praisonsession/``). ``user_id`` binds the saver to
    one user (a config naming another is refused); unbound, each config's
    ``configurable["user_id"]`` is the user, else the default user. ``settings`` are
    praisonsession's (``Settings`` or a dict: ``default_ttl``, ``durability``,
    ``encryption_key``...); ``serde`` is LangGraph's serializer (its ``JsonPlusSerializer`` by
    default). Calls that name only a thread id (``delete_thread``, ``copy_thread``, ``prune``)
    act on the bound user's threads, or the default user's.
    """

    def __init__(
        self,
        store: SessionBase | str | None = None,
        *,
        user_id: str | None = None,
        settings: Settings | dict[str, Any] | None = None,
        serde: Any = None,
    ) -> None:
        super().__init__(serde=serde)
        self._user = None if user_id is None else checked_user_id(user_id)
        self._hold(store, settings)
        self._backend = self._store.backend
        self._threads = Threads(self._backend)
        self._keys: dict[tuple[str, str | None], Key] = {}

    @property
    def user_id(self) -> str | None:
        """The user this saver is bound to, or None (each config's, else the default user)."""
        return self._user

    def _repr_more(self) -> str:
        return f", user_id={self._user!r}"

    # -- plumbing -------------------------------------------------------------------------------

    async def _bounded(self, work: Coroutine[Any, Any, T], what: str) -> T:
        return await runtime.bounded(work, self._settings.timeout, what)

    def _where(self, config: Any, what: str) -> _Where:
        """The thread, namespace and checkpoint a config addresses, every part checked."""
        configurable = _configurable(config, what)
        thread_id, named = configurable.get("thread_id"), configurable.get("user_id")
        seen = (thread_id, named) if type(thread_id) is str and type(named) in _NAMES else None
        key = None if seen is None else self._keys.get(seen)
        if key is None:
            key = checked_key(_thread_id(thread_id), self._user_of(configurable))
            if seen is not None:  # checked once: the same ids give the same key
                if len(self._keys) >= _KEYS_REMEMBERED:
                    self._keys.clear()
                self._keys[seen] = key
        ns = configurable.get("checkpoint_ns") or ""
        if type(ns) is not str and not isinstance(ns, str):
            raise InvalidValueError(
                f"{what}: configurable['checkpoint_ns'] must be a str, got {ns!r}."
            )
        checkpoint_id = configurable.get("checkpoint_id") or None
        if type(checkpoint_id) not in _NAMES and not isinstance(checkpoint_id, str):
            raise InvalidValueError(
                f"{what}: configurable['checkpoint_id'] must be a str, got {checkpoint_id!r}."
            )
        return _Where(key, ns, checkpoint_id, key.user_id != DEFAULT_USER)

    def _user_of(self, configurable: Mapping[str, Any]) -> str:
        named = configurable.get("user_id")
        if self._user is not None:
            if named not in (None, "", self._user):
                raise InvalidIdError(
                    f"This PraisonSaver is bound to user {self._user!r}; the config names user "
                    f"{named!r}. Use a saver of that user (PraisonSaver(store, user_id=...)) or "
                    "an unbound one (user_id=None), which takes configurable['user_id']."
                )
            return self._user
        return DEFAULT_USER if named is None else checked_user_id(named, "configurable['user_id']")

    def _thread_key(self, thread_id: Any) -> Key:
        """A thread named by id alone: the bound user's, else the default user's."""
        return Key(self._user or DEFAULT_USER, _thread_id(thread_id))

    def _config(self, where: _Where, ns: str, checkpoint_id: str) -> dict[str, Any]:
        configurable = {
            "thread_id": where.key.session_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
        if where.shown_user:
            configurable["user_id"] = where.key.user_id
        return {"configurable": configurable}

    def _tuple(self, where: _Where, loaded: Loaded, metadata: Any = None) -> Any:
        """A ``CheckpointTuple`` of what was read: every value through ``self.serde``."""
        record = loaded.record
        loads = self.serde.loads_typed
        what = what_of(where.key, record)
        checkpoint = loads(unpack(record["checkpoint"], what))
        checkpoint["channel_versions"] = dict(record["versions"])
        checkpoint["channel_values"] = {
            channel: loads(blob) for channel, blob in loaded.values.items() if blob[0] != "empty"
        }
        if metadata is None:
            metadata = loads(unpack(record["metadata"], what))
        writes = loaded.writes
        if writes:
            writes = sorted(writes, key=_write_order)
        ns, parent = record["ns"], record.get("parent")
        return CheckpointTuple(  # config, checkpoint, metadata, parent_config, pending_writes
            self._config(where, ns, record["id"]),
            checkpoint,
            metadata,
            None if parent is None else self._config(where, ns, parent),
            [(write.task_id, write.channel, loads(write.value)) for write in writes],
        )

    async def _thread_keys(self) -> AsyncIterator[Key]:
        """Every thread this saver may list: the bound user's, else every user's."""
        if self._user is not None:
            for info in await all_records(self._backend, self._user):
                if is_thread(info):
                    yield Key(info.user_id, info.session_id)
            return
        after: tuple[str, str] | None = None
        while True:
            page = await self._backend.list_records_by_prefix("", limit=_PAGE, after=after)
            for info in page:
                if is_thread(info):
                    yield Key(info.user_id, info.session_id)
            if len(page) < _PAGE:
                return
            after = (page[-1].session_id, page[-1].user_id)

    def _shown(self, key: Key) -> _Where:
        return _Where(key, "", None, key.user_id != DEFAULT_USER)

    # -- the operations, once: the async methods await them, the sync ones run them ------------

    async def _get_tuple(self, config: Config) -> Any:
        where = self._where(config, "get_tuple")
        loaded = await self._threads.load(where.key, where.ns, where.checkpoint_id)
        return None if loaded is None else self._tuple(where, loaded)

    async def _list(
        self,
        config: Config | None,
        *,
        filter: dict[str, Any] | None = None,
        before: Config | None = None,
        limit: int | None = None,
    ) -> AsyncGenerator[builtins.list[Any], None]:
        """:meth:`alist`'s checkpoints a page at a time: one call of the runtime per page."""
        if filter is not None and not isinstance(filter, Mapping):
            raise InvalidValueError(f"list: filter must be a dict, got {filter!r}.")
        left = limit  # checked by list / alist, the two callers
        if left is not None and left <= 0:
            return
        before_id, before_ns = None, None
        if before is not None:
            configurable = _configurable(before, "list(before=...)")
            before_id = configurable.get("checkpoint_id")
            before_ns = configurable.get("checkpoint_ns")
        if config is None:
            keys: AsyncIterator[Key] = self._thread_keys()
            ns: str | None = None
            only: str | None = None
            where = None
        else:
            where = self._where(config, "list")
            ns = _configurable(config, "list").get("checkpoint_ns")
            only = where.checkpoint_id
            keys = _one(where.key)
        async for key in keys:
            shown = where or self._shown(key)
            if only is not None:
                found = await self._threads.load(key, ns or "", only)
                if found is not None and _matches(self._metadata(key, found.record), filter):
                    yield [self._tuple(shown, found)]
                return
            pages = self._threads.newest_first(
                key,
                ns,
                before_id,
                (ns or "") if before_ns is None else before_ns,
                _PAGE if left is None or filter else left,
            )
            async for page, documents, view in pages:
                chosen = []
                for at, record in page:
                    metadata = self._metadata(key, record)
                    if _matches(metadata, filter):
                        chosen.append((at, record, metadata))
                        if left is not None and len(chosen) >= left:
                            break
                if not chosen:
                    continue
                loaded = await self._threads.load_many(
                    key, [(at, r) for at, r, _ in chosen], documents, view
                )
                yield [
                    self._tuple(shown, found, metadata)
                    for found, (_, _, metadata) in zip(loaded, chosen, strict=True)
                ]
                if left is not None:
                    left -= len(chosen)
                    if left <= 0:
                        return

    def _metadata(self, key: Key, record: dict[str, Any]) -> Any:
        return self.serde.loads_typed(unpack(record["metadata"], what_of(key, record)))

    async def _put(
        self,
        config: Config,
        checkpoint: Any,
        metadata: Any,
        new_versions: Mapping[str, str | int | float],
    ) -> dict[str, Any]:
        where = self._where(config, "put")
        if (type(checkpoint) is not dict and not isinstance(checkpoint, Mapping)) or not isinstance(
            checkpoint.get("id"), str
        ):
            raise InvalidValueError(
                f"put takes a LangGraph Checkpoint (a dict with an id), got {checkpoint!r}."
            )
        if type(metadata) is not dict and not isinstance(metadata, Mapping):
            raise InvalidValueError(
                f"put takes the checkpoint's metadata as a dict (LangGraph's "
                f"CheckpointMetadata, e.g. {{'source': 'loop', 'step': 0}}), got {metadata!r}."
            )
        saved = dict(checkpoint)
        values = saved.pop("channel_values", None) or {}
        versions = _versions(saved.pop("channel_versions", None) or {}, "channel_versions")
        changed = _versions(new_versions, "new_versions")
        full_metadata = get_checkpoint_metadata(
            config if type(config) is dict else dict(config), metadata
        )
        dumps = self.serde.dumps_typed
        try:  # nothing is written before every value is serialized
            stored = {
                channel: dumps(values[channel]) if channel in values else ("empty", b"")
                for channel, version in changed.items()
                if versions.get(channel) == version  # a version the checkpoint does not hold
            }
            packed = pack(dumps(saved)), pack(dumps(full_metadata))
        except (TypeError, ValueError) as exc:
            raise _unserializable(
                "put", exc, dumps, {**values, "checkpoint": saved, "metadata": full_metadata}
            ) from exc
        record: dict[str, Any] = {
            "role": "checkpoint",
            "content": _summary(full_metadata, where.ns),
            "ns": where.ns,
            "id": checkpoint["id"],
            "parent": where.checkpoint_id,
            "versions": versions,
            "checkpoint": packed[0],
            "metadata": packed[1],
        }
        run_id = full_metadata.get("run_id")
        if isinstance(run_id, str) and run_id:
            record["run"] = run_id
        counters = full_metadata.get("counters_since_delta_snapshot")
        if counters and isinstance(counters, Mapping):
            record["delta"] = sorted(str(channel) for channel in counters)  # prune keeps them
        await self._threads.put(where.key, record, stored)
        return self._config(where, where.ns, checkpoint["id"])

    async def _put_writes(
        self,
        config: Config,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        where = self._where(config, "put_writes")
        if where.checkpoint_id is None:
            raise InvalidValueError(
                "put_writes: the config names no checkpoint (configurable['checkpoint_id']); "
                "pass the config put returned."
            )
        if not isinstance(task_id, str) or not isinstance(task_path, str):
            raise InvalidValueError(
                f"put_writes: task_id and task_path are str, got {task_id!r}, {task_path!r}."
            )
        pairs = _pairs(writes)
        dumps = self.serde.dumps_typed
        try:  # nothing is written before every value is serialized
            items = [
                Write(
                    task_id,
                    WRITES_IDX_MAP.get(_channel(channel), idx),  # a str checked first
                    channel,
                    dumps(value),
                    task_path,
                )
                for idx, (channel, value) in enumerate(pairs)
            ]
        except InvalidValueError:
            raise
        except (TypeError, ValueError) as exc:
            raise _unserializable("put_writes", exc, dumps, dict(pairs)) from exc
        if items:
            await self._threads.put_writes(where.key, where.ns, where.checkpoint_id, items)

    async def _delete_thread(self, thread_id: str) -> None:
        await self._threads.delete(self._thread_key(thread_id))

    async def _delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """A thread's documents say which runs it holds: one read per thread listed, and only
        the threads holding one of the runs are read whole and rewritten."""
        runs = _strings(run_ids, "delete_for_runs: run_ids")
        if not runs:
            return

        async def keeping(records: builtins.list[dict[str, Any]]) -> set[int]:
            return {at for at, record in enumerate(records) if record.get("run") not in runs}

        async for key in self._thread_keys():
            if await self._threads.has_runs(key, runs):
                await self._threads.keep(key, keeping)

    async def _copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source = self._thread_key(source_thread_id)
        target = self._thread_key(target_thread_id)
        await self._threads.copy(source, target)

    async def _prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy not in _STRATEGIES:
            raise InvalidValueError(
                f"prune: strategy must be one of {', '.join(_STRATEGIES)}; got {strategy!r}."
            )
        for thread_id in _strings(thread_ids, "prune: thread_ids"):
            key = self._thread_key(thread_id)
            if strategy == "delete":
                await self._threads.delete(key)
            else:
                await self._threads.keep_latest(key)

    async def _delta_history(self, config: Config, channels: Sequence[str]) -> dict[str, Any]:
        where = self._where(config, "get_delta_channel_history")
        wanted = _strings(channels, "get_delta_channel_history: channels")
        if not wanted:
            return {}
        found = await self._threads.history(where.key, where.ns, where.checkpoint_id, wanted)
        result: dict[str, Any] = {}
        for channel, history in found.items():
            entry: dict[str, Any] = {
                "writes": [
                    (w.task_id, w.channel, self.serde.loads_typed(w.value)) for w in history.writes
                ]
            }
            if history.seed is not None:
                entry["seed"] = self.serde.loads_typed(history.seed)
            result[channel] = entry
        return result

    # -- the protocol, async --------------------------------------------------------------------

    async def aget_tuple(self, config: Config) -> Any:
        """The checkpoint ``config`` names (its namespace's newest without a checkpoint_id),
        with its values and pending writes; None if there is none."""
        return await self._bounded(self._get_tuple(config), "get_tuple")

    async def alist(
        self,
        config: Config | None,
        *,
        filter: dict[str, Any] | None = None,
        before: Config | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[Any]:
        """Checkpoints newest first: of one thread (one namespace if the config names one, all
        of them otherwise), or of every thread for ``config=None``; only those whose metadata
        holds ``filter``, put before the checkpoint ``before`` names, at most ``limit``."""
        pages = self._list(config, filter=filter, before=before, limit=_limit(limit))
        if limit is not None and limit <= _AT_ONCE:
            for item in await self._bounded(_drained(pages), "list"):
                yield item
            return
        try:
            while True:
                try:
                    page = await self._bounded(_next(pages), "list")
                except StopAsyncIteration:
                    return
                for item in page:
                    yield item
        finally:
            await pages.aclose()

    async def aput(
        self,
        config: Config,
        checkpoint: Any,
        metadata: Any,
        new_versions: Mapping[str, str | int | float],
    ) -> dict[str, Any]:
        """Store a checkpoint, with the values of the channels in ``new_versions`` only: a
        value unchanged since an earlier checkpoint is stored once. The config of the stored
        checkpoint."""
        return await self._bounded(self._put(config, checkpoint, metadata, new_versions), "put")

    async def aput_writes(
        self,
        config: Config,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes for the checkpoint ``config`` names: a write of a
        (task, index) held already is kept, LangGraph's special channels replaced."""
        await self._bounded(self._put_writes(config, writes, task_id, task_path), "put_writes")

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete the thread: every checkpoint and write of every namespace (its session)."""
        await self._bounded(self._delete_thread(thread_id), "delete_thread")

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) of these runs, in every thread this saver
        may list; each thread is rewritten in one atomic step."""
        await self._bounded(self._delete_for_runs(run_ids), "delete_for_runs")

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread, every checkpoint and write of every namespace, onto a new thread:
        our fork (one atomic step; the copy records its parent). A missing source copies
        nothing; an existing target is refused with ``ConflictError``."""
        await self._bounded(self._copy_thread(source_thread_id, target_thread_id), "copy_thread")

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"keep_latest"``: keep each namespace's newest checkpoint (with its writes) and the
        ancestors its ``DeltaChannel`` values are rebuilt from; ``"delete"``: delete the
        threads."""
        await self._bounded(self._prune(thread_ids, strategy=strategy), "prune")

    async def aget_delta_channel_history(
        self, *, config: Config, channels: Sequence[str]
    ) -> dict[str, Any]:
        """For each channel, the writes along the ancestors of the checkpoint ``config``
        names, oldest first, and the value at the nearest ancestor storing one (``seed``)."""
        return await self._bounded(
            self._delta_history(config, channels), "get_delta_channel_history"
        )

    # -- the protocol, sync (the same coroutines, run by the runtime) ---------------------------

    def get_tuple(self, config: Config) -> Any:
        """:meth:`aget_tuple`, for synchronous code."""
        return self._run(self._get_tuple(config), "get_tuple")

    def list(
        self,
        config: Config | None,
        *,
        filter: dict[str, Any] | None = None,
        before: Config | None = None,
        limit: int | None = None,
    ) -> Iterator[Any]:
        """:meth:`alist`, for synchronous code: read a page at a time as it is iterated."""
        pages = self._list(config, filter=filter, before=before, limit=_limit(limit))
        if limit is not None and limit <= _AT_ONCE:
            yield from self._run(_drained(pages), "list")
            return
        try:
            while True:
                try:
                    page = self._run(_next(pages), "list")
                except StopAsyncIteration:
                    return
                yield from page
        finally:
            self._run(pages.aclose(), "list")

    def put(
        self,
        config: Config,
        checkpoint: Any,
        metadata: Any,
        new_versions: Mapping[str, str | int | float],
    ) -> dict[str, Any]:
        """:meth:`aput`, for synchronous code."""
        return self._run(self._put(config, checkpoint, metadata, new_versions), "put")

    def put_writes(
        self,
        config: Config,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`aput_writes`, for synchronous code."""
        self._run(self._put_writes(config, writes, task_id, task_path), "put_writes")

    def delete_thread(self, thread_id: str) -> None:
        """:meth:`adelete_thread`, for synchronous code."""
        self._run(self._delete_thread(thread_id), "delete_thread")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`adelete_for_runs`, for synchronous code."""
        self._run(self._delete_for_runs(run_ids), "delete_for_runs")

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """:meth:`acopy_thread`, for synchronous code."""
        self._run(self._copy_thread(source_thread_id, target_thread_id), "copy_thread")

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`aprune`, for synchronous code."""
        self._run(self._prune(thread_ids, strategy=strategy), "prune")

    def get_delta_channel_history(
        self, *, config: Config, channels: Sequence[str]
    ) -> dict[str, Any]:
        """:meth:`aget_delta_channel_history`, for synchronous code."""
        return self._run(
            self._delta_history(config, channels),
            "get_delta_channel_history",
        )

    def get_next_version(self, current: str | int | float | None, channel: Any = None) -> str:
        """A channel's next version: its number, then a random part, so that two branches of
        a thread (a run resumed from an earlier checkpoint) never name different values alike.
        The random part is ``random``'s, as LangGraph's own savers take it: no system call per
        version (``secrets`` reads ``os.urandom``), and a forked child reseeds it."""
        try:
            if current is None:
                number = 0
            elif type(current) is str:
                number = int(current.split(".", 1)[0])
            elif isinstance(current, (int, float)):
                number = int(current)
            else:
                number = int(str(current).split(".")[0])
        except (TypeError, ValueError, OverflowError):
            raise InvalidValueError(
                "get_next_version: a channel's version is None, a number or a str that starts "
                f"with one (as '0000000000000002.5f1c...'), got {current!r}."
            ) from None
        return f"{number + 1:016d}.{random.getrandbits(32):08x}"


# -- checks and small helpers ---------------------------------------------------------------


def _configurable(config: Any, what: str) -> Mapping[str, Any]:
    if type(config) is dict:  # the common case, without an ABC's isinstance
        configurable = config.get("configurable") or {}
        if type(configurable) is dict:
            return configurable
    if not isinstance(config, Mapping):
        raise InvalidValueError(
            f"{what} takes a config such as {{'configurable': {{'thread_id': 'chat-1'}}}}, "
            f"got {config!r}."
        )
    configurable = config.get("configurable") or {}
    if not isinstance(configurable, Mapping):
        raise InvalidValueError(f"{what}: config['configurable'] must be a dict.")
    return configurable


def _thread_id(thread_id: Any) -> str:
    """A thread id as our session id: a str, or an int or UUID written as one."""
    if isinstance(thread_id, uuid.UUID) or (
        isinstance(thread_id, int) and not isinstance(thread_id, bool)
    ):
        thread_id = str(thread_id)
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidIdError(
            "A LangGraph thread needs configurable['thread_id'] (a str, e.g. "
            f"{{'configurable': {{'thread_id': 'chat-1'}}}}); got {thread_id!r}."
        )
    if thread_id.startswith(STORE_PREFIX):
        raise InvalidIdError(
            f"Thread ids starting with {STORE_PREFIX!r} are PraisonStore's namespaces; "
            f"choose another thread id than {thread_id!r}."
        )
    return check_session_id(thread_id)


def _limit(limit: Any) -> int | None:
    return None if limit is None else check_count(limit, "list: limit", low=None, high=None)


def _pairs(writes: Any) -> Sequence[tuple[Any, Any]]:
    """``put_writes``' writes: (channel, value) pairs (any iterable of them, taken once)."""
    pairs = check_items(writes, "put_writes: writes", " of (channel, value) pairs")
    for write in pairs:
        sequence = type(write) is tuple or (
            isinstance(write, Sequence) and not isinstance(write, str | bytes)
        )
        if not sequence or len(write) != 2:
            raise InvalidValueError(
                f"put_writes takes writes as (channel, value) pairs; {write!r} is not one."
            )
    return pairs


def _unserializable(
    what: str, exc: Exception, dumps: Callable[[Any], Any], values: Mapping[str, Any]
) -> InvalidValueError:
    """The serde's refusal of a value, naming the channel (or part) whose value it was."""
    named = ""
    for name, value in values.items():
        try:
            dumps(value)
        except (TypeError, ValueError):
            named = f" {name!r}"
            break
    return InvalidValueError(
        f"{what}: the value of{named or ' a channel'} cannot be serialized by this saver's "
        f"serde ({type(exc).__name__}: {exc}); nothing was stored. Keep values LangGraph's "
        "serde can serialize, or give PraisonSaver a serde (serde=...) that can."
    )


def _channel(channel: Any) -> str:
    if not isinstance(channel, str):
        raise InvalidValueError(f"A write's channel is a str, got {channel!r}.")
    return channel


def _versions(versions: Any, what: str) -> dict[str, str | int | float]:
    """Channel versions as JSON can hold them: str keys, str / int / finite float values."""
    if type(versions) is not dict and not isinstance(versions, Mapping):
        raise InvalidValueError(f"{what} must be a dict of channel -> version, got {versions!r}.")
    checked: dict[str, str | int | float] = {}
    for channel, version in versions.items():
        if type(channel) is not str or type(version) not in _VERSIONS or version != version:
            _check_version(channel, version, what)  # the exact types above pass at once
        checked[channel] = version
    return checked


_VERSIONS = (str, int, float)


def _check_version(channel: Any, version: Any, what: str) -> None:
    if not isinstance(channel, str) or isinstance(version, bool):
        raise InvalidValueError(f"{what}: {channel!r}: {version!r} is not a channel version.")
    if not isinstance(version, (str, int, float)) or version != version:  # NaN
        raise InvalidValueError(f"{what}: {channel!r}: {version!r} is not a channel version.")


def _strings(values: Any, what: str) -> builtins.list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence | set | frozenset):
        raise InvalidValueError(f"{what} must be a list of str, got {values!r}.")
    found = builtins.list(values)
    for value in found:
        if not isinstance(value, str):
            raise InvalidValueError(f"{what} must be a list of str; {value!r} is not one.")
    return found


def _summary(metadata: Mapping[str, Any], ns: str) -> str:
    """What ``praisonsession show`` prints of a checkpoint: its source and step."""
    text = f"{metadata.get('source', 'checkpoint')} step {metadata.get('step', '?')}"
    return f"{text} in {ns}" if ns else text


def _write_order(write: Write) -> tuple[str, str, int]:
    """The order LangGraph applies a checkpoint's pending writes in."""
    return write.task_path, write.task_id, write.idx


def _matches(metadata: Any, wanted: Mapping[str, Any] | None) -> bool:
    if not wanted:
        return True
    return isinstance(metadata, Mapping) and all(
        metadata.get(name) == value for name, value in wanted.items()
    )


async def _one(key: Key) -> AsyncIterator[Key]:
    yield key


async def _drained(pages: AsyncGenerator[builtins.list[T], None]) -> builtins.list[T]:
    """Every item of every page, read in one coroutine (a short listing: one runtime call)."""
    found: builtins.list[T] = []
    try:
        async for page in pages:
            found.extend(page)
    finally:
        await pages.aclose()
    return found


async def _next(pages: AsyncIterator[T]) -> T:
    """The next item of an async iterator, as a coroutine (what the runtime runs)."""
    return await pages.__anext__()
