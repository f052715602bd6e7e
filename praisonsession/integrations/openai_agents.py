"""The OpenAI Agents SDK's sessions on praisonsession stores: :class:`PraisonSession`.

``Runner.run(agent, "hi", session=PraisonSession("chat_1", store="sqlite://chat.db"))`` keeps
the conversation as one of our sessions, ``(user_id, session_id)``. Its items are the
append-only message log :data:`LOG_NAME` (``openai.items``), one message per item, each the
JSON the SDK handed over; so ``Session(...)`` lists it, and ``praisonsession
show/export/import/fork/snapshot/erase-user``, the browser, TTL, encryption at rest and
archives work on it as on any session.

How the SDK's operations map onto the store's record operations (``StoreBackend``):

- ``add_items``: one ``append_log``, atomic on every backend, so writers in many processes
  never lose or reorder each other's items; order is the log's sequence, never a clock.
- ``get_items(limit=N)``: one ``read_log`` from ``-N``: the tail, in one step, at a cost that
  does not grow with the history.
- ``pop_item``: ``truncate_log`` of the last item only if the log still holds as many items
  as this session last saw it hold (after its own add, pop, clear or whole read; else
  ``count_log`` first): one step when nobody else wrote meanwhile. Another writer's change
  in between is a ``ConflictError``, and the pop counts and tries again. No item is popped
  twice, whatever the number of processes.
- ``clear_session``: the log emptied in one step; the session (its metadata, state and
  snapshots) stays.
- ``ping`` (the readiness check of the SDK's network sessions): one ``read_record``, False
  when the store cannot be reached.

The SDK's contract, exactly: ``get_items(limit=N)`` is the raw tail, the last N items as
stored, what the SDK's ``SQLiteSession`` returns; the SDK's Runner drops a tool output whose
call fell out of that window. ``orphan_free=True`` (opt-in) adds an integrity check beyond the
SDK: a tool output (``function_call_output`` and its kin) is then never stored or returned
without its call. ``add_items`` leaves out an output whose call is neither earlier in the same
call nor in the stored log (logging a warning), so a history can never hold one
(openai-agents #4827: every later turn failed with HTTP 400); ``get_items`` leaves out an
output whose call is not earlier in what it returns (at most N items come back, the call is
not pulled in).

Needs the ``openai-agents`` extra; ``import praisonsession`` never imports the SDK, and only
this module does.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from .._internal.checks import check_flag
from .._internal.identifiers import DEFAULT_USER
from ..errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    MissingDependencyError,
    OperationTimeoutError,
    PraisonSessionError,
    SessionExpiredError,
    SessionNotFoundError,
    StoreUnavailableError,
    install_line,
)
from ..stores import LogWrite, SessionBase
from ..stores.api import check_messages
from ._adapter import HeldStore, checked_key

if TYPE_CHECKING:  # the SDK is an optional extra: the type check needs none of it
    from ..settings import Settings

    SessionABC = object
    SessionSettings = Any
    coerce_session_settings: Any
else:
    try:
        from agents.memory import SessionABC, SessionSettings
        from agents.memory.session_settings import coerce_session_settings
    except ImportError as missing:
        raise MissingDependencyError(
            "praisonsession.integrations.openai_agents needs the OpenAI Agents SDK: "
            + install_line("openai-agents")
            + "."
        ) from missing

__all__ = ["LOG_NAME", "PraisonSession", "SessionClosedError"]

T = TypeVar("T")
#: An SDK input item as stored: the JSON object the SDK produced.
Item = dict[str, Any]

#: The message log holding a conversation's items, as ``praisonsession show`` names it.
LOG_NAME = "openai.items"

#: Each kind of tool output, and the kind of call it answers (matched by ``call_id``).
CALL_OF_OUTPUT = {
    "function_call_output": "function_call",
    "custom_tool_call_output": "custom_tool_call",
    "computer_call_output": "computer_call",
    "local_shell_call_output": "local_shell_call",
    "shell_call_output": "shell_call",
    "apply_patch_call_output": "apply_patch_call",
    "program_output": "program",
}
_CALL_KINDS = frozenset(CALL_OF_OUTPUT.values())
#: Items read at first when looking back through the log for the calls a batch answers; the
#: window doubles, so the cost is the distance to the call, not the history.
_LOOK_BACK = 64


class SessionClosedError(PraisonSessionError, RuntimeError):
    """An operation on a ``PraisonSession`` after its ``close()``. A ``RuntimeError``, as the
    SDK's own sessions raise."""


