"""LangGraph's long-term store on praisonsession stores: :class:`PraisonStore`.

``builder.compile(checkpointer=PraisonSaver(url), store=PraisonStore(url))`` keeps what a graph's
nodes ``put`` in LangGraph's ``BaseStore`` as our sessions, scoped to users:

- A namespace's first label is the user it belongs to, as LangGraph's own examples write
  them (``(user_id, "memories")``). The namespace ``(user, *rest)`` is the session
  ``langgraph-store/<rest joined by />`` of that user (marked ``{"langgraph": "store"}``), so
  ``erase_user(user)`` erases every namespace of the user, ``praisonsession list --user``
  lists them, TTL, export, encryption and the browser work on them as on any session.
- An item is one key of that session's state: its value (JSON data), when it was created and
  updated, and its TTL (LangGraph's ``ttl=``, in minutes; an expired item is never returned,
  and ``sweep_ttl()`` removes them).
- Semantic search (``search(prefix, query=...)``) is our memory layer: each indexed item's
  text (the whole value, or the ``index`` fields) is a long-term memory of the user, added by
  the namespace's session, embedded offline (all-MiniLM-L6-v2, no API key) and searched with a
  filter on the namespace. Without the ``memory`` extra, or with ``index=False``, items are
  not indexed and a query is ignored, as in LangGraph's stores without an index.
- A whole namespace can be deleted (``delete_namespace``: LangGraph's stores cannot, #3917),
  with every namespace below it and their memories.

Needs the ``langgraph`` extra; only this module and ``langgraph.py`` import LangGraph.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TypeGuard, TypeVar

from .._internal import runtime
from .._internal.checks import check_count, check_items
from .._internal.json_data import detach
from ..clock import now
from ..errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    MissingDependencyError,
    PraisonSessionError,
    SessionExpiredError,
    SessionNotFoundError,
    install_line,
)
from ..session.core import AsyncSession
from ..settings import Settings
from ..stores import UNSET, Key, SessionBase, SessionInfo
from ..stores.backend import all_records
from ._adapter import SyncClose, checked_key
from .langgraph import STORE_PREFIX

try:
    from langgraph.store.base import (
        NOT_PROVIDED,
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        PutOp,
        SearchItem,
        SearchOp,
        get_text_at_path,
        tokenize_path,
    )
except ImportError as missing:  # pragma: no cover - the extra is installed where this runs
    raise MissingDependencyError(
        "praisonsession.integrations.langgraph_store needs LangGraph: "
        + install_line("langgraph")
        + "."
    ) from missing

__all__ = ["STORE_MARK", "NamespaceError", "PraisonStore"]

T = TypeVar("T")
#: An item found: its namespace, key, score (None: not searched by meaning) and stored form.
_Hit = tuple[tuple[str, ...], str, float | None, dict[str, Any]]
#: The metadata that marks a session as a namespace of a PraisonStore.
STORE_MARK = {"langgraph": "store"}
_SEARCH_MAX = 1000  # memories looked at for one query (the memory layer's limit)
_PAGE = 1000
_ATTEMPTS = 8  # times a put marks again a namespace removed under it, before it gives up
_MEMORY_FIELDS = ("lg_store", "lg_key", "lg_ns")
_UPDATED = ("updated_at",)  # where a stored item says when it was last put


class NamespaceError(InvalidIdError, InvalidNamespaceError):
    """A namespace that cannot be stored: LangGraph's ``InvalidNamespaceError`` and our
    ``InvalidIdError`` at once, so that either ``except`` catches it."""


class PraisonStore(SyncClose, BaseStore):
    """LangGraph's ``BaseStore`` over a praisonsession store, one session per namespace.

    ``store`` is what ``Session(store=...)`` takes (a URL, a store instance, or None for the
    default SQLite store); ``settings`` are praisonsession's (``Settings`` or a dict; where
    memory keeps its vectors is its ``data_dir`` or ``vector_store_url``). ``index``: None
    indexes each item's whole value for semantic search when the ``memory`` extra is
    installed, a list of paths (``["text", "tags[*]"]``, or ``{"fields": [...]}`` as LangGraph
    writes it) indexes those fields, and False indexes nothing. ``ttl`` is LangGraph's
    ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``).
    """

    supports_ttl = True

    def __init__(
        self,
        store: SessionBase | str | None = None,
        *,
        settings: Settings | dict[str, Any] | None = None,
        index: Any = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        self._hold(store, settings)
        self._backend = self._store.backend
        self._fields = _fields(index)
        self.ttl_config = None if ttl is None else dict(ttl)
        self._sessions: dict[Key, AsyncSession] = {}
        self._opened: set[Key] = set()

    # -- LangGraph's two entry points -----------------------------------------------------------

    def batch(self, ops: Iterable[Any]) -> list[Any]:
        """Run the operations in order; one result each (``abatch`` for synchronous code)."""
        work = _ops(ops)
        inline = self._inline and all(self._inline_op(op) for op in work)
        return runtime.run(self._batch(work), timeout=None, inline=inline)

    async def abatch(self, ops: Iterable[Any]) -> list[Any]:
        """Run the operations in order, on the caller's event loop; one result each."""
        return await self._batch(_ops(ops))

    def _inline_op(self, op: Any) -> bool:
        """Whether ``op`` may run on the caller's thread where the store allows it: memory
        (indexing, queries) runs on an event loop, so only an op that needs none of it."""
        if isinstance(op, PutOp):
            return not self._fields
        return not (isinstance(op, SearchOp) and op.query)

    async def _batch(self, ops: list[Any]) -> list[Any]:
        return [await self._op(op) for op in ops]

    def _op(self, op: Any) -> Coroutine[Any, Any, Any]:
        """One operation's work, bounded by the settings' timeout."""
        if isinstance(op, GetOp):
            work: Any = self._get(op)
        elif isinstance(op, PutOp):
            work = self._put(op)
        elif isinstance(op, SearchOp):
            work = self._search(op)
        elif isinstance(op, ListNamespacesOp):
            work = self._list_namespaces(op)
        else:
            raise InvalidValueError(
                f"PraisonStore runs GetOp, PutOp, SearchOp and ListNamespacesOp; got {op!r}."
            )
        return runtime.bounded(work, self._settings.timeout, type(op).__name__)

    # -- one operation: what a graph's nodes call, run as ``batch`` runs it, without the batch --

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``key`` of ``namespace``, or None (``refresh_ttl``: None restarts an
        item's TTL as ``ttl``'s ``refresh_on_read`` says, True by default)."""
        found: Item | None = self._one(GetOp(namespace, str(key), self._refreshes(refresh_ttl)))
        return found

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: Mapping[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
    ) -> None:
        """Store ``value`` at ``key`` of ``namespace`` (``index``: None the store's fields,
        False none, or a list of paths; ``ttl``: minutes, None for none, left out for
        ``ttl``'s ``default_ttl``)."""
        if ttl is NOT_PROVIDED:
            ttl = None if self.ttl_config is None else self.ttl_config.get("default_ttl")
        self._one(PutOp(namespace, str(key), value, index=index, ttl=ttl))

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Remove the item at ``key`` of ``namespace`` (nothing if there is none)."""
        self._one(PutOp(namespace, str(key), None, ttl=None))

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Items under ``namespace_prefix`` matching ``filter`` (and, with an index, nearest
        in meaning to ``query``), newest update first; ``limit`` of them after ``offset``."""
        op = SearchOp(namespace_prefix, filter, limit, offset, query, self._refreshes(refresh_ttl))
        found: list[SearchItem] = self._one(op)
        return found

    def _one(self, op: Any) -> Any:
        inline = self._inline and self._inline_op(op)
        return runtime.run(self._op(op), timeout=None, inline=inline)

    def _refreshes(self, refresh_ttl: bool | None) -> bool:
        """Whether a read restarts the TTLs of the items it returns."""
        if refresh_ttl is not None:
            return refresh_ttl
        return (
            True if self.ttl_config is None else bool(self.ttl_config.get("refresh_on_read", True))
        )

    # -- namespaces as sessions -----------------------------------------------------------------

    def _session(self, key: Key) -> AsyncSession:
        """The namespace's session, for its memories (one object per namespace)."""
        session = self._sessions.get(key)
        if session is None:
            if len(self._sessions) > 4096:
                self._sessions.clear()
            session = AsyncSession(
                key.session_id, key.user_id, store=self._store, settings=self._settings
            )
            self._sessions[key] = session
        return session

    async def _mark(self, key: Key) -> None:
        """Create the namespace's session with its mark, once per process while this process
        finds it there (a put that finds it gone, deleted anywhere, makes it again)."""
        if key not in self._opened:
            await self._backend.create_record(key, ttl=UNSET, metadata=dict(STORE_MARK))
            if len(self._opened) > 4096:
                self._opened.clear()
            self._opened.add(key)

    # -- operations -----------------------------------------------------------------------------

    async def _get(self, op: Any) -> Any:
        namespace, key = _item_place(op.namespace, "get")
        state = await self._backend.read_record_state(
            key, names=[_item_key(op.key)], must_exist=False
        )
        item = state.get(op.key)
        if not _live(item):
            return None
        if op.refresh_ttl and item.get("ttl") is not None:
            item = await self._refreshed(key, op.key, item)
            if item is None:
                return None
        return _as_item(Item, namespace, op.key, item)

    async def _refreshed(self, key: Key, name: str, item: dict[str, Any]) -> dict[str, Any] | None:
        """The item with its TTL restarted, as LangGraph's stores refresh it on a read: only
        its expiry moves. It is read again after the namespace's version and written back
        only at that version, so a refresh never puts back an item another writer changed or
        deleted since (nor makes again a namespace it removed); a namespace changed
        meanwhile is read again. None if the item is gone by then."""
        for _ in range(_ATTEMPTS):
            info = await self._backend.read_record(key)
            if info is None:  # removed meanwhile, with the item
                self._opened.discard(key)
                return None
            state = await self._backend.read_record_state(key, names=[name], must_exist=False)
            held = state.get(name)
            if not _live(held):
                return None
            if held.get("ttl") is None:
                return held  # put again without a TTL meanwhile: nothing to refresh
            fresh = {**held, "expires_at": now() + held["ttl"] * 60}
            try:
                await self._store.patch_state(
                    key.session_id,
                    key.user_id,
                    {name: fresh},
                    expected_version=info.version,
                    must_exist=True,
                )
            except (ConflictError, SessionNotFoundError, SessionExpiredError):
                await runtime.pause(0)
                continue
            return fresh
        return item  # the namespace kept changing: read, not refreshed

    async def _put(self, op: Any) -> None:
        namespace, key = _item_place(op.namespace, "put", writing=True)
        name = _item_key(op.key)
        # every part checked before anything changes: a refused put leaves the item as it was
        value = None if op.value is None else _value(op.value, name)
        ttl = _minutes(op.ttl)
        fields = self._fields if op.index is None else _fields(op.index)
        try:
            state = await self._backend.read_record_state(key, names=[name], must_exist=True)
        except (SessionNotFoundError, SessionExpiredError):
            # no namespace (never made, or deleted, by any process): the put makes it marked
            self._opened.discard(key)
            if value is None:
                return  # nothing to delete
            state = {}
        held = state.get(name)
        if held is not None and held.get("memories"):
            await self._forget_memories(key, held["memories"])
        if value is None:
            await self._delete_item(key, name)
            return
        at = now()
        item: dict[str, Any] = {
            "value": value,
            "created_at": held["created_at"] if _live(held) else at,
            "updated_at": at,
            "ttl": ttl,
            "expires_at": None if ttl is None else at + ttl * 60,
        }
        await self._mark(key)
        if fields:
            memories = await self._remember(key, namespace, name, value, fields)
            if memories:
                item["memories"] = memories
        await self._write_item(key, name, item)

    async def _write_item(self, key: Key, name: str, item: dict[str, Any]) -> None:
        """Write the item into its namespace's session, which must be there: one another
        writer emptied and removed since this put marked it is marked again first, so that
        no put makes a namespace that is never listed or searched."""
        for _ in range(_ATTEMPTS):
            try:  # the value was checked and copied by _value: to the backend as it is
                await self._backend.patch_record_state(
                    key,
                    updates={name: item},
                    deletes=[],
                    replace=False,
                    expected_version=None,
                    must_exist=True,
                )
                return
            except (SessionNotFoundError, SessionExpiredError):
                self._opened.discard(key)
                await self._mark(key)
        raise ConflictError(
            f"put: namespace {key.session_id!r} was removed by other writers each time it was "
            f"made again ({_ATTEMPTS} times); nothing was written. Try the put again."
        )

    async def _delete_item(self, key: Key, name: str) -> None:
        """Remove an item; a namespace left empty goes too, as LangGraph lists only the
        namespaces that hold items (unless an item was put meanwhile: it stays with it)."""
        if await self._backend.drop_record_state(key, names=[name]):
            self._opened.discard(key)

    async def _remember(
        self,
        key: Key,
        namespace: tuple[str, ...],
        name: str,
        value: dict[str, Any],
        fields: list[str],
    ) -> list[str]:
        """The item's texts at ``fields``, each a long-term memory of the user added by the
        namespace's session, found by ``search`` with the namespace in its metadata."""
        texts = [text for path in fields for text in get_text_at_path(value, path) if text.strip()]
        if not texts:
            return []
        metadata = {"lg_store": True, "lg_key": name, **_depths(namespace)}
        session = self._session(key)
        ids = await session.add_memories(texts, "long", dedupe=False, **metadata)
        return [str(memory_id) for memory_id in ids]

    async def _forget_memories(self, key: Key, memories: Sequence[str]) -> None:
        session = self._session(key)
        for memory_id in memories:
            await session.delete_memory(memory_id)

    async def _search(self, op: Any) -> list[Any]:
        prefix = _namespace(op.namespace_prefix, "search", empty=True)
        check_count(op.limit, "search: limit")
        check_count(op.offset, "search: offset")
        wanted = op.offset + op.limit
        if op.query and self._fields:
            found = await self._by_meaning(prefix, op.query, op.filter, wanted)
        else:
            found = await self._by_filter(prefix, op.filter, wanted)
        chosen = found[op.offset : wanted]
        if op.refresh_ttl:
            refreshed = []
            for namespace, name, score, item in chosen:
                kept: dict[str, Any] | None = item
                if item.get("ttl") is not None:
                    kept = await self._refreshed(_place(namespace), name, item)
                if kept is not None:  # else deleted meanwhile
                    refreshed.append((namespace, name, score, kept))
            chosen = refreshed
        return [
            _as_item(SearchItem, namespace, name, item, score)
            for namespace, name, score, item in chosen
        ]

    async def _by_filter(
        self, prefix: tuple[str, ...], wanted_filter: Any, wanted: int
    ) -> list[_Hit]:
        """Items under the prefix whose value matches the filter, newest update first."""
        matches = _matcher(wanted_filter)
        fields = _equalities(wanted_filter, ("value",))
        found: list[_Hit] = []
        for info in await self._namespaces_under(prefix):
            key = Key(info.user_id, info.session_id)
            found += await self._matching(key, _namespace_of(info), fields, matches, wanted)
        found.sort(key=lambda hit: (-hit[3]["updated_at"], hit[0], hit[1]))
        return found

    async def _matching(
        self,
        key: Key,
        namespace: tuple[str, ...],
        fields: list[tuple[tuple[str, ...], Any]],
        matches: Callable[[Any], bool],
        wanted: int,
    ) -> list[_Hit]:
        """A namespace's items that match, its ``wanted`` newest among them: the store
        narrows to what it can (fields equal, the newest updates) and each item it hands
        back is tested here. A store that cut to the newest hands back ``wanted`` items
        exactly; when the tests leave fewer of those, items it left out may match, and the
        namespace is read again, not cut (a store that did not cut is not asked twice)."""
        read = self._backend.read_record_state_matching
        state = await read(key, fields=fields, must_exist=False, newest=(_UPDATED, wanted))
        hits = _hits(namespace, state, matches)
        if len(hits) < wanted == sum(type(item) is dict for item in state.values()):
            hits = _hits(namespace, await read(key, fields=fields, must_exist=False), matches)
        return hits

    async def _by_meaning(
        self, prefix: tuple[str, ...], query: str, wanted_filter: Any, wanted: int
    ) -> list[_Hit]:
        """Items under the prefix closest in meaning to ``query``, best first: each item
        scored by its best memory, its value then filtered."""
        searched: dict[str, Key] = {}  # a namespace of each user: its session searches
        for info in await self._namespaces_under(prefix):
            searched.setdefault(info.user_id, Key(info.user_id, info.session_id))
        scored: dict[tuple[tuple[str, ...], str], float] = {}
        for user, via in sorted(searched.items()):
            where: dict[str, Any] = {"lg_store": True}
            if len(prefix) > 1:
                where = {"$and": [where, {f"lg_ns{len(prefix) - 1}": _joined(prefix[1:])}]}
            session = self._session(via)
            hits = await session.search_memory(
                query,
                "long",
                limit=min(_SEARCH_MAX, max(10, 4 * wanted)),
                where=where,
                prefer_recent=False,
            )
            for hit in hits:
                meta = hit["metadata"]
                namespace = (user, *_labels(meta.get("lg_ns", "")))
                slot = (namespace, str(meta.get("lg_key")))
                score = float(hit["score"] or 0.0)
                if score > scored.get(slot, -2.0):
                    scored[slot] = score
        matches = _matcher(wanted_filter)
        found: list[_Hit] = []
        by_namespace: dict[tuple[str, ...], list[str]] = {}
        for namespace, name in scored:
            by_namespace.setdefault(namespace, []).append(name)
        for namespace, names in by_namespace.items():
            state = await self._backend.read_record_state(
                _place(namespace), names=names, must_exist=False
            )
            for name in names:
                item = state.get(name)
                if _live(item) and matches(item["value"]):
                    found.append((namespace, name, scored[namespace, name], item))
        found.sort(key=lambda hit: -(hit[2] or 0.0))
        return found

    async def _list_namespaces(self, op: Any) -> list[tuple[str, ...]]:
        check_count(op.limit, "list_namespaces: limit")
        check_count(op.offset, "list_namespaces: offset")
        if op.max_depth is not None:
            check_count(op.max_depth, "list_namespaces: max_depth")
        conditions = list(op.match_conditions or ())
        for condition in conditions:
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidValueError(
                    f"list_namespaces: match_type is 'prefix' or 'suffix', got "
                    f"{condition.match_type!r}."
                )
            _namespace(tuple(condition.path), "list_namespaces", empty=True, wildcards=True)
        start: tuple[str, ...] = ()
        for condition in conditions:
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    start += (label,)
                break
        found = set()
        for info in await self._namespaces_under(start):
            namespace = _namespace_of(info)
            if all(_does_match(condition, namespace) for condition in conditions):
                found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(found)[op.offset : op.offset + op.limit]

    async def _namespaces_under(self, prefix: tuple[str, ...]) -> list[SessionInfo]:
        """The sessions of the namespaces that start with ``prefix`` (every user's for an
        empty prefix)."""
        backend = self._backend
        if prefix:
            key = _place(prefix)
            infos = [
                info
                for info in await all_records(backend, key.user_id)
                if _is_store(info)
                and (
                    info.session_id == key.session_id
                    or info.session_id.startswith(key.session_id + "/")
                )
            ]
            return infos
        found: list[SessionInfo] = []
        after: tuple[str, str] | None = None
        while True:
            page = await backend.list_records_by_prefix(STORE_PREFIX, limit=_PAGE, after=after)
            found += [info for info in page if _is_store(info)]
            if len(page) < _PAGE:
                return found
            after = (page[-1].session_id, page[-1].user_id)

    # -- beyond LangGraph's protocol --------------------------------------------------------------

    async def adelete_namespace(self, namespace: tuple[str, ...]) -> int:
        """Delete a namespace and every namespace below it: their items and memories. How
        many namespaces went (LangGraph's own stores cannot delete one, #3917)."""
        prefix = _namespace(tuple(namespace), "delete_namespace")
        gone = 0
        for info in await self._namespaces_under(prefix):
            key = Key(info.user_id, info.session_id)
            if self._fields:
                await self._session(key).clear_memory("long")
            gone += await self._backend.delete_record(key)
            self._opened.discard(key)
        return gone

    def delete_namespace(self, namespace: tuple[str, ...]) -> int:
        """:meth:`adelete_namespace`, for synchronous code."""
        return runtime.run(self.adelete_namespace(namespace))

    async def asweep_ttl(self) -> int:
        """Remove every expired item (and its memories) of every namespace; how many went."""
        gone = 0
        for info in await self._namespaces_under(()):
            key = Key(info.user_id, info.session_id)
            state = await self._backend.read_record_state(key, names=None, must_exist=False)
            for name, item in state.items():
                if isinstance(item, dict) and not _live(item):
                    if item.get("memories"):
                        await self._forget_memories(key, item["memories"])
                    await self._delete_item(key, name)
                    gone += 1
        return gone

    def sweep_ttl(self) -> int:
        """:meth:`asweep_ttl`, for synchronous code."""
        return runtime.run(self.asweep_ttl())


# -- namespaces, items and filters ----------------------------------------------------------


def _part(label: str) -> str:
    return label.replace("%", "%25").replace("/", "%2F")


def _label(part: str) -> str:
    return part.replace("%2F", "/").replace("%25", "%")


def _joined(labels: Sequence[str]) -> str:
    return "/".join(_part(label) for label in labels)


def _labels(joined: str) -> tuple[str, ...]:
    return tuple(_label(part) for part in joined.split("/")) if joined else ()


def _namespace(
    namespace: Any,
    what: str,
    *,
    writing: bool = False,
    empty: bool = False,
    wildcards: bool = False,
) -> tuple[str, ...]:
    """A namespace checked as LangGraph checks it (labels: non-empty text without ``.``), and
    as one we can store."""
    labels = _checked_labels(namespace, what, writing=writing, empty=empty)
    if labels and not (wildcards and labels[0] == "*"):
        _stored_at(labels, what)
    return labels


def _item_place(namespace: Any, what: str, writing: bool = False) -> tuple[tuple[str, ...], Key]:
    """An item's namespace, checked, and the session it is stored in (made once)."""
    labels = _checked_labels(namespace, what, writing=writing, empty=False)
    return labels, _stored_at(labels, what)


def _checked_labels(namespace: Any, what: str, *, writing: bool, empty: bool) -> tuple[str, ...]:
    if not isinstance(namespace, tuple):
        raise NamespaceError(f"{what}: a namespace is a tuple of str, got {namespace!r}.")
    if not namespace and not empty:
        raise NamespaceError(f"{what}: a namespace cannot be empty; e.g. ('alice', 'memories').")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise NamespaceError(
                f"{what}: namespace labels are non-empty str without '.'; got {label!r} in "
                f"{namespace!r}."
            )
    if writing and namespace[0] == "langgraph":
        raise NamespaceError(f'{what}: the root label of a namespace cannot be "langgraph".')
    return namespace


def _stored_at(namespace: tuple[str, ...], what: str) -> Key:
    """The session a namespace is stored as; ``NamespaceError`` for one it cannot be."""
    try:
        return _place(namespace)
    except PraisonSessionError as exc:
        raise NamespaceError(f"{what}: {namespace!r} cannot be stored: {exc}") from None


@functools.lru_cache(maxsize=4096)  # every op of a graph's node names its namespace again
def _place(namespace: tuple[str, ...]) -> Key:
    """The session of a namespace: its first label is the user, the rest names the session."""
    if not namespace:
        raise NamespaceError("A namespace needs at least its first label, the user.")
    rest = _joined(namespace[1:])
    return checked_key(f"{STORE_PREFIX}/{rest}" if rest else STORE_PREFIX, namespace[0])


def _namespace_of(info: SessionInfo) -> tuple[str, ...]:
    rest = info.session_id[len(STORE_PREFIX) + 1 :]
    return (info.user_id, *_labels(rest))


def _is_store(info: SessionInfo) -> bool:
    return info.metadata.get("langgraph") == STORE_MARK["langgraph"] and (
        info.session_id == STORE_PREFIX or info.session_id.startswith(STORE_PREFIX + "/")
    )


def _depths(namespace: tuple[str, ...]) -> dict[str, str]:
    """The namespace (below its user) and each of its prefixes, as memory metadata that a
    search filters on."""
    rest = namespace[1:]
    found = {"lg_ns": _joined(rest)}
    for depth in range(1, len(rest) + 1):
        found[f"lg_ns{depth}"] = _joined(rest[:depth])
    return found


def _item_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidIdError(f"An item key is a non-empty str, got {key!r}.")
    return key


def _ops(ops: Any) -> list[Any]:
    return check_items(ops, "batch: ops", " of GetOp, PutOp, SearchOp and ListNamespacesOp")


def _value(value: Any, name: str) -> dict[str, Any]:
    """An item's value: a dict of JSON data (what every LangGraph store can keep), copied."""
    if not isinstance(value, Mapping):
        raise InvalidValueError(f"put takes a dict as the value, got {value!r}.")
    copied: dict[str, Any] = detach(dict(value), f"the value of item {name!r}")
    return copied


def _minutes(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 <= ttl < 1e12:
        raise InvalidValueError(f"ttl is minutes (a number >= 0) or None, got {ttl!r}.")
    return float(ttl)


def _live(item: Any, at: float | None = None) -> TypeGuard[dict[str, Any]]:
    """Whether a stored item is one that has not expired (at ``at``, else now)."""
    if type(item) is not dict or "value" not in item:
        return False
    expires = item.get("expires_at")
    return expires is None or expires > (now() if at is None else at)


def _fields(index: Any) -> list[str]:
    """The paths an item is indexed at: ``["$"]`` (the whole value) by default when the
    memory extra is installed, none for False."""
    if index is False:
        return []
    if index is None or index is True:
        return ["$"] if importlib.util.find_spec("chromadb") is not None else []
    if isinstance(index, Mapping):
        index = index.get("fields") or ["$"]
    if isinstance(index, str) or not isinstance(index, Sequence):
        raise InvalidValueError(
            f"index is None, False, a list of paths or {{'fields': [...]}}; got {index!r}."
        )
    paths = list(index)
    for path in paths:
        if not isinstance(path, str):
            raise InvalidValueError(f"An index path is a str, got {path!r}.")
        tokenize_path(path)
    if importlib.util.find_spec("chromadb") is None:
        raise MissingDependencyError(
            "Semantic search needs the memory extra: " + install_line("memory") + "."
        )
    return paths


def _as_item(
    kind: Any,
    namespace: tuple[str, ...],
    name: str,
    item: dict[str, Any],
    score: float | None = None,
) -> Any:
    # tz passed by position: the keyword costs the C call its argument parsing, half its time
    created = datetime.fromtimestamp(item["created_at"], timezone.utc)
    updated = datetime.fromtimestamp(item["updated_at"], timezone.utc)
    if kind is SearchItem:
        return SearchItem(namespace, name, item["value"], created, updated, score)
    return Item(
        value=item["value"], key=name, namespace=namespace, created_at=created, updated_at=updated
    )


def _matcher(wanted: Any) -> Callable[[Any], bool]:
    """LangGraph's filter, checked once, as a test of an item's value: each field equal to
    the value given, or holding the comparisons given (``$eq``, ``$ne``, ``$gt``, ``$gte``,
    ``$lt``, ``$lte``); nested dicts field by field."""
    if not wanted:
        return _any_value
    if not isinstance(wanted, Mapping):
        raise InvalidValueError(f"search: filter is a dict, got {wanted!r}.")
    fields = list(wanted.items())

    def matches(value: Any) -> bool:
        if type(value) is not dict and not isinstance(value, Mapping):
            return False
        return all(_compare(value.get(name), expected) for name, expected in fields)

    return matches


def _hits(
    namespace: tuple[str, ...], state: dict[str, Any], matches: Callable[[Any], bool]
) -> list[_Hit]:
    """The live items of a namespace's state whose value ``matches``."""
    at = now()
    return [
        (namespace, name, None, item)
        for name, item in state.items()
        if _live(item, at) and matches(item["value"])
    ]


def _equalities(wanted: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """The fields a filter (checked by ``_matcher``) wants equal to a value, as paths into
    a stored item: what a store may narrow a namespace to before each item is tested."""
    found: list[tuple[tuple[str, ...], Any]] = []
    for name, expected in wanted.items() if isinstance(wanted, Mapping) else ():
        if not isinstance(name, str):
            continue
        if type(expected) in _SCALARS:
            found.append(((*path, name), expected))
        elif isinstance(expected, Mapping):
            if any(str(label).startswith("$") for label in expected):
                if "$eq" in expected and type(expected["$eq"]) in _SCALARS:
                    found.append(((*path, name), expected["$eq"]))
            else:
                found += _equalities(expected, (*path, name))
    return found


def _any_value(value: Any) -> bool:
    return True


def _compare(value: Any, expected: Any) -> bool:
    if type(expected) in _PLAIN:  # the common filter: a field equal to a value
        return bool(value == expected)
    if isinstance(expected, Mapping):
        if any(str(name).startswith("$") for name in expected):
            return all(_operator(value, name, operand) for name, operand in expected.items())
        return isinstance(value, Mapping) and all(
            _compare(value.get(name), inner) for name, inner in expected.items()
        )
    return bool(value == expected)


#: JSON values compared by equality alone (no Mapping check for them).
_PLAIN = frozenset({str, int, float, bool, type(None), list})
#: Those of them a store may narrow a search by (``_equalities``).
_SCALARS = frozenset({str, int, float, bool})


def _operator(value: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(value == operand)
    if name == "$ne":
        return bool(value != operand)
    if name not in ("$gt", "$gte", "$lt", "$lte"):
        raise InvalidValueError(
            f"search: unknown filter operator {name!r}; use $eq, $ne, $gt, $gte, $lt or $lte."
        )
    try:
        left, right = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {
        "$gt": left > right,
        "$gte": left >= right,
        "$lt": left < right,
        "$lte": left <= right,
    }[name]


def _does_match(condition: Any, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(wanted == "*" or label == wanted for label, wanted in pairs)
