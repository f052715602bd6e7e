"""``AsyncSession``: the core every other part stands on.

It is key-bound: one store, one (user_id, session_id), a TTL, and the session's memory,
knowledge and agents. Every operation is a coroutine that validates its arguments once,
runs within the session's ``timeout`` and returns plain data. Async code uses it directly
(``async with AsyncSession(...) as session``, on any event loop); the synchronous
:class:`~praisonsession.session.sync.Session` runs these same coroutines through the runtime; agents
and memory see it through narrow ports (``agents.host.AgentHost``, ``memory.short_term
.SessionLogs``). Constructing one does no I/O: the stored session is opened by the first
operation, by :meth:`AsyncSession.open`, or on entering ``async with``.

One module past 500 lines, on purpose: it is the public API, one short method per operation
of ``Session`` (which mirrors it), and a reader looks for them in one place: state, modules,
logs, memory, knowledge, agents, forks, snapshots, archives and lifecycle. What a fork or an
archive carries besides the store's copy (the session's memories) is in ``copies.py``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

from .. import tracing
from .._internal.checks import (
    MEMORY_QUERIES,
    MEMORY_TYPES,
    MemoryQuery,
    MemoryType,
    check_choice,
    check_count,
    check_flag,
    check_moment,
    check_seconds,
)
from .._internal.display import SnapshotList, TreeList
from .._internal.identifiers import DEFAULT_USER, check_session_id, check_user_id, new_session_id
from .._internal.json_data import JSONValue, check_json_data
from .._internal.runtime import bounded
from ..errors import InvalidValueError, MemoryNotFoundError, PraisonSessionError, RemoteModeError
from ..stores.api import UNSET, SessionBase, Unset
from ..stores.branches import Branches, SnapshotInfo, TreeNode, staged_memories
from ..stores.record import SessionInfo, check_ttl, now, record_key, resolve_info
from .copies import agent_cut, counting, unplace, vectors_may_hold
from .options import checked_config, inline_calls, resolve_settings, resolve_store

if TYPE_CHECKING:
    from concurrent.futures import Future

    from ..agents import Agent
    from ..agents.factory import AgentRegistry
    from ..archive import ArchiveSummary
    from ..recall.core import Recall
    from ..recall.knowledge.knowledge_base import KnowledgeAdded
    from ..recall.memory.lifecycle import MemoryId
    from ..remote.client import RemoteClient
    from ..settings import Settings
    from ..state.protocol import Stateful
    from .praisonai import AsyncKnowledgeView, AsyncMemoryView

__all__ = ["MEMORY_TYPES", "AsyncSession"]

T = TypeVar("T")


class AsyncSession:
    """A remembered session for async code: state, TTL, memory, knowledge and agents.

    The same constructor and operations as :class:`~praisonsession.Session`, as coroutines.
    ``AsyncSession()`` with no arguments works offline with zero setup (SQLite under
    ``./.praisonsession/``); ``store=`` takes a store instance or a URL (``memory://``,
    ``json:///dir``, ``sqlite://file.db``, ``redis://host:6379/0``,
    ``postgresql://user@host/db``); ``settings=`` a
    :class:`~praisonsession.settings.Settings` or a dict of its fields. ``timeout`` (seconds)
    bounds each operation (None: the settings' ``timeout``, 30 s unless set); when it runs out
    the operation raises ``OperationTimeoutError``.

    ``agent_url=`` makes it a remote session: the agent and the stored session live on a
    session server (``praisonsession serve``); ``chat`` talks to the agent, the state calls
    work through the server, and ``api_key=`` (or the ``remote_token`` setting) is the
    server's token. The connection is tested when the session opens.
    """

    def __init__(
        self,
        session_id: str | None = None,
        user_id: str | None = None,
        agent_url: str | None = None,
        memory_config: dict[str, Any] | None = None,
        knowledge_config: dict[str, Any] | None = None,
        timeout: float | None = None,
        session_ttl: float | None = None,
        *,
        store: SessionBase | str | None = None,
        settings: Settings | dict[str, Any] | None = None,
        api_key: str | None = None,
    ) -> None:
        self._session_id = new_session_id() if session_id is None else check_session_id(session_id)
        self._user_id = DEFAULT_USER if user_id is None else check_user_id(user_id)
        self._memory_config = checked_config("memory", memory_config)
        self._knowledge_config = checked_config("knowledge", knowledge_config)
        self._settings = resolve_settings(settings)
        if timeout is None:
            timeout = self._settings.timeout
        self._timeout = check_seconds(timeout, "timeout", positive=True)
        self._session_ttl = check_ttl(session_ttl)
        if self._settings.tracing and not tracing.on:  # a .env file or a settings argument
            tracing.enable(self._settings.tracing_content)
        self._remote: RemoteClient | None = None
        if agent_url is None:
            if api_key is not None:
                raise InvalidValueError(
                    "api_key= is the token of a session server; pass it with agent_url=... "
                    "(a local session needs none)."
                )
            self._owns_store = not isinstance(store, SessionBase)
            self._store = resolve_store(store, self._settings)
        else:
            if store is not None:
                raise InvalidValueError(
                    "Pass agent_url= or store=, not both: a remote session is stored in the "
                    "server's store (praisonsession serve --store URL)."
                )
            from ..remote.backend import RemoteBackend
            from ..remote.client import RemoteClient

            token = api_key if api_key is not None else self._settings.remote_token
            self._remote = RemoteClient(agent_url, token=token, timeout=timeout)
            self._owns_store = True
            self._store = SessionBase(RemoteBackend(self._remote))
        self._branches = Branches(self._store.backend)
        # read once: the sync shell asks on every call, and neither can change afterwards
        self._inline = inline_calls(self._store, self._settings)
        self._opened = False
        self._recall: Recall | None = None
        self._recall_opening: Future[Recall] | None = None
        self._opening_lock = threading.Lock()
        self._registry: AgentRegistry | None = None

    # -- identity -----------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self._session_id

    @property
    def user_id(self) -> str:
        """The user the session belongs to (``default_user`` when none was given)."""
        return self._user_id

    @property
    def agent_url(self) -> str | None:
        """The remote agent's URL (``http://`` added when it named no scheme), or None."""
        return None if self._remote is None else self._remote.url

    @property
    def is_remote(self) -> bool:
        """True for a session on a server (``agent_url=...``)."""
        return self._remote is not None

    @property
    def memory_config(self) -> dict[str, Any]:
        """The memory options this session was opened with."""
        return self._memory_config

    @property
    def knowledge_config(self) -> dict[str, Any]:
        """The knowledge options this session was opened with."""
        return self._knowledge_config

    @property
    def timeout(self) -> float:
        """Seconds each operation may take before it raises ``OperationTimeoutError``."""
        return self._timeout

    @property
    def session_ttl(self) -> float | None:
        """Seconds a session lives after its last use, or None for no expiry."""
        return self._session_ttl

    @property
    def settings(self) -> Settings:
        """The settings this session was resolved with (environment, ``.env``, arguments)."""
        return self._settings

    @property
    def store(self) -> SessionBase:
        """The store that keeps this session (a ``SessionBase``)."""
        return self._store

    @property
    def memory(self) -> AsyncMemoryView:
        """PraisonAI's ``session.memory``: ``await session.memory.search_long_term(...)``.

        On a remote session it raises RemoteModeError (a ValueError) at once, as PraisonAI's
        does: memory lives with the agent on the server."""
        from .praisonai import AsyncMemoryView

        self._local_only("session.memory")

        return AsyncMemoryView(self)

    @property
    def knowledge(self) -> AsyncKnowledgeView:
        """PraisonAI's ``session.knowledge``: ``await session.knowledge.search(...)``;
        RemoteModeError at once on a remote session."""
        from .praisonai import AsyncKnowledgeView

        self._local_only("session.knowledge")

        return AsyncKnowledgeView(self)

    # -- plumbing -------------------------------------------------------------------------

    @property
    def runs_inline(self) -> bool:
        """True when the sync facade drives store operations on the caller's thread (see
        ``praisonsession._internal.runtime``): the store allows it and the ``sync_calls`` setting is
        ``"inline"`` (the default); ``"loop"`` sends every one to the background loop."""
        return self._inline

    def _call(self, what: str, work: Awaitable[T]) -> Awaitable[T]:
        """An operation on the stored session: opened first if need be, within ``timeout``.

        Not a coroutine itself: an opened session hands back ``bounded(...)`` to be awaited,
        one coroutine fewer on every call (the hot path of a SQLite increment is ~20 us).
        """
        if tracing.on:
            work = tracing.session_call(what, self, work)
        if self._opened:
            return bounded(work, self._timeout, (what, self._session_id))
        return self._open_then(what, work)

    async def _open_then(self, what: str, work: Awaitable[T]) -> T:
        try:
            await self.open()
        except BaseException:
            if hasattr(work, "close"):
                work.close()  # never started: close it, so Python does not warn
            raise
        return await bounded(work, self._timeout, (what, self._session_id))

    def _sibling(self, session_id: str, user_id: str) -> AsyncSession:
        """Another session on the same store, with this one's settings (a fork, a parent)."""
        other = type(self)(
            session_id,
            user_id,
            None,
            self._memory_config or None,
            self._knowledge_config or None,
            self._timeout,
            store=self._store,
            settings=self._settings,
        )
        return other

    async def open(self) -> SessionInfo:
        """Create the stored session, or start it afresh if it expired, and refresh its TTL.

        Operations do this on first use; call it to do it now (``Session()`` does). A remote
        session tests the connection first (``GET <agent_url>/health``) and raises a
        ``RemoteError`` naming what to check if the server does not answer as one should.
        """
        if self._remote is not None:
            from ..remote.attempts import offload_request

            remote = self._remote
            await bounded(
                offload_request(remote.check_connection, patience=remote.timeout),
                self._timeout,
                f"connecting to the session server at {remote.shown_url}",
            )
            if not remote.keeps_sessions:  # PraisonAI's server: nothing stored to open
                self._opened = True
                return SessionInfo.new(self._user_id, self._session_id, None, {}, now())
        ttl = UNSET if self._session_ttl is None else self._session_ttl
        info = await bounded(
            self._store.create_session(self._session_id, self._user_id, ttl=ttl),
            self._timeout,
            f"opening session {self._session_id!r}",
        )
        self._opened = True
        return info

    # -- key-value state ------------------------------------------------------------------

    async def set_state(self, key: str, value: JSONValue) -> None:
        """Store one value (JSON data). Durable when it returns."""
        await self._call(
            "set_state",
            self._store.patch_state(self._session_id, self._user_id, {key: value}, must_exist=True),
        )

    async def get_state(self, key: str, default: JSONValue = None) -> JSONValue:
        """One value of the state, or ``default`` if the key is not set."""
        return await self._call(
            "get_state",
            self._store.get_value(self._session_id, self._user_id, key, default, must_exist=True),
        )

    async def increment_state(
        self, key: str, increment: int | float = 1, default: int | float = 0
    ) -> int | float:
        """Add to a number atomically, across threads and processes; returns the new value."""
        return await self._call(
            "increment_state",
            self._store.increment(
                self._session_id, self._user_id, key, increment, default, must_exist=True
            ),
        )

    async def save_state(self, state_data: dict[str, JSONValue]) -> None:
        """Merge ``state_data`` into the state, all keys in one atomic step."""
        if not isinstance(state_data, dict):
            raise InvalidValueError(f"save_state takes a dict, got {type(state_data).__name__}.")
        await self._call(
            "save_state",
            self._store.patch_state(self._session_id, self._user_id, state_data, must_exist=True),
        )

    async def restore_state(self) -> dict[str, JSONValue]:
        """The whole state as a dict (a copy: changing it changes nothing stored)."""
        return await self._call(
            "restore_state", self._store.get_state(self._session_id, self._user_id, must_exist=True)
        )

    async def delete_state(self, *keys: str) -> None:
        """Remove keys from the state (missing keys are ignored)."""
        await self._call(
            "delete_state",
            self._store.patch_state(
                self._session_id, self._user_id, delete=list(keys), must_exist=True
            ),
        )

    async def clear_state(self) -> None:
        """Remove every key of the state (message logs and modules stay)."""
        await self._call(
            "clear_state",
            self._store.patch_state(self._session_id, self._user_id, replace=True, must_exist=True),
        )

    # -- your own state modules -----------------------------------------------------------

    async def save_modules(self, **modules: Stateful) -> None:
        """Persist state modules with this session: ours, AgentScope's agents, memories and
        toolkits, or any object with ``state_dict()`` and ``load_state_dict()``.

        Message logs inside them are appended to, not rewritten, when only appended to.
        """
        await self._call(
            "save_modules",
            self._store.save_session_state(self._session_id, self._user_id, **modules),
        )

    async def load_modules(self, **modules: Stateful) -> None:
        """Load StateModules saved under the same names; names never saved are left as they are."""
        await self._call(
            "load_modules",
            self._store.load_session_state(
                self._session_id, self._user_id, allow_not_exist=True, **modules
            ),
        )

    async def refresh_modules(self, **modules: Stateful) -> int:
        """Take into the modules' message logs the messages other processes appended since they
        were saved or loaded here; returns how many came in."""
        return await self._call(
            "refresh_modules",
            self._store.refresh_session_state(self._session_id, self._user_id, **modules),
        )

    async def usage(self) -> dict[str, Any]:
        """Tokens the session's agents used, as their LLM reported them: ``{"session": totals,
        "agents": {name: totals}}``, totals holding ``turns``, ``requests``, ``summaries``,
        ``prompt_tokens``, ``completion_tokens`` and ``total_tokens``."""
        return await self._call("usage", self._usage())

    async def _usage(self) -> dict[str, Any]:
        from ..agents.usage import read_usage

        store = self._store
        contents = await store.backend.read_record_contents(
            record_key(self._session_id, self._user_id)
        )

        async def read(path: str) -> list[dict[str, Any]]:
            return await store.read_messages(self._session_id, self._user_id, path)

        return await read_usage(contents.logs if contents is not None else (), read)

    # -- message logs ---------------------------------------------------------------------

    async def append_messages(self, log: str, messages: Sequence[dict[str, Any]]) -> int:
        """Append messages to a named log of this session; returns its new length."""
        return await self._call(
            "append_messages",
            self._store.append_messages(self._session_id, self._user_id, log, messages),
        )

    async def read_messages(
        self, log: str, start: int = 0, stop: int | None = None
    ) -> list[dict[str, Any]]:
        """Messages ``start:stop`` of a named log ([] if it does not exist)."""
        return await self._call(
            "read_messages",
            self._store.read_messages(self._session_id, self._user_id, log, start, stop),
        )

    async def message_count(self, log: str) -> int:
        """How many messages a named log holds."""
        return await self._call(
            "message_count", self._store.message_count(self._session_id, self._user_id, log)
        )

    async def list_logs(self) -> dict[str, int]:
        """This session's message logs by name (``agent:Assistant.history``...), each with how
        many messages it holds: the names ``read_messages`` and ``fork(at_message=...)`` take."""
        return await self._call(
            "list_logs", self._branches.list_logs(self._session_id, self._user_id)
        )

    async def clear_messages(self, log: str) -> None:
        """Empty a named log."""
        await self._call(
            "clear_messages", self._store.clear_messages(self._session_id, self._user_id, log)
        )

    # -- memory and knowledge -------------------------------------------------------------

    async def _memory(self, *, embeds: bool = True) -> Recall:
        """Memory and knowledge, opened on first use (that is when chromadb is imported).

        Opening (Chroma, the model) runs once, in a thread of its own that finishes even if
        the first caller's timeout runs out, so a later call finds it ready. The model starts
        loading meanwhile only if the first caller ``embeds``: an agent's ``get_context``
        with nothing stored never needs it.
        """
        if self._recall is not None:
            return self._recall
        import asyncio

        vault = await self._vault_key()
        with self._opening_lock:
            if self._recall_opening is None:
                self._recall_opening = _in_thread(
                    "praisonsession-memory-open",
                    lambda: self._open_recall(vault, preload=embeds),
                )
            opening = self._recall_opening
        try:
            # shielded: a caller's timeout ends its wait, never the opening others wait for
            recall = await asyncio.shield(asyncio.wrap_future(opening))
        except Exception:
            with self._opening_lock:
                if self._recall_opening is opening:
                    self._recall_opening = None  # the next call tries again
            raise
        await self._adopt_staged(recall)
        self._recall = recall
        return recall

    async def _adopt_staged(self, recall: Recall) -> None:
        """A fork whose process was killed after its copy, before it adopted the memories it
        staged (``fork``), adopts them now: before anything of its memory is read."""
        if self._remote is not None:
            return
        info = await self._store.get_info(self._session_id, self._user_id)
        attempt = None if info is None else staged_memories(info)
        if attempt is not None:
            await recall.adopt_memories(attempt)

    def _open_recall(self, vault: bytes | None = None, *, preload: bool = True) -> Recall:
        from ..recall.core import Recall

        return Recall(
            self,
            self._session_id,
            self._user_id,
            self._settings,
            self._memory_config,
            self._knowledge_config,
            vault_key=vault,
            preload=preload,
            backend=None if self._remote is not None else self._store.backend,
        )

    async def _vault_key(self) -> bytes | None:
        """On a Chroma server, the user's key that its entries are sealed with: the server
        keeps deleted bytes, and ``erase_user`` destroys the key (see ``vectors/vault.py``).
        None elsewhere: embedded Chroma and PostgreSQL are scrubbed by ``erase_user``."""
        server = (
            self._memory_config.get("vector_store_url")
            or self._knowledge_config.get("vector_store_url")
            or self._settings.vector_store_url
        )
        if not server or self._remote is not None:
            return None
        from ..recall.vectors.pgvector import is_postgres_url

        if is_postgres_url(server) or server == "embedded":  # erasure rewrites their files
            return None
        from ..recall.vectors.vault_keys import vault_key

        return await vault_key(self._store.backend, self._user_id)

    async def _memories(self) -> list[dict[str, Any]]:
        """The long-term memories this session added: what a fork or an archive carries."""
        if self._recall is None and not await vectors_may_hold(
            self._settings, self._memory_config, self._store.backend
        ):
            return []
        return await (await self._memory()).session_memories()

    async def _recalling(
        self, what: str, use: Callable[[Recall], Awaitable[T]], *, embeds: bool = True
    ) -> T:
        """A memory or knowledge operation, opening included, within ``timeout``."""

        return await self._call(what, self._using(use, embeds=embeds))

    async def _using(self, use: Callable[[Recall], Awaitable[T]], *, embeds: bool = True) -> T:
        """``use`` on the session's memory and knowledge, opened first. A collection found
        gone (``erase_user``, here or in another process) raises what a state call raises
        when the session is gone too, never the vector store's own error, and never makes
        the collection again (a write after the erasure). A session that lives again (made
        anew since) opens its memory afresh, once."""
        for retry in (False, True):
            recall = await self._memory(embeds=embeds)
            try:
                return await use(recall)
            except Exception as exc:
                from ..recall.vectors import collection_gone

                if retry or self._remote is not None or not collection_gone(exc):
                    raise
                await self._check_live()
                with self._opening_lock:
                    if self._recall is recall:
                        self._recall = self._recall_opening = None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _check_live(self) -> None:
        """Raise ``SessionNotFoundError`` (``SessionExpiredError``) when the session is gone."""
        info = await self._store.get_info(self._session_id, self._user_id)
        try:
            resolve_info(info, self._user_id, self._session_id, now(), must_exist=True)
        except PraisonSessionError as exc:
            raise exc from None

    async def add_memory(
        self,
        text: str,
        memory_type: MemoryType = "long",
        *,
        dedupe: bool = True,
        said_at: Any = None,
        **metadata: JSONValue,
    ) -> MemoryId:
        """Remember ``text``; returns its id (a str whose ``event`` says what happened).

        ``"long"`` memories belong to the user and are found from any of their sessions;
        ``"short"`` ones are this session's notes, kept (and expiring) with the session.
        The same text again returns the existing id (``event == "NONE"``); a true repeat in
        other words updates that memory to the new wording (``"UPDATE"``); ``dedupe=False``
        always adds. ``said_at`` is when it was said (a datetime, an ISO string or seconds
        since the epoch; now when omitted): results and ``get_context`` show it.
        """
        self._local_only("add_memory()")
        text = _check_text(text, "text")
        memory_type = check_choice(memory_type, MEMORY_TYPES, "memory_type")
        dedupe = check_flag(dedupe, "dedupe")
        said = None if said_at is None else [check_moment(said_at, "said_at")]
        return await self._recalling(
            "add_memory",
            lambda recall: recall.add_memory(text, memory_type, metadata, dedupe, said),
        )

    async def add_memories(
        self,
        texts: Sequence[str],
        memory_type: MemoryType = "long",
        *,
        dedupe: bool = True,
        said_at: Any = None,
        **metadata: JSONValue,
    ) -> list[MemoryId]:
        """Remember many texts at once (the same metadata for each); their ids, in order.

        Embedded and stored in batches, several times faster than one ``add_memory`` each;
        a long list shows a progress bar. Not bounded by ``timeout`` as a whole. Repeats,
        within the list or of memories held, are not stored twice. ``said_at`` is one time
        for all (as for ``add_memory``) or a list of one per text.
        """
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
            raise InvalidValueError(
                f"add_memories takes a list of texts, got {type(texts).__name__}; "
                "for one text use add_memory."
            )
        texts = [_check_text(text, f"texts[{i}]") for i, text in enumerate(texts)]
        memory_type = check_choice(memory_type, MEMORY_TYPES, "memory_type")
        dedupe = check_flag(dedupe, "dedupe")
        said = _check_said(said_at, len(texts))
        if not texts:
            return []
        if not self._opened:
            await self.open()
        await bounded(self._memory(), self._timeout, "opening memory")
        return await self._using(
            lambda recall: recall.add_memories(texts, memory_type, metadata, dedupe, said)
        )

    async def search_memory(
        self,
        query: str,
        memory_type: MemoryQuery = "long",
        limit: int = 5,
        *,
        where: dict[str, Any] | None = None,
        prefer_recent: bool | None = None,
    ) -> list[dict[str, Any]]:
        """Memories closest in meaning to ``query``: dicts with id, text, score and metadata.

        ``memory_type`` is ``"long"``, ``"short"`` or ``"all"`` (both, best first). ``where``
        filters on metadata and on ``created_at``/``updated_at`` (``{"topic": "food"}``,
        ``{"stars": {"$gte": 4}}``, ``$in``, ``$and``, ``$or``...). ``prefer_recent`` (default
        ``memory_config["prefer_recent"]``, True) puts newer memories first among close matches.
        """
        self._local_only("search_memory()")
        query = _check_text(query, "query")
        memory_type = check_choice(memory_type, MEMORY_QUERIES, "memory_type")
        limit = _check_limit(limit)
        checked = _check_where(where)
        if prefer_recent is not None:
            prefer_recent = check_flag(prefer_recent, "prefer_recent")
        return await self._recalling(
            "search_memory",
            lambda recall: recall.search_memory(query, memory_type, limit, checked, prefer_recent),
        )

    async def list_memories(
        self,
        memory_type: str = "all",
        *,
        where: dict[str, Any] | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> list[dict[str, Any]]:
        """Memories oldest first (short notes, then long-term), ``limit`` at a time: pass the
        last id of a page as ``after`` for the next. ``where`` as in ``search_memory``."""
        self._local_only("list_memories()")
        memory_type = check_choice(memory_type, MEMORY_QUERIES, "memory_type")
        limit = _check_limit(limit)
        checked = _check_where(where)
        if after is not None:
            after = _check_text(after, "after")
        return await self._recalling(
            "list_memories",
            lambda recall: recall.list_memories(memory_type, checked, limit, after),
        )

    async def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        """The memory with this id (as ``search_memory`` shows it, score None), or None."""
        self._local_only("get_memory()")
        memory_id = _check_text(memory_id, "memory_id")
        return await self._recalling("get_memory", lambda recall: recall.get_memory(memory_id))

    async def update_memory(
        self, memory_id: str, text: str | None = None, **metadata: JSONValue
    ) -> dict[str, Any]:
        """Change a memory's text and/or metadata (merged into what it has); the memory as it
        is now. The change is recorded in ``memory_history``. ``MemoryNotFoundError`` if no
        memory has this id."""
        self._local_only("update_memory()")
        memory_id = _check_text(memory_id, "memory_id")
        if text is not None:
            text = _check_text(text, "text")
        check_json_data(metadata, "memory metadata")
        found = await self._recalling(
            "update_memory", lambda recall: recall.update_memory(memory_id, text, metadata)
        )
        if found is None:
            raise MemoryNotFoundError(
                f"No memory has the id {memory_id!r} here: it was never added, or was deleted. "
                "list_memories() shows the ids there are."
            )
        return found

    async def delete_memory(self, memory_id: str) -> bool:
        """Forget one memory; True if it was there. Recorded in ``memory_history``."""
        self._local_only("delete_memory()")
        memory_id = _check_text(memory_id, "memory_id")
        return await self._recalling(
            "delete_memory", lambda recall: recall.delete_memory(memory_id)
        )

    async def memory_history(self, memory_id: str) -> list[dict[str, Any]]:
        """Every change to a memory, oldest first: dicts with ``event`` (``"ADD"``,
        ``"UPDATE"``, ``"DELETE"``), ``text``, ``previous`` and ``at`` (seconds since the epoch)."""
        self._local_only("memory_history()")
        memory_id = _check_text(memory_id, "memory_id")
        return await self._recalling(
            "memory_history", lambda recall: recall.memory_history(memory_id)
        )

    async def clear_memory(self, memory_type: MemoryQuery = "all") -> int:
        """Forget this session's memories of a type (``"short"``, ``"long"`` or ``"all"``).

        Long-term memories other sessions of the user added are kept. Returns how many went.
        """
        self._local_only("clear_memory()")
        memory_type = check_choice(memory_type, MEMORY_QUERIES, "memory_type")
        return await self._recalling(
            "clear_memory", lambda recall: recall.clear_memory(memory_type)
        )

    async def add_knowledge(self, source: str | os.PathLike[str]) -> KnowledgeAdded:
        """Add a file (txt, md, html, pdf), a folder, a URL or raw text to the knowledge base.

        Content already held is skipped; long additions show a progress bar. Not bounded by
        ``timeout`` as a whole (a large folder takes minutes); each URL fetch is.
        """
        self._local_only("add_knowledge()")
        if isinstance(source, os.PathLike):
            source = Path(source)
        if not self._opened:
            await self.open()
        return await self._using(lambda recall: recall.add_knowledge(source))

    async def search_knowledge(
        self, query: str, limit: int = 5, *, where: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Knowledge chunks closest to ``query``: dicts with id, text, score, metadata, source.

        ``where`` filters on ``source``, ``kind``, ``chunk`` and ``created_at``, in the form
        ``search_memory`` takes."""
        self._local_only("search_knowledge()")
        query = _check_text(query, "query")
        limit = _check_limit(limit)
        checked = _check_where(where)
        return await self._recalling(
            "search_knowledge", lambda recall: recall.search_knowledge(query, limit, checked)
        )

    async def get_context(self, query: str, max_items: int = 3) -> str:
        """Prompt context for ``query``: this session's notes, long-term memory and knowledge,
        labelled by section, within ``memory_config["context_chars"]`` (4000) characters."""
        self._local_only("get_context()")
        query = _check_text(query, "query")
        max_items = _check_limit(max_items)
        return await self._recalling(
            "get_context", lambda recall: recall.get_context(query, max_items), embeds=False
        )

    async def index_turns(self, log: str, before: int) -> int:
        """Embed the turns of ``log`` before message ``before`` for :meth:`recall_turns`
        (batched; each turn once); how many turns are indexed."""
        self._local_only("index_turns()")
        log, before = _check_text(log, "log"), check_count(before, "before")
        return await self._recalling("index_turns", lambda recall: recall.index_turns(log, before))

    async def recall_turns(
        self, log: str, query: str, before: int, limit: int = 4
    ) -> list[tuple[int, list[dict[str, Any]]]]:
        """The turns of ``log`` before message ``before`` most related to ``query``, oldest
        first, as ``(index of the turn's first message, its messages)``: what an agent puts
        back into its request from the part of its history that left the window."""
        self._local_only("recall_turns()")
        log, query = _check_text(log, "log"), _check_text(query, "query")
        before, limit = check_count(before, "before"), check_count(limit, "limit", high=1000)
        return await self._recalling(
            "recall_turns", lambda recall: recall.recall_turns(log, query, before, limit)
        )

    # -- agents ---------------------------------------------------------------------------

    async def Agent(self, *args: Any, **options: Any) -> Agent:
        """An agent whose conversation is kept in this session and restored when it is reopened.

        Takes what an :class:`~praisonsession.agents.spec.AgentSpec` takes (PraisonAI's
        ``name, role, instructions, tools, memory, knowledge, llm``, and more by keyword), or a
        spec. Asking again for the same name returns the same live agent. Chat
        with ``await agent.achat(...)`` (or ``agent.chat(...)`` from synchronous code).
        """
        if self._remote is not None:
            raise RemoteModeError(
                "session.Agent(...) is not available on a remote session: the agent runs on "
                f"the session server at {self._remote.shown_url}. Chat with it through the "
                "session: session.chat(message)."
            )
        from ..agents.factory import AgentRegistry, create_agent
        from ..agents.spec import AgentSpec

        spec = AgentSpec.of(*args, **options)
        if self._registry is None:
            self._registry = AgentRegistry()
        return await create_agent(self, self._registry, spec)

    create_agent = Agent

    # -- forks, snapshots and archives ----------------------------------------------------

    async def fork(
        self,
        new_session_id: str | None = None,
        *,
        at_message: tuple[Any, int] | None = None,
        user_id: str | None = None,
    ) -> AsyncSession:
        """A copy of this session (state, modules, message logs, and the long-term memories
        it added) under a new id; it records this one as its parent.

        All or nothing, a killed process included. The memories, which live in the vector
        store, are copied first, staged: out of every session's sight. Then the session is
        copied in one atomic step, its record naming the staged copy, which the fork adopts
        at once (or, after a crash, when it next opens its memory). So a fork is never seen
        without its memories, and copies no fork was made for are seen by nobody: a later
        fork to that id removes them, as does ``erase_user``.

        ``at_message=(log, n)`` keeps only the first ``n`` messages of one log (an agent's log
        is ``agent.log_name``; an Agent itself is taken too). ``user_id`` forks into another
        user's sessions: a guest's conversation moved to the account they signed in with.
        Writing to either afterwards never changes the other.
        """
        from .._internal.identifiers import new_session_id as fresh_id

        target = record_key(
            fresh_id() if new_session_id is None else new_session_id,
            self._user_id if user_id is None else user_id,
        )  # checked before any copy is made
        child = self._sibling(target.session_id, target.user_id)
        memories = await self._memories()
        attempt = secrets.token_hex(8) if memories else None
        recall = await child._memory() if attempt is not None else None
        try:
            if recall is not None:
                await recall.restore_memories(memories, attempt)
            await self._call(
                "fork",
                self._branches.fork(
                    self._session_id,
                    self._user_id,
                    target.session_id,
                    target.user_id,
                    at_message=agent_cut(at_message),
                    memories=attempt,
                ),
            )
        except BaseException:
            if recall is not None and attempt is not None:  # no fork: none of its copies stay
                with contextlib.suppress(Exception):  # else out of sight, removed later
                    await recall.unstage_memories(attempt)
            raise
        child._opened = True
        if recall is not None and attempt is not None:
            try:
                await recall.adopt_memories(attempt)
            except Exception as exc:  # the fork is made: its next opening of memory adopts them
                child._recall = None
                logging.getLogger("praisonsession").warning(
                    "Session %r was forked; its memories are adopted when it next opens its "
                    "memory (the vector store failed now: %s).",
                    target.session_id,
                    exc,
                )
        return child

    @property
    def parent(self) -> Coroutine[Any, Any, AsyncSession | None]:
        """The session this one was forked from, as a session object, or None: ``await
        session.parent`` here (``session.parent`` on the synchronous ``Session``)."""
        return self._parent()

    async def _parent(self) -> AsyncSession | None:
        found = await self._call(
            "parent", self._branches.parent_of(self._session_id, self._user_id)
        )
        if found is None:
            return None
        parent = self._sibling(*found)
        if await self._store.get_info(*found) is None:
            return None  # it was deleted or has expired
        parent._opened = True
        return parent

    async def children(self) -> list[SessionInfo]:
        """This user's live sessions forked from this one."""
        return await self._call(
            "children", self._branches.children_of(self._session_id, self._user_id)
        )

    async def tree(self) -> list[TreeNode]:
        """This user's sessions as a forest: each under the one it was forked from."""
        return TreeList(await self._call("tree", self._branches.tree(self._user_id)))

    async def snapshot(self, label: str | None = None) -> SnapshotInfo:
        """Keep a copy of the session as it is now (content, not a pointer into it), to come
        back to with ``restore``; later edits and truncations leave it whole."""
        return await self._call(
            "snapshot", self._branches.snapshot(self._session_id, self._user_id, label)
        )

    async def snapshots(self) -> list[SnapshotInfo]:
        """This session's snapshots, oldest first."""
        return SnapshotList(
            await self._call("snapshots", self._branches.snapshots(self._session_id, self._user_id))
        )

    async def restore(self, snapshot: SnapshotInfo | str) -> SessionInfo:
        """Put the session back as the snapshot holds it, in one atomic step."""
        return await self._call(
            "restore",
            self._branches.restore(self._session_id, self._user_id, snapshot),
        )

    async def delete_snapshot(self, snapshot: SnapshotInfo | str) -> bool:
        """Delete one snapshot of this session; True if it was there."""
        return await self._call(
            "delete_snapshot",
            self._branches.delete_snapshot(self._session_id, self._user_id, snapshot),
        )

    async def export(
        self, path_or_file: str | os.PathLike[str] | IO[bytes], *, progress: bool = False
    ) -> ArchiveSummary:
        """Write the session to one portable, versioned file (JSON Lines): its metadata,
        state, modules, message logs, snapshots and long-term memories. Streams page by page;
        ``progress=True`` shows a bar. Not bounded by ``timeout`` as a whole."""
        from ..archive import export_session

        if not self._opened:
            await self.open()
        key = record_key(self._session_id, self._user_id)
        memories = await self._memories()
        with counting(progress, "Exporting") as tell:
            return await export_session(self._store.backend, key, path_or_file, memories, tell)

    @classmethod
    async def import_archive(
        cls,
        path: str | os.PathLike[str] | IO[bytes],
        store: SessionBase | str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        *,
        settings: Settings | dict[str, Any] | None = None,
        progress: bool = False,
    ) -> Any:
        """Read an archive written by ``export`` into ``store`` (any backend), as
        ``session_id`` of ``user_id`` (by default, as archived), and return the session.

        The whole file is checked first: a corrupt one, or one from a newer version of this
        library, imports nothing. Importing onto a session that exists is refused.
        """
        from ..archive import import_session
        from ..recall.memory.long_term import check_metadata

        resolved = resolve_settings(settings)
        target = resolve_store(store, resolved)

        with counting(progress, "Importing") as tell:
            info, memories, _ = await import_session(
                target.backend, path, session_id, user_id, tell, check_metadata
            )
        imported = cls(info.session_id, info.user_id, store=target, settings=resolved)
        imported._owns_store = not isinstance(store, SessionBase)  # it opened the store
        imported._opened = True
        if memories:
            try:
                recall = await imported._memory()
                await recall.restore_memories(memories)
            except BaseException:  # all or nothing: no import without its memories
                await unplace(target.backend, info)
                raise
        return imported

    # -- remote ---------------------------------------------------------------------------

    async def chat(self, message: str, **kwargs: JSONValue) -> str:
        """Send ``message`` to the remote agent and return its reply (remote sessions).

        The server keeps the conversation of this (user_id, session_id); extra keyword
        arguments go into the request body, as in PraisonAI. A turn the connection lost is
        retried and applied once (the server honours an idempotency key).
        """
        if self._remote is None:
            raise RemoteModeError(
                "chat() is for remote sessions: Session(agent_url='http://host:8000/agent'). "
                "To chat locally, create an agent in this session and chat with it: "
                "agent = session.Agent(name='Assistant', llm=...); agent.chat(message)."
            )
        if not isinstance(message, str):
            raise InvalidValueError(f"chat takes a str, got {type(message).__name__}.")
        reserved = sorted({"query", "session_id", "user_id"}.intersection(kwargs))
        if reserved:
            raise InvalidValueError(
                f"chat() got {reserved} as keyword arguments; the session sets them. Open "
                "another Session(...) to talk in another session."
            )
        check_json_data(kwargs, "chat keyword arguments")
        from ..remote.attempts import offload_request

        remote = self._remote
        return await self._call(
            "chat",
            offload_request(
                remote.chat,
                self._session_id,
                self._user_id,
                message,
                dict(kwargs),
                patience=remote.timeout,
            ),
        )

    send_message = chat  # PraisonAI's alias (Google ADK's name)

    def _local_only(self, what: str) -> None:
        if self._remote is not None:
            raise RemoteModeError(
                f"{what} is not available on a remote session: memory and knowledge live "
                f"with the agent on the session server at {self._remote.shown_url}. Run it "
                "there (in the agent factory given to praisonsession serve --agent, or in a "
                "local Session on the server's store)."
            )

    # -- lifecycle ------------------------------------------------------------------------

    async def get_info(self) -> SessionInfo | None:
        """The stored metadata (created, updated, expiry, version), or None once it is gone."""
        return await self._call("get_info", self._store.get_info(self._session_id, self._user_id))

    async def is_expired(self) -> bool:
        """True once the stored session has expired (or was ended with expire() or delete())."""
        info = await self.get_info()
        return info is None or info.is_expired()

    async def time_to_expiry(self) -> float | None:
        """Seconds left before the session expires; None if it has no TTL."""
        info = await self.get_info()
        if info is None:
            return 0.0
        return info.time_to_expiry()

    async def touch(self, ttl: float | Unset | None = UNSET) -> None:
        """Restart the TTL now (optionally with a new TTL in seconds, or None for no expiry)."""
        await self._call("touch", self._store.touch(self._session_id, self._user_id, ttl=ttl))

    async def expire(self) -> None:
        """End the session now, for every reader."""
        await self._call("expire", self._store.expire(self._session_id, self._user_id))

    async def delete(self) -> bool:
        """Delete this session and everything in it."""
        return await self._call(
            "delete", self._store.delete_session(self._session_id, self._user_id)
        )

    async def list_sessions(self, limit: int = 100, after: str | None = None) -> list[SessionInfo]:
        """This user's live sessions, one page ordered by id (pass ``after`` for the next)."""
        return await self._call(
            "list_sessions", self._store.list_sessions(self._user_id, limit=limit, after=after)
        )

    async def delete_session(self, session_id: str) -> bool:
        """Delete another session of this user."""
        return await self._call(
            "delete_session", self._store.delete_session(session_id, self._user_id)
        )

    async def close(self) -> None:
        """Release connections (the store's, if this session opened it, and the agents').
        Idempotent; the session stays usable and reconnects on next use."""
        if self._registry is not None:
            self._registry.close()
        if self._owns_store:
            await self._store.close()

    async def __aenter__(self) -> AsyncSession:
        if not self._opened:
            await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- display --------------------------------------------------------------------------

    def __repr__(self) -> str:
        where = "agent_url" if self._remote is not None else "store"
        return (
            f"{type(self).__name__}(id={self._session_id!r}, user={self._user_id!r}, "
            f"{where}={self._store.url!r})"
        )

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """Identity only: rendering must not do I/O on a running loop (``Session`` shows the
        stored state too)."""
        return _html_table(type(self).__name__, self._identity_rows())

    async def _html_with_state(self) -> str:
        if self._remote is not None and self._opened and not self._remote.keeps_sessions:
            return _html_table("Session", self._identity_rows())  # a server that keeps no state
        info = await self.get_info()
        state = await self.restore_state() if info is not None else {}
        if info is None:
            expiry = "gone (expired or deleted)"
        elif info.expires_at is None:
            expiry = "never"
        else:
            expiry = f"in {info.time_to_expiry():.0f} s"
        shown = ", ".join(f"{k}={v!r}" for k, v in list(state.items())[:8])
        rows = [
            *self._identity_rows(),
            ("expires", expiry),
            ("state", (shown + (" …" if len(state) > 8 else "")) or "(empty)"),
        ]
        return _html_table("Session", rows)

    def _identity_rows(self) -> list[tuple[str, str]]:
        return [
            ("session_id", self._session_id),
            ("user_id", self._user_id),
            ("agent_url" if self._remote is not None else "store", self._store.url),
        ]


def _in_thread(name: str, work: Callable[[], T]) -> Future[T]:
    """Start ``work`` in a daemon thread; its outcome, awaitable from any event loop."""
    from concurrent.futures import Future  # on first use of memory: a cold start skips it

    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def _html_table(caption: str, rows: list[tuple[str, str]]) -> str:
    import html

    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
        f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
        for k, v in rows
    )
    return f"<table><caption>praisonsession.{caption}</caption>{body}</table>"


def _check_said(said_at: Any, count: int) -> list[float] | None:
    """``add_memories``' ``said_at``: None, one time for every text, or one time per text."""
    if said_at is None:
        return None
    if isinstance(said_at, (list, tuple)):
        if len(said_at) != count:
            raise InvalidValueError(
                f"said_at has {len(said_at)} times for {count} texts; pass one time per text, "
                "or a single time for all of them."
            )
        return [check_moment(when, f"said_at[{i}]") for i, when in enumerate(said_at)]
    return [check_moment(said_at, "said_at")] * count


def _check_text(text: Any, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidValueError(f"{what} must be a str, got {type(text).__name__}.")
    if not text.strip():
        raise InvalidValueError(f"{what} is empty; pass some text.")
    return text


def _check_where(where: Any) -> Any:
    from ..recall.vectors.filters import parse_where  # light: no chromadb

    return parse_where(where)


def _check_limit(limit: Any) -> int:
    return check_count(limit, "limit", low=1, high=1000)