class PraisonSession(HeldStore, SessionABC):
    """The SDK's ``Session`` protocol (``agents.memory.SessionABC``) over a praisonsession store.

    ``store`` is what ``Session(store=...)`` takes: a URL (``memory://``, ``json:///dir``,
    ``sqlite:///abs/path.db`` or ``sqlite://relative.db``, ``redis://...``, ``postgresql://...``),
    a store instance, or None for the default store (SQLite under ``./.praisonsession/``).
    ``session_settings`` is the SDK's ``SessionSettings`` (or a dict of its fields): its
    ``limit`` is what ``get_items()`` reads when given none. ``settings`` is praisonsession's
    (``Settings`` or a dict): TTL, durability, ``encryption_key``... ``orphan_free=True``
    never stores or returns a tool output without its call (off by default: the SDK's
    ``SQLiteSession`` returns the raw tail, and so does this session).

    One instance may be used from several threads, each running its own event loop.
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        *,
        user_id: str | None = DEFAULT_USER,
        store: SessionBase | str | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        settings: Settings | dict[str, Any] | None = None,
        orphan_free: bool = False,
    ) -> None:
        if not isinstance(session_id, str):
            raise InvalidIdError(
                f"PraisonSession needs a session_id (a str), got {session_id!r}; e.g. "
                "PraisonSession('chat_123', store='sqlite://chat.db')."
            )
        # before the store is opened; None is the default user, as for Session
        self._key = checked_key(session_id, DEFAULT_USER if user_id is None else user_id)
        self._hold(store, settings)
        self._backend = self._store.backend
        self._closed = False
        self._closing: asyncio.Task[None] | None = None
        #: How many items the log held when this session last wrote or read it whole: what a
        #: pop expects first (the store checks it), None when unknown.
        self._held: int | None = None
        #: The conversation's id, as the SDK names it.
        self.session_id: str = self._key.session_id
        #: The SDK's settings of this session (``limit``: what ``get_items()`` returns).
        self.session_settings = _session_settings(session_settings)
        self._orphan_free = check_flag(orphan_free, "orphan_free")

    @property
    def user_id(self) -> str:
        """The user the conversation belongs to (``default_user`` unless given; ``""`` is
        refused: it would be the default user's, another user in the SDK's own sessions)."""
        return self._key.user_id

    def __repr__(self) -> str:
        return (
            f"PraisonSession(session_id={self.session_id!r}, user_id={self.user_id!r}, "
            f"store={self._store.url!r})"
        )

    # -- the SDK's protocol ----------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The latest ``limit`` items (all of them for None, unless ``session_settings``
        has a limit), oldest first, as stored; with ``orphan_free``, a tool output whose call
        is not before it is left out."""
        self._check_open()
        wanted = self._limit(limit)
        if wanted == 0:
            return []
        start = 0 if wanted is None or wanted < 0 else -wanted  # the SDK's negative: all
        items = await self._backend.read_log(self._key, path=LOG_NAME, start=start, stop=None)
        if start == 0:
            self._held = len(items)
        return _paired(items, ())[0] if self._orphan_free else items

    async def add_items(self, items: list[Item]) -> None:
        """Append ``items`` in one atomic step; with ``orphan_free``, a tool output whose call
        is neither in ``items`` before it nor stored is left out, with a warning."""
        self._check_open()
        try:
            batch = check_messages(items)
        except InvalidValueError as exc:
            raise InvalidValueError(
                f"add_items takes a list of the SDK's input items (dicts of JSON data): {exc}"
            ) from None
        if batch:
            await _to_the_end(self._append(batch))

    async def pop_item(self) -> Item | None:
        """Remove the last item and return it; None when there is none."""
        self._check_open()
        return await _to_the_end(self._pop())

    async def clear_session(self) -> None:
        """Remove every item; the session itself (metadata, state, snapshots) stays."""
        self._check_open()
        await _to_the_end(self._clear())

    async def ping(self) -> bool:
        """Whether the store answers: True, or False when it cannot be reached or does not
        answer within its bounds (a stopped server, a refused connection). The SDK's network
        sessions (``RedisSession``, ``MongoDBSession``, ``DaprSession``) offer the same
        readiness check, so code written for them runs unchanged. It reads the session's
        record and writes nothing. Any other error (a damaged record, a missing key) is
        raised: the store answered, and something else is wrong. A closed session raises
        ``SessionClosedError``, as theirs raise ``RuntimeError``."""
        self._check_open()
        try:
            await self._backend.read_record(self._key)
        except (StoreUnavailableError, OperationTimeoutError) as exc:
            logging.getLogger("praisonsession").debug("ping: %s", exc)
            return False
        return True

    def close(self) -> None:
        """Release the store's connections (a store passed in as an instance is its owner's
        to close). Later calls raise ``SessionClosedError``; the items stay stored.

        From async code the store is closed on the running loop as soon as it runs again,
        since a synchronous call cannot wait there; to its end, even when the loop ends
        right after (``asyncio.run`` cancels what is left of a loop's tasks)."""
        if self._closed:
            return
        self._closed = True
        if not self._owns_store:
            return
        closing = super().aclose()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None:
            self._closing = loop.create_task(_to_the_end(closing))
            return
        own_loop = asyncio.new_event_loop()  # not asyncio.run: this thread's loop stays set
        try:
            own_loop.run_until_complete(closing)
        finally:
            own_loop.close()

    async def aclose(self) -> None:
        """:meth:`close`, for async code: the store's connections are released when it
        returns."""
        closing, self._closing = self._closing, None
        if not self._closed:
            self._closed = True
            await super().aclose()
        elif closing is None:
            return
        elif closing.get_loop() is asyncio.get_running_loop() and not closing.cancelled():
            await closing  # the close that close() began on this loop
        else:  # that close was cancelled as its loop ended, or runs on another loop: closing
            await super().aclose()  # is idempotent, so the store is closed here all the same

    # -- the work behind them --------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"This PraisonSession is closed, as a SQLiteSession is closed by close(): make "
                f"a new PraisonSession({self.session_id!r}, ...) to go on; its items are kept "
                "in the store."
            )

    def _limit(self, limit: Any) -> int | None:
        """The explicit limit, else the session settings' one: an int or None."""
        if limit is None:
            settings = self.session_settings
            if isinstance(settings, dict):  # the SDK's protocol lets a caller set a dict
                settings = _session_settings(settings)
            limit = getattr(settings, "limit", None)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise InvalidValueError(
                f"limit must be a whole number or None, got {limit!r}; e.g. get_items(limit=20)."
            )
        return limit

    async def _append(self, batch: list[Item]) -> None:
        backend, key = self._backend, self._key
        kept, left = _paired(batch, ()) if self._orphan_free else (batch, [])
        if not left:  # the common case: every output's call is in the batch
            self._held = await backend.append_log(key, write=LogWrite(LOG_NAME, batch, -1))
            return
        needed = {call for call in map(_answered_call, left) if call is not None}
        while True:
            held = await backend.count_log(key, path=LOG_NAME)
            kept, left = _paired(batch, await self._stored_calls(needed, held))
            if left:
                _warn_left_out(self.session_id, left)
            if not kept:
                return
            try:  # only onto the log we looked through: a pop meanwhile may have taken a call
                self._held = await backend.append_log(key, write=LogWrite(LOG_NAME, kept, held))
                return
            except ConflictError:
                continue

    async def _stored_calls(self, needed: set[tuple[str, str]], held: int) -> set[tuple[str, str]]:
        """Which of the ``needed`` calls the first ``held`` items hold, looked for from the
        end in doubling windows: outputs follow their calls closely."""
        found: set[tuple[str, str]] = set()
        stop, window = held, _LOOK_BACK
        while stop > 0 and not needed <= found:
            start = max(0, stop - window)
            for item in await self._backend.read_log(
                self._key, path=LOG_NAME, start=start, stop=stop
            ):
                call = _call(item)
                if call in needed:
                    found.add(call)
            stop, window = start, window * 2
        return found

    async def _pop(self) -> Item | None:
        backend, key = self._backend, self._key
        held = self._held  # what the log held when last seen: no count when still so
        while True:
            if not held:  # unknown, or empty then: only a count tells
                held = self._held = await backend.count_log(key, path=LOG_NAME)
                if held == 0:
                    return None
            try:
                removed = await backend.truncate_log(
                    key, path=LOG_NAME, length=held - 1, expected=held
                )
            except (ConflictError, SessionNotFoundError, SessionExpiredError):
                held = None  # another writer changed the log first: count again
                continue
            self._held = held - 1
            return removed[0] if removed else None

    async def _clear(self) -> None:
        backend, key = self._backend, self._key
        if await backend.count_log(key, path=LOG_NAME):  # an empty log needs no write (or session)
            await backend.write_modules(key, documents={}, writes=[LogWrite(LOG_NAME, [], None)])
        self._held = 0


