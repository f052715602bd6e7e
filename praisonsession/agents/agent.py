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
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .. import runtime, tracing
from ..errors import InvalidValueError
from ..execution import bounded, offload
from ..identifiers import check_key, filename_for, readable_name
from ..llm.config import LLMConfig, resolve_llm
from ..llm.errors import LLMNotConfiguredError
from ..redaction import redact_url
from ..state.message_log import MessageLog
from ..state.module import StateModule
from .prompt import for_model, recent_turns, system_prompt
from .tools import Toolbox

if TYPE_CHECKING:
    from ..llm.client import ChatClient
    from .host import AgentHost

__all__ = ["TURN_KEY", "Agent", "module_key"]

Message = dict[str, Any]
#: Where a turn's idempotency key is kept: ``user_message["metadata"][TURN_KEY]``.
TURN_KEY = "turn_key"


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
    which restores the saved history and returns the live agent if the session has one.

    Options beyond PraisonAI's: ``history_window`` (turns of history sent, None for all),
    ``max_tool_rounds`` (tool-call rounds per turn), ``context_items`` (``max_items`` for the
    session's ``get_context``), ``goal`` and ``backstory`` (added to the system message).
    """

    def __init__(
        self,
        session: AgentHost,
        name: str,
        role: str = "Assistant",
        instructions: str | None = None,
        tools: Iterable[Callable[..., Any]] | None = None,
        memory: bool = True,
        knowledge: Iterable[str] | bool | None = None,
        llm: str | Mapping[str, Any] | LLMConfig | None = None,
        *,
        goal: str | None = None,
        backstory: str | None = None,
        history_window: int | None = 20,
        max_tool_rounds: int = 5,
        context_items: int = 3,
    ) -> None:
        super().__init__()
        self.session = session
        self.name = check_key(name, "agent name")
        self.key = module_key(self.name)
        self.history = MessageLog()
        # one turn at a time per event loop (the sync chat and async users may use two loops)
        self._turn_locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._client: ChatClient | None = None
        self.configure(
            role=role,
            instructions=instructions,
            tools=tools,
            memory=memory,
            knowledge=knowledge,
            llm=llm,
            goal=goal,
            backstory=backstory,
            history_window=history_window,
            max_tool_rounds=max_tool_rounds,
            context_items=context_items,
        )

    def configure(
        self,
        role: str = "Assistant",
        instructions: str | None = None,
        tools: Iterable[Callable[..., Any]] | None = None,
        memory: bool = True,
        knowledge: Iterable[str] | bool | None = None,
        llm: str | Mapping[str, Any] | LLMConfig | None = None,
        *,
        goal: str | None = None,
        backstory: str | None = None,
        history_window: int | None = 20,
        max_tool_rounds: int = 5,
        context_items: int = 3,
    ) -> None:
        """Set everything but the name and the history (what a repeated ``Agent(...)`` does)."""
        for label, text in (
            ("role", role),
            ("instructions", instructions),
            ("goal", goal),
            ("backstory", backstory),
        ):
            if text is not None and not isinstance(text, str):
                raise InvalidValueError(f"{label} must be a str, got {type(text).__name__}.")
        for label, count, low in (
            ("history_window", history_window, 0),
            ("max_tool_rounds", max_tool_rounds, 0),
            ("context_items", context_items, 1),
        ):
            if count is None and label == "history_window":
                continue
            if isinstance(count, bool) or not isinstance(count, int) or count < low:
                raise InvalidValueError(f"{label} must be an int >= {low}, got {count!r}.")
        config = resolve_llm(llm, self.session.settings, timeout=self.session.timeout)
        toolbox = Toolbox(tools or ())
        self.role = role
        self.instructions = instructions
        self.goal = goal
        self.backstory = backstory
        self.memory = bool(memory)
        self.knowledge = _sources(knowledge)
        self.tools = toolbox
        self.history_window = history_window
        self.max_tool_rounds = max_tool_rounds
        self.context_items = context_items
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
        async with self._turn_lock():
            await self.session.refresh_modules(**{self.key: self})
            if turn_key is not None:
                done = _reply_of_turn(self.history.messages_since(0), turn_key)
                if done is not None:
                    return done
            context = await self._context(message)
            system = system_prompt(
                self.name, self.role, self.instructions, self.goal, self.backstory, context
            )
            prefix: list[Message] = [{"role": "system", "content": system}]
            prefix += for_model(recent_turns(self.history.messages_since(0), self.history_window))
            turn = await self._turn(client, prefix, message)
            if turn_key is not None:
                turn[0]["metadata"] = {TURN_KEY: turn_key}
            self.history.extend(turn)
            await self._save()
        return turn[-1]["content"]

    async def _turn(self, client: ChatClient, prefix: list[Message], message: str) -> list[Message]:
        """The new messages of one turn: the user's, tool calls and results, the answer.

        At most ``max_tool_rounds`` rounds of tool calls; the request after the last round says
        ``tool_choice="none"``, so the model has to answer in text.
        """
        turn: list[Message] = [{"role": "user", "content": message}]
        rounds = 0
        while True:
            choice = "none" if self.tools and rounds >= self.max_tool_rounds else None
            reply = await bounded(
                offload(client.complete, prefix + turn, self.tools.schemas, choice),
                self.session.timeout,
                f"agent {self.name!r}: one LLM request (model {self.llm.model!r})",
            )
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
            return turn

    def clear_history(self) -> None:
        """Forget the conversation, here and in the store."""
        runtime.run(self.aclear_history(), what=f"agent {self.name!r}: clear_history")

    async def aclear_history(self) -> None:
        """``clear_history`` for async code."""
        async with self._turn_lock():
            self.history.clear()
            await self._save()

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
        """Memory and knowledge for this message, from the session."""
        if self.memory:
            return (await self.session.get_context(query, self.context_items)).strip()
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


def _reply_of_turn(history: list[Message], turn_key: str) -> str | None:
    """The reply of the turn saved under ``turn_key``, or None if there is none.

    Scans from the end: a retried request comes soon after the first attempt.
    """
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        metadata = message.get("metadata")
        if (
            message.get("role") == "user"
            and isinstance(metadata, dict)
            and metadata.get(TURN_KEY) == turn_key
        ):
            reply = None
            for position in range(index + 1, len(history)):
                later = history[position]
                if later.get("role") == "user":
                    break
                if later.get("role") == "assistant" and not later.get("tool_calls"):
                    reply = later.get("content")
            return None if reply is None else str(reply)
    return None


def _sources(knowledge: Iterable[str] | bool | None) -> list[str] | None:
    """PraisonAI takes a list of sources, or True for "use the session's knowledge"."""
    if knowledge is None or knowledge is False:
        return None
    if knowledge is True:
        return []
    if isinstance(knowledge, str):
        return [knowledge]
    return [str(source) for source in knowledge]


def _short(content: Any, limit: int = 120) -> str:
    text = "" if content is None else str(content)
    return text if len(text) <= limit else text[: limit - 1] + "…"
