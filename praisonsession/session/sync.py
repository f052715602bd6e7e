"""``Session``: the one synchronous object notebooks and scripts hold.

A thin shell over :class:`~praisonsession.session.core.AsyncSession`: every method submits the
``AsyncSession`` coroutine of the same name to the runtime and returns its result, and nothing
else. So it works the same in a script, a thread pool or a running Jupyter kernel, and there is
one implementation of every operation. Store operations of an embedded store run inline on the
caller's thread (no loop hop); memory, knowledge and agents run on the background loop, where a
call that outlives ``timeout`` can be abandoned.

Past 500 lines only because it mirrors ``AsyncSession`` method for method, each with the
docstring a notebook user reads; there is no logic here to split.
"""

from __future__ import annotations

import os
from collections.abc import Coroutine, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

from .._internal import runtime
from .._internal.checks import MemoryQuery, MemoryType
from .._internal.json_data import JSONValue
from ..stores.api import UNSET, SessionBase, Unset
from ..stores.record import SessionInfo
from .core import AsyncSession

if TYPE_CHECKING:
    from ..agents import Agent
    from ..archive import ArchiveSummary
    from ..recall.knowledge.knowledge_base import KnowledgeAdded
    from ..recall.memory.lifecycle import MemoryId
    from ..settings import Settings
    from ..state.protocol import Stateful
    from ..stores.branches import SnapshotInfo, TreeNode
    from .praisonai import KnowledgeView, MemoryView

__all__ = ["Session"]

T = TypeVar("T")