# -- tool calls and their outputs ----------------------------------------------------------


def _call(item: Item) -> tuple[str, str] | None:
    """The (kind, call_id) of a tool call item, else None."""
    kind, call_id = item.get("type"), item.get("call_id")
    if kind in _CALL_KINDS and isinstance(call_id, str):
        return kind, call_id
    return None


def _answered_call(item: Item) -> tuple[str, str] | None:
    """The (kind, call_id) of the call a tool output answers, else None."""
    kind, call_id = CALL_OF_OUTPUT.get(item.get("type", "")), item.get("call_id")
    if kind is not None and isinstance(call_id, str):
        return kind, call_id
    return None


def _paired(items: list[Item], known: Iterable[tuple[str, str]]) -> tuple[list[Item], list[Item]]:
    """``items`` split into those to keep and the tool outputs whose call is neither among
    ``known`` nor earlier in ``items``. One pass; ``items`` itself when all are kept (a
    conversation's tail is read on every turn)."""
    seen = set(known)
    left: list[int] = []
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind is None:  # a message in the SDK's short form: {"role": ..., "content": ...}
            continue
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            continue
        if kind in _CALL_KINDS:
            seen.add((kind, call_id))
        elif kind in CALL_OF_OUTPUT and (CALL_OF_OUTPUT[kind], call_id) not in seen:
            left.append(index)
    if not left:
        return items, []
    dropped = set(left)
    return (
        [item for index, item in enumerate(items) if index not in dropped],
        [items[index] for index in left],
    )


