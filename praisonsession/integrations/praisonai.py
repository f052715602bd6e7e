"""PraisonAI's agent persistence on praisonsession stores: :class:`PraisonDb`.

``Agent(..., memory=MemoryConfig(db=PraisonDb("sqlite://chat.db"), session_id="s1",
user_id="alice"))`` keeps the agent's conversation as one of our sessions, ``(user_id,
session_id)``, so ``Session("s1", "alice")``, ``praisonsession show/export/fork/erase-user``,
the browser, TTL and encryption at rest work on it as on any session. PraisonDb is PraisonAI's
``DbAdapter`` (every hook), its tool-turn protocol (``on_assistant_message`` /
``on_tool_message``), and its async form: each hook has an ``aon_*`` twin that an agent's
``achat`` awaits, and :attr:`PraisonDb.aio` is the same store as an ``AsyncDbAdapter``.

What a session holds (each an append-only message log, one entry per event, ordered by the
log's sequence, never by a clock):

- :data:`MESSAGES_LOG` (``praisonai.messages``): the turns, ``{"role", "content", "timestamp",
  "id"}`` plus ``tool_calls`` on an assistant turn that called tools and ``tool_call_id`` on a
  tool result; ``on_agent_start`` hands them back, so an agent resumes with its tool calls and
  their results, in a new process as in the same one.
- :data:`RUNS_LOG`: each run's start and end; ``get_runs`` folds them, newest first.
- :data:`TOOLS_LOG`: what ``on_tool_call`` reports (kept beside the turns, never replayed to
  the model: a tool result without its call is refused by the chat API).
- :data:`TRACES_LOG`: traces and their spans, in the session a trace names (a trace without a
  session goes to its user's session :data:`TRACES_SESSION`).

**Whose session.** PraisonAI passes the user to ``on_agent_start`` alone; every later hook has
the session id only. The user of a hook is, in this order: that of the PraisonAI agent making
the call (the agent is on the call stack, and its ``user_id`` is the one it passed); the one
user this process bound to that session id; the one user whose session it is in the store
(so another process finds it). So two users with one ``session_id`` never see each other's
turns, even through one PraisonDb. An agent without ``user_id`` passes PraisonAI's placeholder
``"praison"``: its conversation is the default user's.

**Failures are loud.** PraisonAI logs and swallows what a hook raises, and chats on. A hook
that fails logs a warning on the ``praisonsession`` logger naming what was not stored, keeps
the messages it could not write in memory and writes them, in order, before the next message
of the same session (:attr:`PraisonDb.unwritten` counts them; ``close`` says if any are left),
then raises its typed error.

Needs the ``praisonai`` extra; ``import praisonsession`` never imports PraisonAI, and only this
module does.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from .._internal.identifiers import DEFAULT_USER, check_session_id
from ..errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    MissingDependencyError,
    PraisonSessionError,
    install_line,
)
from ..stores import SessionBase, SessionInfo, record_key
from ._adapter import SyncClose

if TYPE_CHECKING:
    from ..settings import Settings
    from ..stores import Key

try:
    from praisonaiagents.db.protocol import (
        SCHEMA_VERSION,
        DbMessage,
        DbRun,
        DbSpan,
        DbToolCall,
        DbTrace,
    )
except ImportError as missing:  # pragma: no cover - the extra is installed where this runs
    raise MissingDependencyError(
        "praisonsession.integrations.praisonai needs PraisonAI's agents package: "
        + install_line("praisonai")
        + "."
    ) from missing

__all__ = [
    "EXPORT_FORMAT",
    "MESSAGES_LOG",
    "RUNS_LOG",
    "TOOLS_LOG",
    "TRACES_LOG",
    "TRACES_SESSION",
    "AsyncPraisonDb",
    "PraisonDb",
]


#: The conversation's turns, as ``praisonsession show`` names the log.
MESSAGES_LOG = "praisonai.messages"
#: Each run's start and end events.
RUNS_LOG = "praisonai.runs"
#: The tool calls ``on_tool_call`` reports.
TOOLS_LOG = "praisonai.tools"
#: Trace and span events.
TRACES_LOG = "praisonai.traces"
#: The session, among a user's, holding the traces that name no session.
TRACES_SESSION = "praisonai:traces"
#: What ``export_session`` writes and ``import_session`` reads.
EXPORT_FORMAT = "praisonsession.praisonai/1"
#: The session metadata key under which the agent's name and description are kept.
META_KEY = "praisonai"

#: The user id PraisonAI's Agent passes when it was given none.
_PLACEHOLDER_USER = "praison"
#: Frames looked through for the PraisonAI agent making a call (hooks are called from the
#: agent's own methods, one or two frames up).
_STACK_DEPTH = 4
#: Run events read first when looking back for ``get_runs(limit=N)``; the window doubles.
_LOOK_BACK = 16
_LOG = logging.getLogger("praisonsession")


class PraisonDb(SyncClose):
    """PraisonAI's ``DbAdapter`` (with its tool-turn and async forms) over a praisonsession
    store.

    ``store`` is what ``Session(store=...)`` takes: a URL (``memory://``, ``json:///dir``,
    ``sqlite://file.db``, ``redis://...``, ``postgresql://...``), a store instance, or None for
    the default store (SQLite under ``./.praisonsession/``). ``settings`` are praisonsession's
    (``Settings`` or a dict: ``default_ttl``, ``durability``, ``encryption_key``...).

    One instance may serve many agents, users and threads at once.
    """

    def __init__(
        self,
        store: SessionBase | str | None = None,
        *,
        settings: Settings | dict[str, Any] | None = None,
    ) -> None:
        self._hold(store, settings)
        self._lock = threading.Lock()
        #: session id -> the users this process bound to it (on_agent_start)
        self._bound: dict[str, set[str]] = {}
        #: (user, session) -> the run the agent is in (messages are tagged with it), and
        #: run id -> its conversation (an async run end is awaited where no agent is seen)
        self._runs: dict[Key, str] = {}
        self._run_keys: dict[str, Key] = {}
        #: (user, session) -> the input of its run while no user turn of it was reported
        self._run_inputs: dict[Key, str] = {}
        #: trace id -> where its events go; span id -> its trace id
        self._traces: dict[str, Key] = {}
        self._spans: dict[str, str] = {}
        #: (key, log) -> entries a failed write left to write first next time
        self._unwritten: dict[tuple[Key, str], list[dict[str, Any]]] = {}

    @property
    def unwritten(self) -> int:
        """How many entries failed writes left in memory, to be written before the next
        entry of their session (0 when everything reached the store)."""
        with self._lock:
            return sum(len(entries) for entries in self._unwritten.values())

    @property
    def aio(self) -> AsyncPraisonDb:
        """This store as PraisonAI's ``AsyncDbAdapter``: the same hooks, awaited."""
        return AsyncPraisonDb(self)

    def close(self) -> None:
        """Release the store's connections (a store passed in as an instance is its owner's
        to close); the conversations stay stored, and the adapter reopens on next use."""
        self._warn_unwritten()
        super().close()

    async def aclose(self) -> None:
        """``close`` for async code."""
        self._warn_unwritten()
        await super().aclose()

    # -- the DbAdapter protocol: sync hooks ------------------------------------------------

    def on_agent_start(
        self,
        agent_name: str,
        session_id: str,
        user_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[DbMessage]:
        """Open the conversation of ``user_id`` (the default user if none) and return its
        turns, oldest first, tool calls and results included."""
        return self._run(
            self._agent_start(agent_name, session_id, user_id, metadata), "on_agent_start"
        )

    def on_user_message(
        self, session_id: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """Append the user's turn."""
        self._run(
            self._message(self._caller(), session_id, "user", content, metadata), "on_user_message"
        )

    def on_agent_message(
        self, session_id: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """Append the agent's answer."""
        self._run(
            self._message(self._caller(), session_id, "assistant", content, metadata),
            "on_agent_message",
        )

    def on_assistant_message(
        self,
        session_id: str,
        content: str,
        tool_calls: list[Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Append an assistant turn that asked for tools, its ``tool_calls`` kept as given
        (OpenAI's shape), so that a resumed agent sends the model the same transcript."""
        calls = _tool_calls(tool_calls)
        who = self._caller()
        self._run(
            self._message(who, session_id, "assistant", content, metadata, tool_calls=calls),
            "on_assistant_message",
        )

    def on_tool_message(
        self,
        session_id: str,
        content: str,
        tool_call_id: str,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Append a tool's result (``role="tool"``), linked to its call by ``tool_call_id``."""
        call_id = _text(tool_call_id, "tool_call_id")
        who = self._caller()
        self._run(
            self._message(who, session_id, "tool", content, metadata, tool_call_id=call_id),
            "on_tool_message",
        )

    def on_tool_call(
        self,
        session_id: str,
        tool_name: str,
        args: dict[str, Any],
        result: Any,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Record a tool's execution (kept beside the turns, never replayed to the model)."""
        self._run(
            self._tool_call(self._caller(), session_id, tool_name, args, result, metadata),
            "on_tool_call",
        )

    def on_agent_end(self, session_id: str, metadata: dict[str, Any] | None = None) -> None:
        """Mark the conversation ended (its metadata says when); it stays stored."""
        self._run(self._agent_end(self._caller(), session_id, metadata), "on_agent_end")

    def on_run_start(
        self,
        session_id: str,
        run_id: str,
        input_content: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Record the start of a run (a turn); the turns until its end carry its id."""
        self._run(
            self._run_start(self._caller(), session_id, run_id, input_content, metadata),
            "on_run_start",
        )

    def on_run_end(
        self,
        session_id: str,
        run_id: str,
        output_content: str | None = None,
        status: str = "completed",
        metrics: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Record the end of a run: its output, status and metrics."""
        who = self._caller()
        self._run(
            self._run_end(who, session_id, run_id, output_content, status, metrics, metadata),
            "on_run_end",
        )

    def get_runs(
        self, session_id: str, limit: int | None = None, *, user_id: str | None = None
    ) -> list[DbRun]:
        """The session's runs, newest first (at most ``limit``)."""
        return self._run(self._get_runs(session_id, limit, user_id), "get_runs")

    def export_session(self, session_id: str, *, user_id: str | None = None) -> dict[str, Any]:
        """The whole conversation as JSON data (turns, runs, tool calls, traces);
        ``import_session`` makes it again. {} for a session that is not stored."""
        return self._run(self._export(session_id, user_id), "export_session")

    def import_session(self, data: dict[str, Any]) -> str:
        """Store a conversation ``export_session`` returned (of its user, under its session
        id, or a new one if it has none); its session id. A stored conversation of that id is
        never overwritten: ``ConflictError``."""
        return self._run(self._import(data), "import_session")

    def on_trace_start(
        self,
        trace_id: str,
        session_id: str | None = None,
        run_id: str | None = None,
        agent_name: str | None = None,
        user_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Record the start of a trace, in the session it names."""
        self._run(
            self._trace_start(trace_id, session_id, run_id, agent_name, user_id, metadata),
            "on_trace_start",
        )

    def on_trace_end(
        self, trace_id: str, status: str = "ok", metadata: dict[str, Any] | None = None
    ) -> None:
        """Record the end of a trace."""
        self._run(self._trace_event(trace_id, "trace_end", status, metadata), "on_trace_end")

    def on_span_start(
        self,
        span_id: str,
        trace_id: str,
        name: str,
        parent_span_id: str | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> None:
        """Record the start of a span of a trace."""
        self._run(
            self._span_start(span_id, trace_id, name, parent_span_id, attributes), "on_span_start"
        )

    def on_span_end(
        self, span_id: str, status: str = "ok", attributes: dict[str, Any] | None = None
    ) -> None:
        """Record the end of a span."""
        self._run(self._span_end(span_id, status, attributes), "on_span_end")

    def get_traces(
        self,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int | None = None,
    ) -> list[DbTrace]:
        """Traces with their spans, newest first: of a session, else of a user (the default
        user if none), at most ``limit``."""
        return self._run(self._get_traces(session_id, user_id, limit), "get_traces")

    def get_schema_version(self) -> str:
        """The version of PraisonAI's protocol this adapter stores (``SCHEMA_VERSION``)."""
        return str(SCHEMA_VERSION)

    def migrate_schema(self, from_version: str, to_version: str) -> bool:
        """True when there is nothing to migrate: the stored layout does not depend on the
        protocol's version (a version this adapter does not know: False)."""
        known = {str(SCHEMA_VERSION)}
        return from_version in known and to_version in known

    def check_schema_compatibility(self) -> tuple[bool, str]:
        """Always compatible: the layout is praisonsession's own, versioned by the store."""
        return True, f"praisonsession store {self._store.url}: protocol {SCHEMA_VERSION}"

    # -- the async twins PraisonAI's achat awaits (aon_*) ----------------------------------

    async def aon_agent_start(
        self,
        agent_name: str,
        session_id: str,
        user_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> list[DbMessage]:
        """``on_agent_start`` for async code."""
        return await self._agent_start(agent_name, session_id, user_id, metadata)

    async def aon_user_message(
        self, session_id: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """``on_user_message`` for async code."""
        await self._message(self._caller(), session_id, "user", content, metadata)

    async def aon_agent_message(
        self, session_id: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        """``on_agent_message`` for async code."""
        await self._message(self._caller(), session_id, "assistant", content, metadata)

    async def aon_assistant_message(
        self,
        session_id: str,
        content: str,
        tool_calls: list[Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """``on_assistant_message`` for async code."""
        calls = _tool_calls(tool_calls)
        who = self._caller()
        await self._message(who, session_id, "assistant", content, metadata, tool_calls=calls)

    async def aon_tool_message(
        self,
        session_id: str,
        content: str,
        tool_call_id: str,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """``on_tool_message`` for async code."""
        call_id = _text(tool_call_id, "tool_call_id")
        who = self._caller()
        await self._message(who, session_id, "tool", content, metadata, tool_call_id=call_id)

    async def aon_tool_call(
        self,
        session_id: str,
        tool_name: str,
        args: dict[str, Any],
        result: Any,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """``on_tool_call`` for async code."""
        await self._tool_call(self._caller(), session_id, tool_name, args, result, metadata)

    async def aon_agent_end(self, session_id: str, metadata: dict[str, Any] | None = None) -> None:
        """``on_agent_end`` for async code."""
        await self._agent_end(self._caller(), session_id, metadata)

    async def aon_run_start(
        self,
        session_id: str,
        run_id: str,
        input_content: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """``on_run_start`` for async code."""
        await self._run_start(self._caller(), session_id, run_id, input_content, metadata)

    async def aon_run_end(
        self,
        session_id: str,
        run_id: str,
        output_content: str | None = None,
        status: str = "completed",
        metrics: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """``on_run_end`` for async code."""
        who = self._caller()
        await self._run_end(who, session_id, run_id, output_content, status, metrics, metadata)

    async def aget_runs(
        self, session_id: str, limit: int | None = None, *, user_id: str | None = None
    ) -> list[DbRun]:
        """``get_runs`` for async code."""
        return await self._get_runs(session_id, limit, user_id)

    async def aexport_session(
        self, session_id: str, *, user_id: str | None = None
    ) -> dict[str, Any]:
        """``export_session`` for async code."""
        return await self._export(session_id, user_id)

    async def aimport_session(self, data: dict[str, Any]) -> str:
        """``import_session`` for async code."""
        return await self._import(data)

    async def aon_trace_start(
        self,
        trace_id: str,
        session_id: str | None = None,
        run_id: str | None = None,
        agent_name: str | None = None,
        user_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """``on_trace_start`` for async code."""
        await self._trace_start(trace_id, session_id, run_id, agent_name, user_id, metadata)

    async def aon_trace_end(
        self, trace_id: str, status: str = "ok", metadata: dict[str, Any] | None = None
    ) -> None:
        """``on_trace_end`` for async code."""
        await self._trace_event(trace_id, "trace_end", status, metadata)

    async def aon_span_start(
        self,
        span_id: str,
        trace_id: str,
        name: str,
        parent_span_id: str | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> None:
        """``on_span_start`` for async code."""
        await self._span_start(span_id, trace_id, name, parent_span_id, attributes)

    async def aon_span_end(
        self, span_id: str, status: str = "ok", attributes: dict[str, Any] | None = None
    ) -> None:
        """``on_span_end`` for async code."""
        await self._span_end(span_id, status, attributes)

    async def aget_traces(
        self,
        session_id: str | None = None,
        user_id: str | None = None,
        limit: int | None = None,
    ) -> list[DbTrace]:
        """``get_traces`` for async code."""
        return await self._get_traces(session_id, user_id, limit)

    # -- whose session -----------------------------------------------------------------------

    def _bind(self, session_id: str, user_id: Any) -> Key:
        user = _user(user_id)
        key = record_key(_session_id(session_id), user)
        with self._lock:
            self._bound.setdefault(key.session_id, set()).add(key.user_id)
        return key

    async def _key(self, session_id: Any, user_id: Any = None, *, caller: str | None = None) -> Key:
        """The key of the conversation a hook names by ``session_id`` alone (see the module's
        docstring: the calling agent's user, else this process's binding, else the store's)."""
        session_id = _session_id(session_id)
        if user_id is not None:
            return record_key(session_id, _user(user_id))
        if caller is not None:
            return self._bind(session_id, caller)
        with self._lock:
            users = sorted(self._bound.get(session_id, ()))
        if len(users) == 1:
            return record_key(session_id, users[0])
        if not users:
            users = await self._stored_users(session_id)
            if len(users) <= 1:
                user = users[0] if users else DEFAULT_USER
                return self._bind(session_id, user)
        raise InvalidIdError(
            f"Session {session_id!r} is a conversation of several users ({', '.join(users)}) "
            "and this call does not say whose: PraisonAI names the user only in on_agent_start. "
            "Call it from the agent, or pass user_id= (get_runs, export_session, get_traces)."
        )

    def _caller(self) -> str | None:
        """The ``user_id`` of the PraisonAI agent whose method called the hook calling this, if
        one did (hooks are called from the agent's own methods, with the agent as ``self``;
        an async hook awaited by one sees it as its caller too). Taken on the caller's thread,
        before the hook's work may move to the process's loop."""
        frame = sys._getframe(2)
        for _ in range(_STACK_DEPTH):
            if frame is None:
                return None
            agent = frame.f_locals.get("self")
            if agent is not None and agent is not self and getattr(agent, "_db", None) is self:
                user = getattr(agent, "user_id", None)
                return user if isinstance(user, str) else None
            frame = frame.f_back  # type: ignore[assignment]
        return None

    async def _stored_users(self, session_id: str) -> list[str]:
        """The users whose conversation ``session_id`` is in the store (for another process:
        its hooks, bindings and all, find what this one stored). The one read below the store
        API: a store lists one user's sessions, and only the backend lists a session id's
        users (by an index where it has one). It reads ids, never a record's contents, so
        a store without the key reads nothing sealed. The exact id sorts first among the ids
        it starts, so a few records tell one user from several."""
        found = await self._store.backend.list_records_by_prefix(session_id, limit=8, after=None)
        return sorted({info.user_id for info in found if info.session_id == session_id})

    # -- the work behind the hooks -----------------------------------------------------------

    async def _agent_start(
        self, agent_name: Any, session_id: Any, user_id: Any, metadata: Any
    ) -> list[DbMessage]:
        key = self._bind(session_id, user_id)
        described = {"agent_name": _text(agent_name, "agent_name"), **_metadata(metadata)}
        try:
            await self._store.create_session(
                key.session_id, key.user_id, metadata={META_KEY: described}
            )
            stored = await self._store.read_messages(key.session_id, key.user_id, MESSAGES_LOG)
        except Exception as exc:
            _warn(f"could not resume session {key.session_id!r} of {key.user_id!r}", exc)
            raise
        return [_db_message(entry) for entry in stored]

    async def _message(
        self,
        caller: str | None,
        session_id: Any,
        role: str,
        content: Any,
        metadata: Any,
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
    ) -> None:
        key = await self._key(session_id, caller=caller)
        entry: dict[str, Any] = {
            "role": role,
            "content": _content(content),
            "timestamp": time.time(),
            "id": f"msg-{uuid.uuid4().hex}",
        }
        if tool_calls:
            entry["tool_calls"] = tool_calls
        if tool_call_id is not None:
            entry["tool_call_id"] = tool_call_id
        extra = _metadata(metadata)
        if extra:
            entry["metadata"] = extra
        with self._lock:
            run_id = self._runs.get(key)
            unreported = self._run_inputs.pop(key, None) if role in ("user", "assistant") else None
        if run_id is not None:
            entry["run_id"] = run_id
        question = None
        if role == "assistant" and unreported is not None:  # see _unreported_question
            question = _unreported_question(unreported, run_id)
        await self._append(key, MESSAGES_LOG, entry, f"the {role} turn", first=question)

    async def _tool_call(
        self,
        caller: str | None,
        session_id: Any,
        tool_name: Any,
        args: Any,
        result: Any,
        metadata: Any,
    ) -> None:
        key = await self._key(session_id, caller=caller)
        if not isinstance(args, dict):
            raise InvalidValueError(
                f"on_tool_call: args must be a dict of the tool's arguments, got {args!r}."
            )
        entry = {
            "tool_name": _text(tool_name, "tool_name"),
            "args": args,
            "result": _json_or_text(result),
            "timestamp": time.time(),
            "metadata": _metadata(metadata),
        }
        with self._lock:
            run_id = self._runs.get(key)
        if run_id is not None:
            entry["run_id"] = run_id
        await self._append(key, TOOLS_LOG, entry, f"the call of tool {entry['tool_name']!r}")

    async def _agent_end(self, caller: str | None, session_id: Any, metadata: Any) -> None:
        key = await self._key(session_id, caller=caller)
        ended = {"ended_at": time.time(), **_metadata(metadata)}
        try:
            info = await self._store.get_info(key.session_id, key.user_id)
            described = dict((info.metadata.get(META_KEY) or {}) if info is not None else {})
            described.update(ended)
            await self._store.set_metadata(key.session_id, key.user_id, **{META_KEY: described})
        except Exception as exc:
            _warn(f"could not mark session {key.session_id!r} ended", exc)
            raise

    async def _run_start(
        self, caller: str | None, session_id: Any, run_id: Any, input_content: Any, metadata: Any
    ) -> None:
        key = await self._key(session_id, caller=caller)
        run = _text(run_id, "run_id")
        event = {
            "event": "start",
            "run_id": run,
            "at": time.time(),
            "input_content": _content(input_content),
            "metadata": _metadata(metadata),
        }
        with self._lock:
            self._runs[key] = run
            self._run_keys[run] = key
            if isinstance(input_content, str) and input_content:
                self._run_inputs[key] = input_content
            else:
                self._run_inputs.pop(key, None)
        await self._append(key, RUNS_LOG, event, f"the start of run {run!r}")

    async def _run_end(
        self,
        caller: str | None,
        session_id: Any,
        run_id: Any,
        output_content: Any,
        status: Any,
        metrics: Any,
        metadata: Any,
    ) -> None:
        run = _text(run_id, "run_id")
        with self._lock:
            started = self._run_keys.pop(run, None)
        if caller is None and started is not None and started.session_id == session_id:
            key = started
        else:
            key = await self._key(session_id, caller=caller)
        event = {
            "event": "end",
            "run_id": run,
            "at": time.time(),
            "output_content": _content(output_content),
            "status": _text(status, "status"),
            "metrics": _metadata(metrics, "metrics"),
            "metadata": _metadata(metadata),
        }
        with self._lock:
            if self._runs.get(key) == run:
                del self._runs[key]
                self._run_inputs.pop(key, None)
        await self._append(key, RUNS_LOG, event, f"the end of run {run!r}")

    async def _get_runs(self, session_id: Any, limit: Any, user_id: Any) -> list[DbRun]:
        wanted = _limit(limit)
        key = await self._key(session_id, user_id)
        if wanted == 0:
            return []
        store, sid, user = self._store, key.session_id, key.user_id
        held = await store.message_count(sid, user, RUNS_LOG)
        start, window = held, _LOOK_BACK
        events: list[dict[str, Any]] = []
        while start > 0:  # from the end, in doubling windows, until enough runs started
            start = 0 if wanted is None else max(0, held - window)
            events = await store.read_messages(sid, user, RUNS_LOG, start, held)
            if wanted is not None and sum(e.get("event") == "start" for e in events) >= wanted:
                break
            window *= 2
        runs = _fold_runs(events, sid)
        return runs if wanted is None else runs[:wanted]

    async def _export(self, session_id: Any, user_id: Any) -> dict[str, Any]:
        key = await self._key(session_id, user_id)
        store, sid, user = self._store, key.session_id, key.user_id
        info = await store.get_info(sid, user)
        if info is None:
            return {}
        logs = {
            name: await store.read_messages(sid, user, log)
            for name, log in (
                ("messages", MESSAGES_LOG),
                ("runs", RUNS_LOG),
                ("tool_calls", TOOLS_LOG),
                ("traces", TRACES_LOG),
            )
        }
        described = dict(info.metadata.get(META_KEY) or {})
        return {
            "format": EXPORT_FORMAT,
            "session_id": sid,
            "user_id": user,
            "agent_id": described.get("agent_name"),
            "metadata": described,
            "created_at": info.created_at,
            **logs,
        }

    async def _import(self, data: Any) -> str:
        if not isinstance(data, dict):
            raise InvalidValueError(
                f"import_session takes the dict export_session returned, got {data!r}."
            )
        if data.get("format", EXPORT_FORMAT) != EXPORT_FORMAT:
            raise InvalidValueError(
                f"import_session reads {EXPORT_FORMAT!r} exports, got format "
                f"{data.get('format')!r}."
            )
        sid = data.get("session_id") or f"imported-{uuid.uuid4().hex}"
        key = record_key(_session_id(sid), _user(data.get("user_id")))
        logs: dict[str, list[dict[str, Any]]] = {}
        for name, log in (
            ("messages", MESSAGES_LOG),
            ("runs", RUNS_LOG),
            ("tool_calls", TOOLS_LOG),
            ("traces", TRACES_LOG),
        ):
            entries = data.get(name) or []
            if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
                raise InvalidValueError(
                    f"import_session: {name!r} must be a list of dicts (as export_session "
                    f"wrote it), got {entries!r:.80}."
                )
            logs[log] = entries
        for index, entry in enumerate(logs[MESSAGES_LOG]):
            if not isinstance(entry.get("role"), str):
                raise InvalidValueError(
                    f"import_session: message {index} has no role (a str): {entry!r:.80}."
                )
        metadata = _metadata(data.get("metadata"))
        store = self._store
        if await store.get_info(key.session_id, key.user_id) is not None:
            raise ConflictError(
                f"Session {key.session_id!r} of {key.user_id!r} is already stored; import_session "
                "never overwrites one. Delete it first, or import under another session_id."
            )
        await store.create_session(key.session_id, key.user_id, metadata={META_KEY: metadata})
        for log, entries in logs.items():
            if entries:  # only onto an empty log: a concurrent import of it is refused
                await store.append_messages(
                    key.session_id, key.user_id, log, entries, expected_length=0
                )
        self._bind(key.session_id, key.user_id)
        return key.session_id

    async def _trace_start(
        self,
        trace_id: Any,
        session_id: Any,
        run_id: Any,
        agent_name: Any,
        user_id: Any,
        metadata: Any,
    ) -> None:
        trace = _text(trace_id, "trace_id")
        if session_id is None:
            key = record_key(TRACES_SESSION, _user(user_id))
        else:
            key = await self._key(session_id, user_id)
        event = {
            "event": "trace_start",
            "trace_id": trace,
            "session_id": session_id,
            "run_id": run_id,
            "agent_name": agent_name,
            "user_id": key.user_id,
            "at": time.time(),
            "metadata": _metadata(metadata),
        }
        with self._lock:
            self._traces[trace] = key
        await self._append(key, TRACES_LOG, event, f"the start of trace {trace!r}")

    async def _trace_event(self, trace_id: Any, kind: str, status: Any, metadata: Any) -> None:
        trace = _text(trace_id, "trace_id")
        key = self._trace_key(trace)
        event = {
            "event": kind,
            "trace_id": trace,
            "status": _text(status, "status"),
            "at": time.time(),
            "metadata": _metadata(metadata),
        }
        await self._append(key, TRACES_LOG, event, f"the end of trace {trace!r}")

    async def _span_start(
        self, span_id: Any, trace_id: Any, name: Any, parent_span_id: Any, attributes: Any
    ) -> None:
        span, trace = _text(span_id, "span_id"), _text(trace_id, "trace_id")
        key = self._trace_key(trace)
        event = {
            "event": "span_start",
            "span_id": span,
            "trace_id": trace,
            "name": _text(name, "name"),
            "parent_span_id": parent_span_id,
            "at": time.time(),
            "attributes": _metadata(attributes, "attributes"),
        }
        with self._lock:
            self._spans[span] = trace
        await self._append(key, TRACES_LOG, event, f"the start of span {span!r}")

    async def _span_end(self, span_id: Any, status: Any, attributes: Any) -> None:
        span = _text(span_id, "span_id")
        with self._lock:
            trace = self._spans.pop(span, None)
        key = self._trace_key(trace)
        event = {
            "event": "span_end",
            "span_id": span,
            "trace_id": trace,
            "status": _text(status, "status"),
            "at": time.time(),
            "attributes": _metadata(attributes, "attributes"),
        }
        await self._append(key, TRACES_LOG, event, f"the end of span {span!r}")

    def _trace_key(self, trace: str | None) -> Key:
        """Where a trace's events go: the session its start named (in this process), else the
        default user's :data:`TRACES_SESSION`, with a warning (its start is not known here)."""
        with self._lock:
            key = self._traces.get(trace) if trace is not None else None
        if key is None:
            _LOG.warning(
                "Trace %r was not started through this PraisonDb: its events are kept in the "
                "default user's session %r.",
                trace,
                TRACES_SESSION,
            )
            key = record_key(TRACES_SESSION, DEFAULT_USER)
        return key

    async def _get_traces(self, session_id: Any, user_id: Any, limit: Any) -> list[DbTrace]:
        wanted = _limit(limit)
        if session_id is not None:
            keys = [await self._key(session_id, user_id)]
        else:
            user = _user(user_id)
            keys = [record_key(i.session_id, i.user_id) for i in await self._sessions_of(user)]
        events: list[dict[str, Any]] = []
        for key in keys:
            events.extend(await self._store.read_messages(key.session_id, key.user_id, TRACES_LOG))
        traces = _fold_traces(events)
        if user_id is not None:
            traces = [trace for trace in traces if trace.user_id == _user(user_id)]
        return traces if wanted is None else traces[:wanted]

    async def _sessions_of(self, user: str) -> list[SessionInfo]:
        found: list[SessionInfo] = []
        after: str | None = None
        while True:
            page = await self._store.list_sessions(user, limit=1000, after=after)
            found.extend(page)
            if len(page) < 1000:
                return found
            after = page[-1].session_id

    # -- writes that are never silently forgotten ------------------------------------------

    async def _append(
        self,
        key: Key,
        log: str,
        entry: dict[str, Any],
        what: str,
        *,
        first: dict[str, Any] | None = None,
    ) -> None:
        """Append ``entry`` (after ``first``, in the same step), after what earlier failed
        writes to this log left; on failure everything stays in memory for the next write,
        with a warning, and the error is raised (PraisonAI only logs it)."""
        slot = (key, log)
        new = [entry] if first is None else [first, entry]
        with self._lock:
            batch = [*self._unwritten.pop(slot, []), *new]
        try:
            await self._store.append_messages(key.session_id, key.user_id, log, batch)
        except (InvalidValueError, InvalidIdError):
            earlier = batch[: -len(new)]
            with self._lock:  # the entries themselves are refused: keep only the earlier ones
                if earlier:
                    self._unwritten[slot] = earlier + self._unwritten.get(slot, [])
            raise
        except Exception as exc:
            with self._lock:
                self._unwritten[slot] = batch + self._unwritten.get(slot, [])
            _warn(
                f"{what} of session {key.session_id!r} ({key.user_id!r}) was not stored; "
                f"{len(batch)} entr{'y is' if len(batch) == 1 else 'ies are'} kept in memory "
                "and written before the next one of this session",
                exc,
            )
            raise

    def _warn_unwritten(self) -> None:
        left = self.unwritten
        if left:
            _LOG.warning(
                "PraisonDb closes with %d entries its store never took (the writes failed and "
                "no later write of their session succeeded): they are lost.",
                left,
            )


class AsyncPraisonDb:
    """PraisonAI's ``AsyncDbAdapter`` over a :class:`PraisonDb`'s store: the same hooks, as
    coroutines under their protocol names. Make it with ``PraisonDb(...).aio``."""

    def __init__(self, db: PraisonDb) -> None:
        if not isinstance(db, PraisonDb):
            raise InvalidValueError(
                f"AsyncPraisonDb wraps a PraisonDb, got {db!r}; use PraisonDb(store).aio."
            )
        self._db = db
        self.on_agent_start = db.aon_agent_start
        self.on_user_message = db.aon_user_message
        self.on_agent_message = db.aon_agent_message
        self.on_assistant_message = db.aon_assistant_message
        self.on_tool_message = db.aon_tool_message
        self.on_tool_call = db.aon_tool_call
        self.on_agent_end = db.aon_agent_end
        self.on_run_start = db.aon_run_start
        self.on_run_end = db.aon_run_end
        self.get_runs = db.aget_runs
        self.export_session = db.aexport_session
        self.import_session = db.aimport_session
        self.on_trace_start = db.aon_trace_start
        self.on_trace_end = db.aon_trace_end
        self.on_span_start = db.aon_span_start
        self.on_span_end = db.aon_span_end
        self.get_traces = db.aget_traces

    @property
    def store(self) -> SessionBase:
        """The store keeping the conversations."""
        return self._db.store

    def __repr__(self) -> str:
        return f"AsyncPraisonDb(store={self._db.store.url!r})"

    async def close(self) -> None:
        """Release the store's connections (see ``PraisonDb.close``)."""
        await self._db.aclose()


# -- checks and conversions ------------------------------------------------------------------


def _warn(what: str, exc: BaseException) -> None:
    _LOG.warning("PraisonDb: %s: %s: %s", what, type(exc).__name__, exc)


def _user(user_id: Any) -> str:
    """PraisonAI's user id as ours: None, "" and the Agent's placeholder are the default user."""
    if user_id is None or user_id == "" or user_id == _PLACEHOLDER_USER:
        return DEFAULT_USER
    if not isinstance(user_id, str):
        raise InvalidIdError(f"user_id must be a str or None, got {user_id!r}.")
    return user_id


def _session_id(session_id: Any) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise InvalidIdError(
            f"PraisonDb needs the session id PraisonAI passes (a non-empty str), got "
            f"{session_id!r}; e.g. MemoryConfig(db=PraisonDb(...), session_id='chat-1')."
        )
    return check_session_id(session_id)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidValueError(f"{what} must be a str, got {value!r}.")
    return value


def _content(content: Any) -> Any:
    """A turn's content: text (None is ""), or PraisonAI's multimodal list of parts."""
    if content is None:
        return ""
    if isinstance(content, (str, list)):
        return content
    raise InvalidValueError(
        f"A message's content must be a str (or a list of content parts), got "
        f"{type(content).__name__}: {content!r:.80}."
    )


def _metadata(value: Any, what: str = "metadata") -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidValueError(f"{what} must be a dict or None, got {value!r:.80}.")
    return dict(value)


def _limit(limit: Any) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidValueError(f"limit must be a whole number >= 0 or None, got {limit!r}.")
    return limit


def _json_or_text(value: Any) -> Any:
    """A tool's result as stored: JSON data as it is, anything else as its text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (dict, list)):
        try:
            from .._internal.json_data import check_json_data

            check_json_data(value, "result")
            return value
        except PraisonSessionError:
            return str(value)
    return str(value)


def _tool_calls(tool_calls: Any) -> list[dict[str, Any]] | None:
    """Tool calls as stored: OpenAI's dicts as given, PraisonAI's ``DbToolCall`` in that
    shape (the shape PraisonAI itself normalises a resumed history to)."""
    if tool_calls is None:
        return None
    if not isinstance(tool_calls, list):
        raise InvalidValueError(f"tool_calls must be a list or None, got {tool_calls!r:.80}.")
    calls: list[dict[str, Any]] = []
    for index, call in enumerate(tool_calls):
        if isinstance(call, dict):
            calls.append(call)
        elif isinstance(call, DbToolCall):
            import json

            arguments = call.args if isinstance(call.args, str) else json.dumps(call.args or {})
            calls.append(
                {
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.tool_name, "arguments": arguments},
                }
            )
        else:
            raise InvalidValueError(
                f"tool call {index} must be a dict (OpenAI's shape) or a DbToolCall, got "
                f"{call!r:.80}."
            )
    return calls


def _unreported_question(question: str, run_id: str | None) -> dict[str, Any]:
    """The user turn of a run that PraisonAI did not report (its ``achat`` over the OpenAI
    client, in 1.7.17, reports the answer but not the question, though its own history holds
    both): written just before the answer, from the run's input, so that a resumed history is
    the one the agent had. Marked in its metadata."""
    turn: dict[str, Any] = {
        "role": "user",
        "content": question,
        "timestamp": time.time(),
        "id": f"msg-{uuid.uuid4().hex}",
        "metadata": {"reported_by": "on_run_start"},
    }
    if run_id is not None:
        turn["run_id"] = run_id
    return turn


def _db_message(entry: dict[str, Any]) -> DbMessage:
    return DbMessage(
        role=entry.get("role", ""),
        content=entry.get("content", ""),
        metadata=entry.get("metadata") or {},
        timestamp=entry.get("timestamp") or 0.0,
        id=entry.get("id"),
        tool_calls=entry.get("tool_calls"),
        tool_call_id=entry.get("tool_call_id"),
        run_id=entry.get("run_id"),
    )


def _fold_runs(events: list[dict[str, Any]], session_id: str) -> list[DbRun]:
    """Runs from their start and end events, newest (last started) first. An end whose start
    is before the events read is left out."""
    runs: dict[str, DbRun] = {}
    for event in events:
        run_id = event.get("run_id")
        if not isinstance(run_id, str):
            continue
        if event.get("event") == "start":
            metadata = event.get("metadata") or {}
            runs[run_id] = DbRun(
                run_id=run_id,
                session_id=session_id,
                agent_name=str(metadata.get("agent_name", "")),
                started_at=event.get("at") or 0.0,
                input_content=event.get("input_content"),
                metadata=dict(metadata),
            )
        elif event.get("event") == "end" and run_id in runs:
            run = runs[run_id]
            run.ended_at = event.get("at")
            run.status = event.get("status", run.status)
            run.output_content = event.get("output_content")
            run.metrics = event.get("metrics") or {}
            run.metadata.update(event.get("metadata") or {})
    return list(reversed(runs.values()))


def _fold_traces(events: list[dict[str, Any]]) -> list[DbTrace]:
    """Traces with their spans from their events, newest first."""
    traces: dict[str, DbTrace] = {}
    spans: dict[str, DbSpan] = {}
    for event in events:
        kind, trace_id = event.get("event"), event.get("trace_id")
        if kind == "trace_start" and isinstance(trace_id, str):
            traces[trace_id] = DbTrace(
                trace_id=trace_id,
                session_id=event.get("session_id"),
                run_id=event.get("run_id"),
                agent_name=event.get("agent_name"),
                user_id=event.get("user_id"),
                started_at=event.get("at") or 0.0,
                metadata=dict(event.get("metadata") or {}),
            )
        elif kind == "trace_end" and trace_id in traces:
            trace = traces[trace_id]
            trace.ended_at = event.get("at")
            trace.status = event.get("status", trace.status)
            trace.metadata.update(event.get("metadata") or {})
        elif kind == "span_start" and trace_id in traces:
            span = DbSpan(
                span_id=str(event.get("span_id")),
                trace_id=trace_id,
                name=str(event.get("name")),
                started_at=event.get("at") or 0.0,
                parent_span_id=event.get("parent_span_id"),
                attributes=dict(event.get("attributes") or {}),
            )
            spans[span.span_id] = span
            traces[trace_id].spans.append(span)
        elif kind == "span_end" and event.get("span_id") in spans:
            span = spans[event["span_id"]]
            span.ended_at = event.get("at")
            span.status = event.get("status", span.status)
            span.attributes.update(event.get("attributes") or {})
    return sorted(traces.values(), key=lambda trace: trace.started_at, reverse=True)