class Session:
    """A remembered session: state, TTL, memory, knowledge, agents and your own StateModules.

    ``Session()`` with no arguments works offline with zero setup: it stores everything in
    SQLite under ``./.praisonsession/``. ``store=`` takes a store instance or a URL
    (``memory://``, ``json:///dir``, ``sqlite://file.db``, ``redis://host:6379/0``,
    ``postgresql://user@host/db``); ``settings=`` a
    :class:`~praisonsession.settings.Settings` or a dict of its fields.
    ``timeout`` (seconds) bounds each call (None: the settings' ``timeout``, 30 s unless set).
    For async code use :class:`AsyncSession`, which has the same methods as coroutines.

    ``Session(agent_url="http://host:8000/agent", api_key=...)`` is a remote session: it tests
    the connection now, ``chat`` talks to the agent a session server hosts, and the state
    calls work through that server.
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
        self._core = AsyncSession(
            session_id,
            user_id,
            agent_url,
            memory_config,
            knowledge_config,
            timeout,
            session_ttl,
            store=store,
            settings=settings,
            api_key=api_key,
        )
        self.open()

    # -- plumbing: submit the core's coroutine, nothing else --------------------------------

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """A store operation: inline on this thread when the store allows it."""
        core = self._core
        if core._inline:
            return runtime.run(coro, timeout=core._timeout, inline=True)
        what = getattr(coro, "__qualname__", "The call")  # named if the loop does not answer
        return runtime.run(coro, timeout=core._timeout, what=what)

    def _on_loop(self, coro: Coroutine[Any, Any, T], bounded: bool = True) -> T:
        """Memory, knowledge and agents: on the background loop, where a call that outlives
        the timeout can be abandoned."""
        return runtime.run(coro, timeout=self._core.timeout if bounded else None)

    # -- identity (the core's) ------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self._core.session_id

    @property
    def user_id(self) -> str:
        """The user the session belongs to (``default_user`` when none was given)."""
        return self._core.user_id

    @property
    def agent_url(self) -> str | None:
        """The remote agent's URL (``http://`` added when it named no scheme), or None."""
        return self._core.agent_url

    @property
    def is_remote(self) -> bool:
        """True for a session on a server (``agent_url=...``)."""
        return self._core.is_remote

    @property
    def memory_config(self) -> dict[str, Any]:
        """The memory options this session was opened with."""
        return self._core.memory_config

    @property
    def knowledge_config(self) -> dict[str, Any]:
        """The knowledge options this session was opened with."""
        return self._core.knowledge_config

    @property
    def timeout(self) -> float:
        """Seconds each operation may take before ``OperationTimeoutError``."""
        return self._core.timeout

    @property
    def session_ttl(self) -> float | None:
        """Seconds a session lives after its last use, or None for no expiry."""
        return self._core.session_ttl

    @property
    def settings(self) -> Settings:
        """The settings this session was resolved with (environment, ``.env``, arguments)."""
        return self._core.settings

    @property
    def store(self) -> SessionBase:
        """The store that keeps this session (a ``SessionBase``)."""
        return self._core.store

    @property
    def runs_inline(self) -> bool:
        """True when store calls run on the caller's thread, with no loop hop."""
        return self._core.runs_inline

    @property
    def memory(self) -> MemoryView:
        """PraisonAI's ``session.memory``: ``session.memory.search_long_term("tea")``.

        On a remote session it raises RemoteModeError (a ValueError) at once, as PraisonAI's
        does: memory lives with the agent on the server."""
        from .praisonai import MemoryView

        self._core._local_only("session.memory")

        return MemoryView(self)

    @property
    def knowledge(self) -> KnowledgeView:
        """PraisonAI's ``session.knowledge``: ``session.knowledge.search("office hours")``;
        RemoteModeError at once on a remote session."""
        from .praisonai import KnowledgeView

        self._core._local_only("session.knowledge")

        return KnowledgeView(self)

    def open(self) -> SessionInfo:
        """Create the stored session, or start it afresh if it expired, and refresh its TTL."""
        return self._run(self._core.open())

    # -- key-value state ------------------------------------------------------------------

    def set_state(self, key: str, value: JSONValue) -> None:
        """Store one value (JSON data). Durable when it returns."""
        return self._run(self._core.set_state(key, value))

    def get_state(self, key: str, default: JSONValue = None) -> JSONValue:
        """One value of the state, or ``default`` if the key is not set."""
        return self._run(self._core.get_state(key, default))

    def increment_state(
        self, key: str, increment: int | float = 1, default: int | float = 0
    ) -> int | float:
        """Add to a number atomically, across threads and processes; returns the new value."""
        return self._run(self._core.increment_state(key, increment, default))

    def save_state(self, state_data: dict[str, JSONValue]) -> None:
        """Merge ``state_data`` into the state, all keys in one atomic step."""
        return self._run(self._core.save_state(state_data))

    def restore_state(self) -> dict[str, JSONValue]:
        """The whole state as a dict (a copy: changing it changes nothing stored)."""
        return self._run(self._core.restore_state())

    def delete_state(self, *keys: str) -> None:
        """Remove keys from the state (missing keys are ignored)."""
        return self._run(self._core.delete_state(*keys))

    def clear_state(self) -> None:
        """Remove every key of the state (message logs and modules stay)."""
        return self._run(self._core.clear_state())

    # -- your own state modules -----------------------------------------------------------

    def save_modules(self, **modules: Stateful) -> None:
        """Persist state modules with this session: ours, AgentScope's agents, memories and
        toolkits, or any object with ``state_dict()`` and ``load_state_dict()``."""
        return self._run(self._core.save_modules(**modules))

    def load_modules(self, **modules: Stateful) -> None:
        """Load StateModules saved under the same names; names never saved are left as they are."""
        return self._run(self._core.load_modules(**modules))

    def refresh_modules(self, **modules: Stateful) -> int:
        """Take in the messages other processes appended to the modules' logs meanwhile."""
        return self._run(self._core.refresh_modules(**modules))

    def index_turns(self, log: str, before: int) -> int:
        """Embed the turns of ``log`` before message ``before`` (see ``AsyncSession``)."""
        return self._on_loop(self._core.index_turns(log, before))

    def recall_turns(
        self, log: str, query: str, before: int, limit: int = 4
    ) -> list[tuple[int, list[dict[str, Any]]]]:
        """The older turns of ``log`` most related to ``query`` (see ``AsyncSession``)."""
        return self._on_loop(self._core.recall_turns(log, query, before, limit))

    def usage(self) -> dict[str, Any]:
        """Tokens the session's agents used, per agent and in total (see ``AsyncSession.usage``)."""
        return self._run(self._core.usage())

    # -- message logs ---------------------------------------------------------------------

    def append_messages(self, log: str, messages: Sequence[dict[str, Any]]) -> int:
        """Append messages to a named log of this session; returns its new length."""
        return self._run(self._core.append_messages(log, messages))

    def read_messages(
        self, log: str, start: int = 0, stop: int | None = None
    ) -> list[dict[str, Any]]:
        """Messages ``start:stop`` of a named log ([] if it does not exist)."""
        return self._run(self._core.read_messages(log, start, stop))

    def message_count(self, log: str) -> int:
        """How many messages a named log holds."""
        return self._run(self._core.message_count(log))

    def list_logs(self) -> dict[str, int]:
        """This session's message logs by name, each with how many messages it holds."""
        return self._run(self._core.list_logs())

    def clear_messages(self, log: str) -> None:
        """Empty a named log."""
        return self._run(self._core.clear_messages(log))

    # -- memory and knowledge -------------------------------------------------------------

    def add_memory(
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
        other words updates that memory (``"UPDATE"``); ``dedupe=False`` always adds.
        ``said_at``: when it was said (datetime, ISO string or epoch seconds; now if omitted).
        """
        work = self._core.add_memory(text, memory_type, dedupe=dedupe, said_at=said_at, **metadata)
        return self._on_loop(work)

    def add_memories(
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
        a long list shows a progress bar. Repeats are not stored twice. ``said_at``: one time
        for all, or a list of one per text.
        """
        work = self._core.add_memories(
            texts, memory_type, dedupe=dedupe, said_at=said_at, **metadata
        )
        return self._on_loop(work, bounded=False)

    def search_memory(
        self,
        query: str,
        memory_type: MemoryQuery = "long",
        limit: int = 5,
        *,
        where: dict[str, Any] | None = None,
        prefer_recent: bool | None = None,
    ) -> list[dict[str, Any]]:
        """Memories closest in meaning to ``query``: dicts with id, text, score and metadata.

        ``memory_type`` is ``"long"``, ``"short"`` or ``"all"`` (both, best first); ``where``
        filters (``{"topic": "food"}``, ``{"stars": {"$gte": 4}}``, ``$in``, ``$and``, ``$or``,
        ``created_at``/``updated_at``); ``prefer_recent`` puts newer first among close matches.
        """
        return self._on_loop(
            self._core.search_memory(
                query, memory_type, limit, where=where, prefer_recent=prefer_recent
            )
        )

    def list_memories(
        self,
        memory_type: str = "all",
        *,
        where: dict[str, Any] | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> list[dict[str, Any]]:
        """Memories oldest first, ``limit`` at a time (``after``: the page before's last id)."""
        return self._on_loop(
            self._core.list_memories(memory_type, where=where, limit=limit, after=after)
        )

    def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        """The memory with this id, or None."""
        return self._on_loop(self._core.get_memory(memory_id))

    def update_memory(
        self, memory_id: str, text: str | None = None, **metadata: JSONValue
    ) -> dict[str, Any]:
        """Change a memory's text and/or metadata; the memory as it is now (recorded in its
        history). ``MemoryNotFoundError`` if no memory has this id."""
        return self._on_loop(self._core.update_memory(memory_id, text, **metadata))

    def delete_memory(self, memory_id: str) -> bool:
        """Forget one memory; True if it was there (recorded in its history)."""
        return self._on_loop(self._core.delete_memory(memory_id))

    def memory_history(self, memory_id: str) -> list[dict[str, Any]]:
        """Every change to a memory, oldest first: ``event`` (ADD, UPDATE, DELETE), ``text``,
        ``previous``, ``at``."""
        return self._on_loop(self._core.memory_history(memory_id))

    def clear_memory(self, memory_type: MemoryQuery = "all") -> int:
        """Forget this session's memories of a type (``"short"``, ``"long"`` or ``"all"``)."""
        return self._on_loop(self._core.clear_memory(memory_type))

    def add_knowledge(self, source: str | os.PathLike[str]) -> KnowledgeAdded:
        """Add a file (txt, md, html, pdf), a folder, a URL or raw text to the knowledge base.

        Content already held is skipped; long additions show a progress bar.
        """
        return self._on_loop(self._core.add_knowledge(source), bounded=False)

    def search_knowledge(
        self, query: str, limit: int = 5, *, where: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Knowledge chunks closest to ``query``: dicts with id, text, score, metadata, source;
        ``where`` filters on source, kind, chunk and created_at."""
        return self._on_loop(self._core.search_knowledge(query, limit, where=where))

    def get_context(self, query: str, max_items: int = 3) -> str:
        """Prompt context for ``query``: this session's notes, long-term memory and knowledge."""
        return self._on_loop(self._core.get_context(query, max_items))

    # -- agents ---------------------------------------------------------------------------

    def Agent(self, *args: Any, **options: Any) -> Agent:
        """An agent whose conversation is kept in this session and restored when it is reopened.

        Takes what an :class:`~praisonsession.agents.spec.AgentSpec` takes (PraisonAI's
        ``name, role, instructions, tools, memory, knowledge, llm``, and more by keyword), or a
        spec. Asking again for the same name returns the same live agent.
        """
        return self._on_loop(self._core.Agent(*args, **options), bounded=False)

    create_agent = Agent

    # -- remote ---------------------------------------------------------------------------

    def chat(self, message: str, **kwargs: JSONValue) -> str:
        """Send ``message`` to the remote agent and return its reply (remote sessions)."""
        return self._run(self._core.chat(message, **kwargs))

    send_message = chat  # PraisonAI's alias (Google ADK's name)

    # -- lifecycle ------------------------------------------------------------------------

    def get_info(self) -> SessionInfo | None:
        """The stored metadata (created, updated, expiry, version), or None once it is gone."""
        return self._run(self._core.get_info())

    def is_expired(self) -> bool:
        """True once the stored session has expired (or was ended with expire() or delete())."""
        return self._run(self._core.is_expired())

    def time_to_expiry(self) -> float | None:
        """Seconds left before the session expires; None if it has no TTL."""
        return self._run(self._core.time_to_expiry())

    def touch(self, ttl: float | Unset | None = UNSET) -> None:
        """Restart the TTL now (optionally with a new TTL in seconds, or None for no expiry)."""
        return self._run(self._core.touch(ttl))

    def expire(self) -> None:
        """End the session now, for every reader."""
        return self._run(self._core.expire())

    def delete(self) -> bool:
        """Delete this session and everything in it."""
        return self._run(self._core.delete())

    def list_sessions(self, limit: int = 100, after: str | None = None) -> list[SessionInfo]:
        """This user's live sessions, one page ordered by id (pass ``after`` for the next)."""
        return self._run(self._core.list_sessions(limit, after))

    def delete_session(self, session_id: str) -> bool:
        """Delete another session of this user."""
        return self._run(self._core.delete_session(session_id))

    def close(self) -> None:
        """Release connections. Idempotent; the session stays usable and reconnects."""
        return self._run(self._core.close())

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- hierarchy ------------------------------------------------------------------------

    @classmethod
    def _wrapping(cls, core: AsyncSession) -> Session:
        """The synchronous shell around a core made elsewhere (a fork, an import)."""
        session = cls.__new__(cls)
        session._core = core
        return session

    def fork(
        self,
        new_session_id: str | None = None,
        *,
        at_message: tuple[Any, int] | None = None,
        user_id: str | None = None,
    ) -> Session:
        """A copy of this session (state, modules, message logs, and the long-term memories
        it added) under a new id, made in one atomic step; it records this one as its parent.
        All or nothing, a killed process included: no fork is ever seen without its memories
        (see ``AsyncSession.fork``).

        ``at_message=(log, n)`` keeps only the first ``n`` messages of one log (an agent's log
        is ``agent.log_name``; an Agent itself is taken too). ``user_id`` forks into another
        user's sessions. Writing to either afterwards never changes the other.
        """
        core = self._on_loop(
            self._core.fork(new_session_id, at_message=at_message, user_id=user_id)
        )
        return self._wrapping(core)

    @property
    def parent(self) -> Session | None:
        """The session this one was forked from, or None."""
        core = self._run(self._core.parent)
        return None if core is None else self._wrapping(core)

    def children(self) -> list[SessionInfo]:
        """This user's live sessions forked from this one."""
        return self._run(self._core.children())

    def tree(self) -> list[TreeNode]:
        """This user's sessions as a forest: each under the one it was forked from."""
        return self._run(self._core.tree())

    def snapshot(self, label: str | None = None) -> SnapshotInfo:
        """Keep a copy of the session as it is now, to come back to with ``restore``."""
        return self._run(self._core.snapshot(label))

    def snapshots(self) -> list[SnapshotInfo]:
        """This session's snapshots, oldest first."""
        return self._run(self._core.snapshots())

    def restore(self, snapshot: SnapshotInfo | str) -> SessionInfo:
        """Put the session back as the snapshot holds it, in one atomic step."""
        return self._run(self._core.restore(snapshot))

    def delete_snapshot(self, snapshot: SnapshotInfo | str) -> bool:
        """Delete one snapshot of this session; True if it was there."""
        return self._run(self._core.delete_snapshot(snapshot))

    def export(
        self, path_or_file: str | os.PathLike[str] | IO[bytes], *, progress: bool = False
    ) -> ArchiveSummary:
        """Write the session to one portable, versioned JSON Lines file (metadata, state,
        modules, message logs, snapshots, long-term memories), streaming page by page."""
        return self._on_loop(self._core.export(path_or_file, progress=progress), bounded=False)

    @classmethod
    def import_archive(
        cls,
        path: str | os.PathLike[str] | IO[bytes],
        store: SessionBase | str | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        *,
        settings: Settings | dict[str, Any] | None = None,
        progress: bool = False,
    ) -> Session:
        """Read an archive written by ``export`` into ``store`` (any backend) and return the
        session; a corrupt or newer archive imports nothing."""
        core = runtime.run(
            AsyncSession.import_archive(
                path, store, session_id, user_id, settings=settings, progress=progress
            )
        )
        return cls._wrapping(core)

    # -- display --------------------------------------------------------------------------

    def __repr__(self) -> str:
        return repr(self._core).replace("AsyncSession(", "Session(", 1)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        return self._run(self._core._html_with_state())