def _warn_left_out(session_id: str, outputs: list[Item]) -> None:
    ids = ", ".join(sorted({str(item.get("call_id")) for item in outputs}))
    logging.getLogger("praisonsession").warning(
        "Left out %d tool output(s) of session %r whose call is not in it (call_id %s): the "
        "Responses API refuses an output without its call, so storing it would fail every "
        "later turn (openai-agents #4827).",
        len(outputs),
        session_id,
        ids,
    )


# -- settings and writes ---------------------------------------------------------------------


def _session_settings(value: Any) -> Any:
    """The SDK's ``SessionSettings`` from one or from a dict of its fields; unknown fields are
    refused with the SDK's own message ("Unknown session settings: ...")."""
    if value is None:
        return SessionSettings()
    try:
        return coerce_session_settings(value)
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(
            f"{exc}. session_settings takes the SDK's SessionSettings or a dict of its fields, "
            "e.g. {'limit': 20}."
        ) from None


class _ToTheEnd(asyncio.Task):  # type: ignore[type-arg]
    """A write's own task, which refuses the cancel its awaiting caller passes on: asyncio
    then holds the caller's cancel until the write has ended and raises it there. Any other
    cancel (a timeout inside the write: redis-py's ``socket_timeout``, the Redis store's bound
    on an attempt) ends the write's current step as it would anywhere."""

    _caller: Any  # asyncio.Task; cancelling() is Python 3.11's
    _seen: int  # the caller's cancel requests when last looked at

    def cancel(self, msg: Any = None) -> bool:
        asked = self._caller.cancelling()
        if asked > self._seen:  # the caller was asked to cancel: it passes that on to us
            self._seen = asked
            return False
        return super().cancel(msg)


async def _to_the_end(write: Coroutine[Any, Any, T]) -> T:
    """Run a write to its end even when the caller is cancelled meanwhile, and raise the
    cancellation only then: a caller never has to guess whether a write it cancelled was
    applied (the network stores may have applied it before the answer came back).

    The caller awaits the write's task itself, which refuses the cancel its caller passes
    on (Python 3.11's ``Task.cancelling`` tells it apart), so the caller wakes once, when the
    write ends, and asyncio raises its cancel there; ``asyncio.shield``, which Python 3.10
    keeps, took two more turns of the loop and a future of its own."""
    caller = asyncio.current_task()
    if caller is None or sys.version_info < (3, 11):
        return await _shielded(write)
    task: _ToTheEnd = _ToTheEnd(write, loop=asyncio.get_running_loop())
    task._caller, task._seen = caller, caller.cancelling()
    result: T = await task
    return result


async def _shielded(write: Coroutine[Any, Any, T]) -> T:
    """:func:`_to_the_end` through ``asyncio.shield``, waiting again after each cancel."""
    task = asyncio.ensure_future(write)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            if not task.done():  # the caller was cancelled, not the write: wait for it
                cancelled = cancelled or exc
                continue
            if cancelled is not None:
                raise cancelled from None
            raise
        except BaseException:
            if cancelled is not None:
                raise cancelled from None
            raise
        if cancelled is not None:
            raise cancelled
        return result
