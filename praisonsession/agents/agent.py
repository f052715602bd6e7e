"""``Agent``: an LLM agent whose conversation belongs to the session it was created in.

Its history is a :class:`~praisonsession.state.MessageLog`, saved with the session after every
turn (an append of the new messages, so a turn costs the same at 10 or 10,000 messages) and
loaded when the same session creates the same agent again, in any process. A turn is saved
only once it has succeeded: a failed LLM call leaves the history as it was, so no half-turn (a
question without an answer, a tool call without its result) can break the next request.

Processes that chat with the same agent share one conversation: before each turn the agent
takes in the turns others saved meanwhile, and a turn saved at the same instant as another's
is appended after it, never over it (see ``SessionBase.save_session_state``).

The agent stands on an :class:`~praisonsession.agents.host.AgentHost` (an ``AsyncSession``):
``achat`` is the core; ``chat`` runs it on the background loop for synchronous code.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any, cast

from .. import clock, tracing
from .._internal import runtime
from .._internal.identifiers import filename_for, readable_name
from .._internal.redaction import redact_url
from .._internal.runtime import bounded
from ..errors import InvalidValueError, MissingDependencyError, install_line
from ..llm.config import resolve_llm
from ..llm.errors import LLMNotConfiguredError
from ..state.message_log import MessageLog
from ..state.module import StateModule
from .compaction import compact, latest_summary, needs_compaction
from .context_window import Request, assemble, default_budget, fit_turn
from .prompt import SAID_AT, system_prompt
from .spec import AgentSpec
from .tokens import CachedCounter, coerce_counter, message_tokens
from .tools import Toolbox
from .usage import add_usage, usage_record

if TYPE_CHECKING:
    from ..llm.client import ChatClient
    from .host import AgentHost

__all__ = ["TURN_KEY", "Agent", "TurnKeyIndex", "module_key"]

Message = dict[str, Any]
#: Where a turn's idempotency key is kept: ``user_message["metadata"][TURN_KEY]``, beside
#: when the user said it (``prompt.SAID_AT``).
TURN_KEY = "turn_key"


#: Said once per process when an agent with memory on finds the memory extra missing.
MEMORY_OFF_NOTICE = (
    "Agent {name!r} runs without memory: the memory extra (ChromaDB and an offline embedding "
    "model) is not installed. Its conversation is still kept in the session; what is off is "
    "semantic memory and the recall of older turns. To turn memory on: {install}. To silence "
    "this notice: session.Agent(..., memory=False)."
)
_memory_notice = threading.Event()  # set once the notice was given

#: Options the agent holds resolved rather than as given: set apart in ``configure``.
_RESOLVED = frozenset({"name", "knowledge", "tools", "token_counter", "context_budget", "llm"})


def module_key(name: str) -> str:
    """The store's module name for an agent: injective, readable (``agent:Assistant``), and
    free of the "." path separator."""
    return "agent:" + readable_name(name)


def escaped_module_key(name: str) -> str:
    """The module name agents had before names stayed readable (``agent:%41ssistant``): a
    session saved then keeps its agent's history under it."""
    return "agent:" + filename_for(name)


