"""``Session``: the one synchronous object users hold.

It owns the session's identity (session_id, user_id, TTL) and forwards every operation to an
async store on the private background loop (:mod:`praisonsession.runtime`), so it works the
same in a script, a thread pool or a running Jupyter kernel. It caches nothing: every call
reads or writes the store, which is what makes it safe to share a session between processes.
"""

from __future__ import annotations

import html
import os
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from . import runtime
from .errors import InvalidValueError
from .identifiers import DEFAULT_USER, check_session_id, check_user_id, new_session_id
from .json_data import JSONValue
from .state.module import StateModule
from .stores.base import UNSET, SessionBase, _check_ttl
from .stores.record import SessionInfo

if TYPE_CHECKING:
    from .agents import Agent
    from .knowledge.knowledge_base import KnowledgeAdded
    from .llm import LLMConfig
    from .memory.recall import SessionRecall
    from .settings import Settings

MEMORY_TYPES = ("short", "long")

__all__ = ["Session"]

T = TypeVar("T")


class Session:
    """A remembered session: state, TTL, memory, knowledge and your own StateModules.

    ``Session()`` with no arguments works offline with zero setup: it stores everything in
    SQLite under ``./.praisonsession/``. ``store=`` takes a store instance or a URL
    (``memory://``, ``json:///dir``, ``sqlite:///file.db``); ``settings=`` a
    :class:`~praisonsession.settings.Settings` or a dict of its fields.
    """

    def __init__(
        self,
        session_id: str | None = None,
        user_id: str | None = None,
        agent_url: str | None = None,
        memory_config: dict[str, Any] | None = None,
        knowledge_config: dict[str, Any] | None = None,
        timeout: float = 30,
        session_ttl: float | None = None,
        *,
        store: SessionBase | str | None = None,
        settings: Settings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = new_session_id() if session_id is None else check_session_id(session_id)
        self.user_id = DEFAULT_USER if user_id is None else check_user_id(user_id)
        if agent_url is not None:
            raise NotImplementedError(
                "Remote sessions (agent_url=...) are not available in this release yet; "
                "use a local Session and session.Agent(...) instead."
            )
        self.agent_url = None
        self.is_remote = False
        for name, config in (
            ("memory_config", memory_config),
            ("knowledge_config", knowledge_config),
        ):
            if config is not None and not isinstance(config, dict):
                raise InvalidValueError(f"{name} must be a dict or None, got {config!r}.")
        self.memory_config = dict(memory_config or {})
        self.knowledge_config = dict(knowledge_config or {})
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidValueError(
                f"timeout must be a positive number of seconds, got {timeout!r}."
            )
        self.timeout = timeout
        self.session_ttl = _check_ttl(session_ttl)
        self.settings = _settings(settings)
        self._owns_store = not isinstance(store, SessionBase)
        self.store = _store(store, self.settings)
        self._closed = False
        self._recall_services: SessionRecall | None = None
        self._agents: dict[str, Agent] = {}
        self._recall_lock = threading.Lock()
        self._run(
            self.store.create_session(
                self.session_id,
                self.user_id,
                ttl=UNSET if self.session_ttl is None else self.session_ttl,
            )
        )

    # -- plumbing -------------------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return runtime.run(coro, inline=self.store.runs_inline)

    # -- key-value state ------------------------------------------------------------------

    def set_state(self, key: str, value: JSONValue) -> None:
        """Store one value (JSON data). Durable when it returns."""
        self._run(
            self.store.patch_state(self.session_id, self.user_id, {key: value}, must_exist=True)
        )

    def get_state(self, key: str, default: JSONValue = None) -> JSONValue:
        return self._run(
            self.store.get_value(self.session_id, self.user_id, key, default, must_exist=True)
        )

    def increment_state(
        self, key: str, increment: int | float = 1, default: int | float = 0
    ) -> int | float:
        """Add to a number atomically, across threads and processes; returns the new value."""
        return self._run(
            self.store.increment(
                self.session_id, self.user_id, key, increment, default, must_exist=True
            )
        )

    def save_state(self, state_data: dict[str, JSONValue]) -> None:
        """Merge ``state_data`` into the state, all keys in one atomic step."""
        if not isinstance(state_data, dict):
            raise InvalidValueError(f"save_state takes a dict, got {type(state_data).__name__}.")
        self._run(
            self.store.patch_state(self.session_id, self.user_id, state_data, must_exist=True)
        )

    def restore_state(self) -> dict[str, JSONValue]:
        """The whole state as a dict (a copy: changing it changes nothing stored)."""
        return self._run(self.store.get_state(self.session_id, self.user_id, must_exist=True))

    def delete_state(self, *keys: str) -> None:
        """Remove keys from the state (missing keys are ignored)."""
        self._run(
            self.store.patch_state(
                self.session_id, self.user_id, delete=list(keys), must_exist=True
            )
        )

    def clear_state(self) -> None:
        self._run(
            self.store.patch_state(self.session_id, self.user_id, replace=True, must_exist=True)
        )

    # -- your own state modules -----------------------------------------------------------

    def save_modules(self, **modules: StateModule) -> None:
        """Persist StateModules (agents, memories, your classes) with this session."""
        self._run(self.store.save_session_state(self.session_id, self.user_id, **modules))

    def load_modules(self, **modules: StateModule) -> None:
        """Load StateModules saved under the same names; names never saved are left as they are."""
        self._run(
            self.store.load_session_state(
                self.session_id, self.user_id, allow_not_exist=True, **modules
            )
        )

    # -- memory and knowledge -------------------------------------------------------------

    def _recall(self) -> SessionRecall:
        """Memory and knowledge, built on first use (that is when chromadb is imported)."""
        with self._recall_lock:
            if self._recall_services is None:
                from .memory.recall import SessionRecall

                self._recall_services = SessionRecall(
                    self.store,
                    self.session_id,
                    self.user_id,
                    self.settings,
                    self.memory_config,
                    self.knowledge_config,
                )
            return self._recall_services

    def add_memory(self, text: str, memory_type: str = "long", **metadata: JSONValue) -> str:
        """Remember ``text``; returns its id.

        ``"long"`` memories belong to the user and are found from any of their sessions;
        ``"short"`` ones are this session's notes, kept (and expiring) with the session.
        """
        text = _check_text(text, "text")
        memory_type = _check_memory_type(memory_type, MEMORY_TYPES)
        recall = self._recall()
        if memory_type == "short":
            return self._run(recall.short.add(text, metadata))
        return recall.long.add(text, metadata)

    def search_memory(
        self, query: str, memory_type: str = "long", limit: int = 5
    ) -> list[dict[str, Any]]:
        """Memories closest in meaning to ``query``: dicts with id, text, score and metadata.

        ``memory_type`` is ``"long"``, ``"short"`` or ``"all"`` (both, best first).
        """
        query = _check_text(query, "query")
        memory_type = _check_memory_type(memory_type, (*MEMORY_TYPES, "all"))
        limit = _check_limit(limit)
        recall = self._recall()
        vector = recall.query_vector(query)
        hits: list[dict[str, Any]] = []
        if memory_type in ("short", "all"):
            hits += recall.short.rank(self._run(recall.short.entries()), vector, limit)
        if memory_type in ("long", "all"):
            hits += recall.long.search(vector, limit)
        hits.sort(key=lambda hit: -hit["score"])
        return hits[:limit]

    def clear_memory(self, memory_type: str = "all") -> int:
        """Forget this session's memories of a type (``"short"``, ``"long"`` or ``"all"``).

        Long-term memories other sessions of the user added are kept. Returns how many went.
        """
        memory_type = _check_memory_type(memory_type, (*MEMORY_TYPES, "all"))
        recall = self._recall()
        removed = 0
        if memory_type in ("short", "all"):
            removed += self._run(recall.short.clear())
        if memory_type in ("long", "all"):
            removed += recall.long.clear()
        return removed

    def add_knowledge(self, source: str | os.PathLike[str]) -> KnowledgeAdded:
        """Add a file (txt, md, html, pdf), a folder, a URL or raw text to the knowledge base.

        Content already held is skipped; long additions show a progress bar.
        """
        if isinstance(source, os.PathLike):
            source = Path(source)
        return self._recall().add_knowledge(source)

    def search_knowledge(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """Knowledge chunks closest to ``query``: dicts with id, text, score, metadata, source."""
        query = _check_text(query, "query")
        return self._recall().search_knowledge(query, _check_limit(limit))

    def get_context(self, query: str, max_items: int = 3) -> str:
        """Prompt context for ``query``: this session's notes, long-term memory and knowledge,
        labelled by section, within ``memory_config["context_chars"]`` (4000) characters."""
        query = _check_text(query, "query")
        max_items = _check_limit(max_items)
        recall = self._recall()
        vector = recall.query_vector(query)
        short = recall.short.rank(self._run(recall.short.entries()), vector, max_items)
        return recall.context(vector, short, max_items)

    # -- agents ---------------------------------------------------------------------------

    def Agent(
        self,
        name: str,
        role: str = "Assistant",
        instructions: str | None = None,
        tools: list[Callable[..., Any]] | None = None,
        memory: bool = True,
        knowledge: list[str] | None = None,
        llm: str | dict[str, Any] | LLMConfig | None = None,
        **kwargs: Any,
    ) -> Agent:
        """An agent whose conversation is kept in this session and restored when it is reopened.

        ``llm`` is a model name, a dict with ``model``, ``base_url`` and ``api_key``, or None for
        the settings (``PRAISONSESSION_LLM_*``, then ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``).
        Asking again for the same name returns the same live agent.
        """
        from .agents import create_agent

        return create_agent(self, name, role, instructions, tools, memory, knowledge, llm, **kwargs)

    create_agent = Agent

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def info(self) -> SessionInfo | None:
        """The stored metadata (created, updated, expiry, version), or None once it is gone."""
        return self._run(self.store.get_info(self.session_id, self.user_id))

    def is_expired(self) -> bool:
        """True once the stored session has expired (or was ended with expire() or delete())."""
        info = self.info
        return info is None or info.is_expired()

    def time_to_expiry(self) -> float | None:
        """Seconds left before the session expires; None if it has no TTL."""
        info = self.info
        if info is None:
            return 0.0
        return info.time_to_expiry()

    def touch(self, ttl: float | None = UNSET) -> None:
        """Restart the TTL now (optionally with a new TTL in seconds, or None for no expiry)."""
        self._run(self.store.touch(self.session_id, self.user_id, ttl=ttl))

    def expire(self) -> None:
        """End the session now, for every reader."""
        self._run(self.store.expire(self.session_id, self.user_id))

    def delete(self) -> bool:
        """Delete this session and everything in it."""
        return self._run(self.store.delete_session(self.session_id, self.user_id))

    def list_sessions(self, limit: int = 100, after: str | None = None) -> list[SessionInfo]:
        """This user's live sessions, one page ordered by id (pass ``after`` for the next)."""
        return self._run(self.store.list_sessions(self.user_id, limit=limit, after=after))

    def delete_session(self, session_id: str) -> bool:
        """Delete another session of this user."""
        return self._run(self.store.delete_session(session_id, self.user_id))

    def close(self) -> None:
        """Release the store's connections. Idempotent; the session stays usable."""
        if self._closed:
            return
        self._closed = True
        for agent in self._agents.values():
            agent.close()  # releases HTTP connections; the agent reconnects if used again
        if self._owns_store:
            self._run(self.store.close())

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- display --------------------------------------------------------------------------

    def __repr__(self) -> str:
        return f"Session(id={self.session_id!r}, user={self.user_id!r}, store={self.store.url!r})"

    __str__ = __repr__

    def _repr_html_(self) -> str:
        info = self.info
        state = self.restore_state() if info is not None else {}
        if info is None:
            expiry = "gone (expired or deleted)"
        elif info.expires_at is None:
            expiry = "never"
        else:
            expiry = f"in {info.time_to_expiry():.0f} s"
        rows = [
            ("session_id", self.session_id),
            ("user_id", self.user_id),
            ("store", self.store.url),
            ("expires", expiry),
            (
                "state",
                ", ".join(f"{k}={v!r}" for k, v in list(state.items())[:8])
                + (" …" if len(state) > 8 else "")
                or "(empty)",
            ),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>praisonsession.Session</caption>{body}</table>"


def _check_text(text: Any, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidValueError(f"{what} must be a str, got {type(text).__name__}.")
    if not text.strip():
        raise InvalidValueError(f"{what} is empty; pass some text.")
    return text


def _check_memory_type(memory_type: Any, allowed: tuple[str, ...]) -> str:
    if memory_type not in allowed:
        raise InvalidValueError(f"memory_type must be one of {allowed}, got {memory_type!r}.")
    return memory_type


def _check_limit(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidValueError(f"limit must be an int from 1 to 1000, got {limit!r}.")
    return limit


def _settings(settings: Any) -> Settings:
    from .settings import Settings

    if settings is None:
        return Settings()
    if isinstance(settings, Settings):
        return settings
    if isinstance(settings, dict):
        return Settings(**settings)
    raise InvalidValueError(f"settings must be a Settings, a dict or None, got {settings!r}.")


def _store(store: Any, settings: Settings) -> SessionBase:
    if isinstance(store, SessionBase):
        return store
    if store is not None and not isinstance(store, str):
        raise InvalidValueError(
            f"store must be a SessionBase instance or a URL string, got {store!r}."
        )
    from .stores.urls import open_store

    url = store or settings.resolved_store_url()
    options: dict[str, Any] = {
        "default_ttl": settings.default_ttl,
        "sliding_ttl": settings.sliding_ttl,
    }
    if url.lower().startswith("sqlite:"):
        options["busy_timeout"] = settings.sqlite_busy_timeout
    return open_store(url, **options)