class Agent(StateModule):
    """An agent that remembers: ``chat`` sends instructions, context and recent history.

    Create it with ``session.Agent(...)`` (or :func:`~praisonsession.agents.create_agent`),
    which restores the saved history and returns the live agent if the session has one. Its
    options are an :class:`~praisonsession.agents.spec.AgentSpec`; for the long-conversation
    ones (``context_budget``, ``token_counter``, ``recall_turns``, ``compact_every``) see
    ``docs/pages/long-conversations.md``.
    """

    # the spec's plain options, one attribute each (``agent.role``, ...): set by ``configure``
    role: str
    instructions: str | None
    memory: bool
    goal: str | None
    backstory: str | None
    history_window: int | None
    max_tool_rounds: int
    context_items: int
    recall_turns: int
    compact_every: int

    def __init__(self, session: AgentHost, spec: AgentSpec) -> None:
        super().__init__()
        self.session = session
        self.name = spec.name
        self.key = module_key(self.name)
        self.history = MessageLog()
        #: Summary records of older turns (see ``agents/compaction.py``): saved beside the history.
        self.summaries = MessageLog()
        #: What the LLM reported per turn (see ``agents/usage.py``): saved beside the history.
        self.usage = MessageLog()
        self._recall_missing: str | None = None  # why memory is off, when the extra is missing
        # one turn at a time per event loop (the sync chat and async users may use two loops)
        self._turn_locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._indexing: set[asyncio.Future[Any]] = set()
        self._indexed_to = 0  # the history length the last background indexing was asked for
        self.last_request: Request | None = None
        self._client: ChatClient | None = None
        self._turn_keys = TurnKeyIndex()
        self.configure(spec)

    def configure(self, spec: AgentSpec) -> None:
        """Take everything from ``spec`` but the name and the history (what a repeated
        ``Agent(...)`` does)."""
        config = resolve_llm(spec.llm, self.session.settings, timeout=self.session.timeout)
        # AgentSpec.__post_init__ made tools a tuple, and knowledge a tuple or None
        tools = cast("tuple[Callable[..., Any], ...]", spec.tools)
        sources = cast("tuple[str, ...] | None", spec.knowledge)
        toolbox = Toolbox(tools)  # all checked before anything changes
        counter = coerce_counter(spec.token_counter)
        self.spec = spec
        for option in fields(spec):  # each plain option as an attribute (agent.role, ...)
            if option.name not in _RESOLVED:
                setattr(self, option.name, getattr(spec, option.name))
        self.knowledge = None if sources is None else list(sources)
        self.tools = toolbox
        # the recent turns are counted again on every turn: each text is counted once
        self.token_counter = CachedCounter(counter)
        self.context_budget = (
            spec.context_budget
            or getattr(self.session.settings, "context_budget", None)
            or default_budget(config.model)
        )
        if self._client is not None and self._client.config != config:
            self._client.close()
            self._client = None
        self.llm = config

    # -- chatting -------------------------------------------------------------------------

    def chat(self, message: str) -> str:
        """Send a message and return the reply; the turn is saved before this returns."""
        return runtime.run(self.achat(message), what=f"agent {self.name!r}: chat")

    start = chat  # PraisonAI's name for the same call

    @tracing.agent_turn
    async def achat(self, message: str, *, turn_key: str | None = None) -> str:
        """``chat`` for async code: the HTTP call and tools run off the event loop.

        ``turn_key`` makes the turn idempotent: it is saved with the user's message, and a
        turn already saved under the same key (by this process or another, before a restart)
        is not run again: its reply is returned. The session server passes the client's
        ``Idempotency-Key``, so a retried request is applied once.
        """
        if not isinstance(message, str):
            raise InvalidValueError(f"chat takes a str, got {type(message).__name__}.")
        if turn_key is not None and (not isinstance(turn_key, str) or not turn_key):
            raise InvalidValueError(f"turn_key must be a non-empty str, got {turn_key!r}.")
        client = self._client or self._connect()
        said = clock.now()  # when the user said it: kept with the message, shown on recall
        async with self._turn_lock():
            await self.session.refresh_modules(**{self.key: self})
            if turn_key is not None:
                done = self._turn_keys.reply(self.history, turn_key)
                if done is not None:
                    return done
            if self._index_ahead():
                await asyncio.sleep(0)  # its first step opens memory, the model loading
            context = await self._context(message)
            request = await self._request(client, message, context)
            self.last_request = request
            turn, usage = await self._turn(client, request, message)
            turn[0]["metadata"] = {
                SAID_AT: said,
                **({} if turn_key is None else {TURN_KEY: turn_key}),
            }
            self.usage.append(usage_record(len(self.history), self.llm.model, usage))
            self.history.extend(turn)
            try:
                await self._save()
            except BaseException:
                self._turn_keys.forget()  # the unsaved turn may be moved by the next refresh
                raise
        self._index_meanwhile(len(self.history), request.window_start)
        answer: str = turn[-1]["content"]
        return answer

    async def _request(self, client: ChatClient, message: str, context: str) -> Request:
        """The request for this turn within ``context_budget``: compacts first when enough
        turns have left the window since the last summary, then recalls related older turns.
        """
        history = self.history.view()
        system = system_prompt(self.name, self.role, self.instructions, self.goal, self.backstory)
        summary = latest_summary(self.summaries.messages_since(0), len(history))
        options: dict[str, Any] = {
            "system": system,
            "message": message,
            "history": history,
            "budget": self._message_budget(),
            "counter": self.token_counter,
            "max_turns": self.history_window,
            "context": context,
        }
        request = assemble(**options, summary=str(summary["content"]) if summary else "")
        covered = int(summary["covers"][1]) if summary else 0
        if needs_compaction(history, covered, request.window_start, self.compact_every):
            summary = await self._compact(client, history, summary, request.window_start)
        recalled: list[tuple[int, list[Message]]] = []
        if self.memory and self.recall_turns and request.window_start > 0:
            recalled = await self._recall(message, request.window_start)
        return assemble(
            **options, recalled=recalled, summary=str(summary["content"]) if summary else ""
        )

    def _message_budget(self) -> int:
        """The budget less what the tool schemas cost (they travel with every request)."""
        if not self.tools:
            return self.context_budget
        schemas = self.token_counter.count(json.dumps(self.tools.schemas))
        return max(self.context_budget - schemas, self.context_budget // 2)

    async def _compact(
        self, client: ChatClient, history: Sequence[Message], previous: Message | None, upto: int
    ) -> Message:
        """One summary call (see ``compaction.compact``); the record is saved with the turn."""

        async def complete(messages: list[Message]) -> Any:
            return await bounded(
                client.acomplete(messages, None, None),
                self.session.timeout,
                f"agent {self.name!r}: summary request (model {self.llm.model!r})",
            )

        record = await compact(
            history=history,
            previous=previous,
            upto=upto,
            complete=complete,
            counter=self.token_counter,
            max_tokens=max(200, self.context_budget // 5),
            input_tokens=self.context_budget,
            model=self.llm.model,
        )
        self.summaries.append(record)
        return record

    async def _recall(self, message: str, before: int) -> list[tuple[int, list[Message]]]:
        """Older turns related to ``message`` from the session's memory; none, and recall
        off for this agent, when the memory extra is not installed."""
        if self._recall_missing is not None or not message.strip():
            return []
        try:
            return await self.session.recall_turns(
                self.log_name, message, before, self.recall_turns
            )
        except MissingDependencyError as exc:
            self._memory_off(exc)
            return []

    def _memory_off(self, error: MissingDependencyError) -> None:
        """Memory off for this agent; the notice of why, and how to turn it on, once."""
        self._recall_missing = str(error)
        if not _memory_notice.is_set():
            _memory_notice.set()
            notice = MEMORY_OFF_NOTICE.format(name=self.name, install=install_line("memory"))
            logging.getLogger("praisonsession").warning(notice)  # stderr unless configured

    def _index_ahead(self) -> bool:
        """On the first turn of this agent in this process, start indexing the turns no window
        can hold (those before the last ``history_window`` turns), beside the search for
        context: memory then opens with the model loading while chromadb imports, and the
        saved vectors are read meanwhile, so a resumed agent's first recall only ranks.
        Whether it started."""
        if self._indexed_to or not (self.memory and self.recall_turns) or self._recall_missing:
            return False
        if not self.history_window:
            return False
        history = self.history.view()
        users = 0
        for start in range(len(history) - 1, -1, -1):
            if history[start].get("role") == "user":
                users += 1
                if users == self.history_window:
                    break
        else:
            return False  # the whole conversation may fit the window: nothing to recall
        if start <= 0:
            return False
        self._indexed_to = start
        self._start_indexing(start)
        return True

    def _index_meanwhile(self, before: int, window_start: int) -> None:
        """Embed the saved turns in the background (each once), so that when they leave the
        window the next recall finds them indexed and only ranks (a failure here only moves
        the indexing to that recall). While the whole conversation still fits the window
        nothing can be recalled, so nothing is embedded: a short chat costs no embedding.

        Turns are embedded in batches, not one per turn: only the turns before the window
        are searched, so the index may lag the conversation by up to a window. It catches up
        (to the newest turn) once less than half the window is indexed ahead of the window's
        start; a batch of ten short turns costs half what ten single ones do."""
        if not (self.memory and self.recall_turns) or self._recall_missing or before <= 0:
            return
        if window_start <= 0:
            return
        if self._indexed_to > before:  # the history was cleared or rewritten since
            self._indexed_to = 0
        if self._indexed_to - window_start >= (before - window_start) // 2:
            return  # enough indexed ahead: the next turns to leave the window are done
        self._indexed_to = before
        self._start_indexing(before)

    def _start_indexing(self, before: int) -> None:
        task = asyncio.ensure_future(self.session.index_turns(self.log_name, before))
        self._indexing.add(task)
        task.add_done_callback(_forget(self._indexing))

    async def _turn(
        self, client: ChatClient, request: Request, message: str
    ) -> tuple[list[Message], dict[str, int]]:
        """The new messages of one turn: the user's, tool calls and results, the answer.

        At most ``max_tool_rounds`` rounds of tool calls; the request after the last round says
        ``tool_choice="none"``, so the model has to answer in text. The history keeps the user's
        message whole even when the request carried it cut; tool results that would overflow
        the budget are cut in the request only. Returns the messages and the turn's summed
        ``usage``.
        """
        prefix = request.messages[:-1]
        sent = request.messages[-1]
        room: int | None = None  # counted only if tool results have to fit in
        turn: list[Message] = [{"role": "user", "content": message}]
        usage: dict[str, int] = {}
        rounds = 0
        while True:
            choice = "none" if self.tools and rounds >= self.max_tool_rounds else None
            current = [sent, *turn[1:]]
            if len(current) > 1:
                if room is None:
                    spent = sum(message_tokens(m, self.token_counter) for m in prefix)
                    room = request.budget - spent
                current = fit_turn(current, room, self.token_counter)
            reply = await bounded(
                client.acomplete(prefix + current, self.tools.schemas, choice),
                self.session.timeout,
                f"agent {self.name!r}: one LLM request (model {self.llm.model!r})",
            )
            add_usage(usage, reply.usage)
            if reply.tool_calls and choice is None:
                turn.append(reply.to_message())
                for call in reply.tool_calls:
                    result = await self.tools.run(call.name, call.arguments)
                    turn.append({"role": "tool", "tool_call_id": call.id, "content": result})
                rounds += 1
                continue
            text = reply.content or ""
            if reply.tool_calls and not text:  # it ignored tool_choice="none"
                text = (
                    f"(I stopped after {rounds} rounds of tool calls, the limit for one "
                    "message. Ask me to continue.)"
                )
            turn.append({"role": "assistant", "content": text})
            return turn, usage

    def clear_history(self) -> None:
        """Forget the conversation, here and in the store."""
        runtime.run(self.aclear_history(), what=f"agent {self.name!r}: clear_history")

    async def aclear_history(self) -> None:
        """``clear_history`` for async code (the saved vectors of its turns go too)."""
        from ..recall.memory.turn_vectors import PREFIX

        async with self._turn_lock():
            self.history.clear()
            self.summaries.clear()
            self.usage.clear()
            await self._save()
            if await self.session.message_count(PREFIX + self.log_name):
                await self.session.clear_messages(PREFIX + self.log_name)

    # -- plumbing -------------------------------------------------------------------------

    def _turn_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._turn_locks.get(loop)
        if lock is None:
            lock = self._turn_locks.setdefault(loop, asyncio.Lock())
        return lock

    def _connect(self) -> ChatClient:
        if not self.llm.configured:
            raise LLMNotConfiguredError(self.name) from None
        from ..llm.client import ChatClient  # requests and tenacity load here, on first use

        self._client = ChatClient(self.llm)
        return self._client

    async def _context(self, query: str) -> str:
        """Memory and knowledge for this message, from the session.

        Memory is on by default, and the core install has no memory extra: then the agent
        chats without memory (knowledge, asked for by name, still raises) and says so once.
        """
        if self.memory and self._recall_missing is None:
            try:
                return (await self.session.get_context(query, self.context_items)).strip()
            except MissingDependencyError as exc:
                if self.knowledge is not None:
                    raise
                self._memory_off(exc)
                return ""
        if self.knowledge is not None:
            hits = await self.session.search_knowledge(query, self.context_items)
            return "\n".join(f"• {hit['text']}" for hit in hits)
        return ""

    async def _save(self) -> None:
        await self.session.save_modules(**{self.key: self})

    async def _load(self) -> None:
        await self.session.load_modules(**{self.key: self})
        escaped = escaped_module_key(self.name)
        if self.history or escaped == self.key:
            return
        if await self.session.message_count(f"{escaped}.history"):  # saved before readable names
            self.key = escaped
            await self.session.load_modules(**{self.key: self})

    def close(self) -> None:
        """Release the HTTP connections (the agent reconnects if used again)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- reading --------------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self.llm.model

    @property
    def log_name(self) -> str:
        """Where the session keeps this agent's conversation: the log that ``read_messages``,
        ``message_count`` and ``fork(at_message=(log_name, n))`` name."""
        return f"{self.key}.history"

    @property
    def chat_history(self) -> MessageLog:
        """The live history (PraisonAI's name)."""
        return self.history

    @property
    def turns(self) -> int:
        """How many user messages the history holds."""
        return sum(1 for message in self.history if message.get("role") == "user")

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model!r}, turns={self.turns})"

    __str__ = __repr__

    def _repr_html_(self) -> str:
        rows = [
            ("name", self.name),
            ("role", self.role),
            ("model", self.model),
            ("endpoint", redact_url(self.llm.base_url)),
            ("turns", self.turns),
            ("tools", ", ".join(self.tools.tools) or "none"),
        ]
        last = [m for m in self.history[-4:] if m.get("role") in ("user", "assistant")]
        rows += [(m["role"], _short(m.get("content"))) for m in last]
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
            f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>praisonsession Agent</caption>{body}</table>"


class TurnKeyIndex:
    """Where each idempotency key's turn starts in a history, so that a retried turn is
    answered with its saved reply: ``reply`` costs the same at 10 or 10,000 turns.

    It reads only the messages added since it last looked; a history edited other than by
    appending (its ``revision`` moved, or it got shorter) is read again from the start.
    """

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        self._starts: dict[str, int] = {}
        self._read = 0
        self._revision = -1

    def reply(self, history: MessageLog, turn_key: str) -> str | None:
        """The reply of the turn saved under ``turn_key``, or None if there is none."""
        if history.revision != self._revision or len(history) < self._read:
            self.forget()
            self._revision = history.revision
        if len(history) > self._read:
            for offset, message in enumerate(history.messages_since(self._read)):
                metadata = message.get("metadata")
                if message.get("role") == "user" and isinstance(metadata, dict):
                    key = metadata.get(TURN_KEY)
                    if isinstance(key, str):
                        self._starts[key] = self._read + offset
            self._read = len(history)
        start = self._starts.get(turn_key)
        if start is None:
            return None
        return _reply_from(history, start)


def _reply_from(history: MessageLog, start: int) -> str | None:
    """The final answer of the turn whose user message is at ``start``."""
    reply = None
    for message in history.messages_since(start + 1):
        if message.get("role") == "user":
            break
        if message.get("role") == "assistant" and not message.get("tool_calls"):
            reply = message.get("content")
    return None if reply is None else str(reply)


def _forget(tasks: set[asyncio.Future[Any]]) -> Callable[[asyncio.Future[Any]], None]:
    def done(task: asyncio.Future[Any]) -> None:
        tasks.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a failed indexing is retried by the next recall

    return done


def _short(content: Any, limit: int = 120) -> str:
    text = "" if content is None else str(content)
    return text if len(text) <= limit else text[: limit - 1] + "…"
