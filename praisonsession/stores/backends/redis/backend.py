"""``RedisBackend``: the record operations, each one script call (see the package doc).

One module past 500 lines, on purpose: each method is the few lines that pack one operation's
arguments for its Lua script and read its reply, and they read best side by side. What is not
one operation lives in the package's other modules (keys, scripts, replies, retries, clients).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .... import clock
from ...._internal.checks import check_count, check_seconds
from ...._internal.json_data import add_numbers, decode, dumps, loads_joined, utf8_encodable
from ...._internal.runtime import loop_running_here
from ....errors import (
    ConflictError,
    InvalidValueError,
    MissingDependencyError,
    SessionCorruptedError,
    SessionNotFoundError,
    install_line,
)
from ...backend import (
    TTL,
    Capabilities,
    ForeignSessions,
    Key,
    LogWrite,
    StoreBackend,
    StoredModules,
)
from ...durability import check_durability
from ...record import SNAPSHOT_OWNER, SessionContents, SessionInfo, copy_conflict, create_conflict
from ...reserved import user_digest
from .arguments import flag, json_number, metadata_args, seconds, ttl_args
from .clients import LoopClients
from .inline import InlineClient
from .keys import KeyLayout, sole_agentscope_key, user_of_segment
from .lane import LaneUnsupported, ScriptLane
from .replies import as_text, error_for, json_value, session_info, utf8
from .retries import attempt_timeout, call_with_retries, within
from .scripts import OpTokens, load_scripts
from .url import display_url

__all__ = ["RedisBackend"]

T = TypeVar("T")

_PURGE_BATCH = 500
_SCAN_BATCH = 500  # keys SCAN looks at per call of users.lua
_KEYS_REMEMBERED = 1024  # meta key names a store remembers, by session
_MAX_INCREMENT_RETRIES = 1000
_NOT_ADOPTED = (
    "it was not imported. Import it for the right one explicitly: "
    "store.import_agentscope(key, session_id=..., user_id=...)."
)
# Statuses a caller handles itself; any other is raised (replies.error_for).
_ANSWERS = frozenset({"ok", "none", "slow", "retry", "conflict"})
#: Mark AgentScope's key (KEYS[1]) of a session adopted in the imported set (KEYS[3]); its
#: value, unless the session exists (KEYS[2]: its meta hash) or was adopted already.
_TAKE_AGENTSCOPE = """
local value = redis.call('GET', KEYS[1])
local exists = redis.call('EXISTS', KEYS[2]) == 1
if redis.call('SADD', KEYS[3], ARGV[1]) == 0 or exists then return false end
return value
"""


def _import_redis() -> Any:
    try:
        import redis.asyncio
        import redis.exceptions
    except ImportError:
        raise MissingDependencyError(
            "RedisSession needs the 'redis' package (redis-py 5 or newer). Install it with: "
            f"{install_line('redis')}."
        ) from None
    return redis


class RedisBackend(StoreBackend):
    """The record operations on a Redis server (see :class:`RedisSession` for the options)."""

    capabilities = Capabilities(runs_inline=True)

    def __init__(
        self,
        host: str = "localhost",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        connection_pool: Any = None,
        key_ttl: float | None = None,
        key_prefix: str = "",
        *,
        client: Any = None,
        default_ttl: float | None = None,
        sliding_ttl: bool = True,
        retry_attempts: int = 6,
        retry_max_delay: float = 2.0,
        socket_timeout: float | None = 5.0,
        socket_connect_timeout: float | None = 2.0,
        durability: str = "process",
        **kwargs: Any,
    ) -> None:
        if key_ttl is not None and default_ttl is not None and key_ttl != default_ttl:
            raise InvalidValueError(
                f"key_ttl={key_ttl!r} and default_ttl={default_ttl!r} disagree; key_ttl is "
                "AgentScope's name for default_ttl, so pass only one of them."
            )
        super().__init__(
            default_ttl=default_ttl if default_ttl is not None else key_ttl,
            sliding_ttl=sliding_ttl,
        )
        if not isinstance(key_prefix, str) or "\0" in key_prefix:
            raise InvalidValueError(f"key_prefix must be a str without NUL, got {key_prefix!r}.")
        check_count(retry_attempts, "retry_attempts", low=1)
        check_seconds(retry_max_delay, "retry_max_delay", example="2")
        _import_redis()
        self.durability = check_durability(durability)
        self._server_checked = durability != "power"
        self._scripts = load_scripts()
        self.key_prefix = key_prefix
        self._layout = KeyLayout(key_prefix)
        self.retry_attempts = retry_attempts
        self.retry_max_delay = float(retry_max_delay)
        self._options: dict[str, Any] = {
            "host": host,
            "port": int(port),
            "db": int(db),
            "password": password,
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": socket_connect_timeout,
            **kwargs,
        }
        if "retry" not in kwargs:  # retries.py retries here; redis-py's own would stack up
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            self._options["retry"] = Retry(NoBackoff(), 0)
        timeout = max(socket_timeout or 0.0, socket_connect_timeout or 0.0)
        self._tokens = OpTokens(self.retry_max_delay + retry_attempts * timeout)
        given_pool = connection_pool or (client.connection_pool if client is not None else None)
        self.url = display_url(
            host,
            port,
            db,
            password,
            ssl=bool(self._options.get("ssl")),
            key_prefix=key_prefix,
            pool=given_pool,
        )
        # Clients made here leave socket_timeout to one bound per attempt (attempt_timeout);
        # a given client or pool keeps its own settings.
        self._attempt_timeout = None if given_pool is not None else attempt_timeout(socket_timeout)
        loop_options = self._options
        if self._attempt_timeout is not None:
            loop_options = {**self._options, "socket_timeout": None}
        self._clients = LoopClients(loop_options, client=client, pool=connection_pool)
        # A lane's reads have no socket_timeout of their own: the attempt's bound is theirs.
        self._lanes = self._attempt_timeout is not None or not socket_timeout
        # get_client() hands a client out: its calls keep redis-py's own socket_timeout
        self._handed_out = (
            self._clients if self._attempt_timeout is None else LoopClients(self._options)
        )
        # An injected client or pool is an asyncio one: its calls go through the event loop.
        self._inline = None if given_pool is not None else InlineClient(self._options)
        self.capabilities = Capabilities(runs_inline=self._inline is not None)
        self._meta_keys: dict[Key, str] = {}
        self._log_keys: dict[tuple[Key, str], list[str]] = {}
        #: Sessions seen with an expiry: their reads and truncations skip the fast-path
        #: scripts (read_tail.lua, truncate_tail.lua), which decline them.
        self._timed: set[Key] = set()
        self._settings_for: tuple[Any, ...] = ()
        self._settings_text = ""

    # -- clients ----------------------------------------------------------------------------

    def get_client(self) -> Any:
        """The ``redis.asyncio.Redis`` client of the running event loop (AgentScope's call).

        Call it inside a coroutine. It is closed by ``close()`` unless it was passed in.
        """
        return self._handed_out.get_nowait()

    async def close(self) -> None:
        """Close the clients this store created, in every loop; an injected client stays open.

        The store stays usable: the next call connects again.
        """
        if self._inline is not None:
            self._inline.close()
        await self._clients.close()
        if self._handed_out is not self._clients:
            await self._handed_out.close()

    async def _client(self) -> Any:
        """The running loop's client; with no loop on this thread, the blocking one."""
        if self._inline is not None and not loop_running_here():
            client = self._inline
        else:
            client = await self._clients.get()
        if not self._server_checked:
            await self._check_server_durability(client)
        return client

    async def _lane(self) -> ScriptLane | None:
        """The running loop's lane for the first attempt of a script call (``lane.py``)."""
        lane = await self._clients.lane() if self._lanes else None
        return lane if lane is not None and lane.usable else None

    async def server_durability(self) -> dict[str, str] | None:
        """The server's ``appendonly`` and ``appendfsync``, and what a write acknowledged
        there survives (``durability``: "power", "process" or "memory"); None when the server
        refuses ``CONFIG GET`` (managed services often do)."""
        inline = self._inline is not None and not loop_running_here()
        client = self._inline if inline else await self._clients.get()
        return await within(_server_durability(client), self._attempt_timeout)

    async def _check_server_durability(self, client: Any) -> None:
        self._server_checked = True  # once, even when several threads connect at once
        try:
            found = await within(_server_durability(client), self._attempt_timeout)
        except BaseException:
            self._server_checked = False  # unreachable now: the next connection checks
            raise
        if found is not None and found["durability"] != "power":
            import logging

            logging.getLogger("praisonsession").warning(
                "durability='power' was asked of %s, but that server runs appendonly=%s, "
                "appendfsync=%s, so a write it acknowledged does not survive %s. Set appendonly "
                "yes and appendfsync always in redis.conf for writes that survive a power loss.",
                self.url,
                found["appendonly"],
                found["appendfsync"],
                "a power loss" if found["durability"] == "process" else "a restart of the server",
            )

    # -- calling the scripts ----------------------------------------------------------------

    def _keys(self, key: Key) -> list[str]:
        """Where the scripts keep a session (``KeyLayout.session_keys``), for tests and
        inspection."""
        return self._layout.session_keys(key)

    def _agentscope_key(self, key: Key) -> str:
        return self._layout.agentscope(key)

    def _settings(self) -> str:
        """ARGV[1] of the per-session scripts (checked on every call: the TTL knobs may
        change; written out again only when they did). Its last field is the time now when a
        test installed a clock (``praisonsession.clock``), else empty: the server's clock."""
        knobs = (self.default_ttl, self.sliding_ttl)
        if knobs != self._settings_for:
            layout, ttl = self._layout, seconds(self.default_ttl)
            sliding = flag(self.sliding_ttl)
            self._settings_text = (
                f"{layout.namespace}\0{layout.raw_prefix}\0{sliding}\0{ttl}\0"
                f"{self._tokens.ttl_ms}\0"
            )
            self._settings_for = knobs
        if clock.installed():
            return self._settings_text + self._clock_override()
        return self._settings_text

    def _clock_override(self) -> str:
        """The server's clock decides expiry, unless a test installed one
        (``praisonsession.clock``): then its time goes with the call."""
        return f"{clock.now():.6f}" if clock.installed() else ""

    def _common_args(self, key: Key, token: str) -> list[Any]:
        """ARGV 1-5 of a per-session script: settings, ids, op token, "check the token"."""
        return [self._settings(), key.user_id, key.session_id, token, "0"]

    def _meta_key(self, key: Key) -> str:
        meta = self._meta_keys.get(key)
        if meta is None:
            if len(self._meta_keys) >= _KEYS_REMEMBERED:
                self._meta_keys.clear()
            meta = self._meta_keys[key] = self._layout.meta(key)
        return meta

    def _tail_keys(self, key: Key, path: str) -> list[str]:
        """KEYS of read_tail.lua: the session's meta hash and the log (a tail is read on
        every turn: the names are made once)."""
        keys = self._log_keys.get((key, path))
        if keys is None:
            if len(self._log_keys) >= _KEYS_REMEMBERED:
                self._log_keys.clear()
            keys = [self._meta_key(key), self._layout.log(key, path)]
            self._log_keys[key, path] = keys
        return keys

    async def _retrying(self, work: Callable[[Any, int], Awaitable[T]]) -> T:
        """``work(client, attempt)`` with this store's retry bounds (``call_with_retries``)."""
        return await call_with_retries(
            work,
            self._client,
            attempts=self.retry_attempts,
            max_delay=self.retry_max_delay,
            url=self.url,
            timeout=self._attempt_timeout,
        )

    async def _call(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run one of the scripts (EVALSHA, or EVAL when the server does not have it yet).

        The arguments of a write hold an op token (positions 3 and 4: token, check). The
        first attempt records the token with its reply; a retry asks the server for that
        reply instead of applying the write again, since a lost connection may have dropped
        only the answer.
        """
        script = self._scripts[name]
        failed: Exception | None = None
        started = 0.0
        inline, on_loop = self._inline, loop_running_here()
        if inline is not None and self._server_checked and not on_loop:
            started = time.monotonic()
            try:  # the first attempt, straight through: most calls are just this
                return inline.run_script(script, keys, args)
            except Exception as exc:  # the retries below decide what it means
                failed = exc
        elif self._server_checked and on_loop:
            started = time.monotonic()
            try:  # the same on a loop, within the attempt's bound, in its lane if it has one
                lane = await self._lane()
                if lane is not None:
                    try:
                        return await within(lane.run(script, keys, args), self._attempt_timeout)
                    except LaneUnsupported:  # nothing was sent: the attempt goes through redis-py
                        pass
                client = await self._client()
                return await within(script.run(client, keys, args), self._attempt_timeout)
            except Exception as exc:
                failed = exc

        async def work(client: Any, attempt: int) -> Any:
            if attempt > 1 and script.writes:
                args[4] = "1"
            return await script.run(client, keys, args)

        return await call_with_retries(
            work,
            self._client,
            attempts=self.retry_attempts,
            max_delay=self.retry_max_delay,
            url=self.url,
            failed=failed,
            started=started,
            timeout=self._attempt_timeout,
        )

    async def _session(
        self, name: str, key: Key, args: list[Any], must_exist: bool = False, adopt: bool = True
    ) -> list[Any]:
        """Run a per-session script; when it finds AgentScope's key of a session not here,
        offer it to the key guard, which adopts it (``ForeignSessions``)."""
        meta = [self._meta_key(key)]
        writes = self._scripts[name].writes
        token = self._tokens.new(_digest(key.user_id)) if writes else ""
        reply = await self._call(name, meta, [*self._common_args(key, token), *args])
        status = as_text(reply[0])
        if status == "import":
            if not adopt:  # the session is not here (yet): say so, import nothing
                return ["ok", None]
            raise self._offer(key)
        if status in _ANSWERS:
            return [status, *reply[1:]]
        raise error_for(status, reply, key, self.url)

    async def _import_agentscope(self, key: Key, as_key: str) -> None:
        """Import the session AgentScope's RedisSession left under ``as_key`` as ``key``."""

        async def fetch(client: Any, attempt: int) -> Any:
            return await client.get(as_key)

        modules = self._agentscope_modules(key, as_key, await self._retrying(fetch))
        if modules is None:
            return
        args = self._common_args(key, "")
        for name, document in modules.items():
            args += [name, dumps(document)]
        await self._call("import", [self._layout.meta(key)], args)

    def _offer(self, key: Key) -> ForeignSessions:
        """AgentScope's key of the session ``key``, offered to the key guard to adopt."""
        # a key only this session can own: one whose ids hold ':session:' is never adopted
        sole_agentscope_key(self._layout.agentscope(key), key, _NOT_ADOPTED)
        return ForeignSessions([key], functools.partial(self._take_agentscope, key), self.url)

    def _agentscope_modules(self, key: Key, as_key: str, value: Any) -> dict[str, Any] | None:
        """The module documents of AgentScope's ``value`` (None: no key), checked."""
        if value is None:
            return None
        what = f"AgentScope session {key.session_id!r} of user {key.user_id!r} ({as_key!r})"
        modules = json_value(value, what)
        if not isinstance(modules, dict):
            raise SessionCorruptedError(what, "not a JSON object")
        for name in modules:
            if not utf8_encodable(name):
                raise SessionCorruptedError(what, f"the module name {name!r} is not valid text")
        return modules

    async def _take_agentscope(self, key: Key) -> dict[Key, dict[str, Any]]:
        """Mark AgentScope's key of the session adopted (its key is left as it is); its
        modules, unless another process took it first or the session exists by now."""
        as_key = self._layout.agentscope(key)
        keys = [as_key, self._layout.meta(key), self._layout.imported]
        member = f"{key.user_id}\0{key.session_id}"

        async def take(client: Any, attempt: int) -> Any:
            return await client.eval(_TAKE_AGENTSCOPE, 3, *keys, member)

        modules = self._agentscope_modules(key, as_key, await self._retrying(take))
        return {} if modules is None else {key: modules}

    async def import_agentscope(self, target: Key, key: str) -> SessionInfo:
        """Import the session AgentScope's RedisSession stored under ``key`` as the record
        ``target`` (see ``RedisSession.import_agentscope``)."""
        if not isinstance(key, str) or not key:
            raise InvalidValueError(f"key must be the AgentScope key as a str, got {key!r}.")
        reply = await self._session("info", target, [], adopt=False)
        if self._info_or_none(reply[1], target) is not None:
            raise ConflictError(
                f"Session {target.session_id!r} of user {target.user_id!r} already exists here; "
                "delete it first, or import under another session_id."
            )
        await self._import_agentscope(target, key)
        info = await self.read_record(target)
        if info is None:
            raise SessionNotFoundError(
                target.session_id, target.user_id, f"There is no AgentScope key {key!r}."
            )
        return info

    # -- copies (fork, snapshot, restore) ---------------------------------------------------

    async def copy_record(
        self,
        source: Key,
        target: Key,
        *,
        cut: tuple[str, int] | None,
        metadata: dict[str, Any],
        replace: bool,
        ttl: TTL,
    ) -> SessionInfo:
        await self.read_record(source)  # adopts the source's AgentScope key first, if it has one
        args = [
            source.user_id,
            source.session_id,
            "" if cut is None else cut[0],
            0 if cut is None else cut[1],
            flag(replace),
            *ttl_args(ttl),
            *metadata_args(metadata),
        ]
        keys = [self._meta_key(target), self._meta_key(source)]
        # the reply is the target's metadata: a snapshot's or staging copy's is the source's data
        owner = _digest(source.user_id if target.user_id == SNAPSHOT_OWNER else target.user_id)
        common = self._common_args(target, self._tokens.new(owner))
        reply = await self._call("copy", keys, [*common, *args])
        status = as_text(reply[0])
        if status == "import":  # the target has AgentScope data: the guard adopts it first
            raise self._offer(target)
        if status == "ok":
            return session_info(reply[1], target.user_id, target.session_id, self.url)
        if status == "conflict":
            raise ConflictError(copy_conflict(target))
        if status == "source":
            found = as_text(reply[1])
            raise error_for(found, [found, *reply[2:]], source, self.url)
        raise error_for(status, reply, target, self.url)

    async def read_record_contents(self, key: Key) -> SessionContents | None:
        reply = await self._session("contents", key, [])
        if as_text(reply[0]) == "none":
            return None
        meta, state, modules, logs = reply[1:5]
        what = f"session {key.session_id!r} of user {key.user_id!r} ({self.url})"
        return SessionContents(
            session_info(meta, key.user_id, key.session_id, self.url),
            _decoded_pairs(state, f"the state of {what}"),
            _decoded_pairs(modules, f"the modules of {what}"),
            {utf8(logs[i], "a log name"): int(logs[i + 1]) for i in range(0, len(logs), 2)},
        )

    def _info_or_none(self, flat: list[Any] | None, key: Key) -> SessionInfo | None:
        return None if flat is None else session_info(flat, key.user_id, key.session_id, self.url)

    # -- sessions ---------------------------------------------------------------------------

    async def create_record(self, key: Key, *, ttl: TTL, metadata: dict[str, Any]) -> SessionInfo:
        reply = await self._session("create", key, ttl_args(ttl) + metadata_args(metadata))
        return session_info(reply[1], key.user_id, key.session_id, self.url)

    async def read_record(self, key: Key) -> SessionInfo | None:
        reply = await self._session("info", key, [])
        return self._info_or_none(reply[1], key)

    async def merge_record_metadata(self, key: Key, *, metadata: dict[str, Any]) -> SessionInfo:
        reply = await self._session("set_metadata", key, metadata_args(metadata), True)
        return session_info(reply[1], key.user_id, key.session_id, self.url)

    async def list_records(
        self, user_id: str, *, limit: int, after: str | None
    ) -> list[SessionInfo]:
        namespace = self._layout.namespace
        index = self._layout.user_index(user_id)
        args = [namespace, user_id, after or "", limit, self._clock_override()]
        reply = await self._call("list", [index], args)
        flat = reply[1]
        infos = []
        for i in range(0, len(flat), 2):
            session_id = utf8(flat[i], "a session id")
            fields = json_value(flat[i + 1], f"session {session_id!r} of user {user_id!r}")
            infos.append(session_info(fields, user_id, session_id, self.url))
        return infos

    async def list_record_owners(self) -> set[str]:
        """SCAN over the users' indexes (never KEYS: the server keeps serving meanwhile), one
        batch per script call, which keeps the users that have a live session. SCAN may name
        an index twice but never misses one that exists throughout; the set drops repeats."""
        users: set[str] = set()
        cursor = "0"
        while True:
            args = [
                self._layout.namespace,
                self._layout.user_indexes,
                cursor,
                _SCAN_BATCH,
                self._clock_override(),
            ]
            reply = await self._call("users", [], args)
            users.update(user_of_segment(utf8(segment, "a user id")) for segment in reply[2])
            cursor = as_text(reply[1])
            if cursor == "0":
                return users

    async def scrub_erased_user(self, user_id: str) -> None:
        """After an erasure: the replies kept for retries of the user's writes (their op keys
        are named after the user: ``OpTokens``), and those that name the user or one of their
        reserved records (a fork's parent link, an export's staging copy), go now, not in a
        minute (``forget.lua``)."""
        cursor = "0"
        digest = _digest(user_id)
        while True:
            args = [self._layout.op_keys, cursor, _SCAN_BATCH, user_id, digest]
            reply = await self._call("forget", [], args)
            cursor = as_text(reply[1])
            if cursor == "0":
                return

    async def delete_record(self, key: Key) -> bool:
        reply = await self._session("delete", key, ["0"])
        return as_text(reply[1]) == "1"

    async def delete_record_without_state(self, key: Key) -> bool:
        reply = await self._session("delete", key, ["1"])  # checked and deleted in one script
        return as_text(reply[1]) == "1"

    async def touch_record(self, key: Key, *, ttl: TTL) -> SessionInfo | None:
        reply = await self._session("touch", key, ttl_args(ttl))
        return self._info_or_none(reply[1], key)

    async def purge_records(self) -> int:
        removed = 0
        expiry = self._layout.expiry
        args = [self._layout.namespace, _PURGE_BATCH, self._clock_override()]
        while True:
            reply = await self._call("purge", [expiry], args)
            removed += int(reply[1])
            if int(reply[2]) < _PURGE_BATCH:
                return removed

    # -- key-value state --------------------------------------------------------------------

    async def read_record_state(
        self, key: Key, *, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        args = [flag(must_exist), flag(names is None), *(names or [])]
        reply = await self._session("get_state", key, args, must_exist)
        flat = reply[1]
        state = {}
        for i in range(0, len(flat), 2):
            name = utf8(flat[i], "a state key")
            state[name] = json_value(flat[i + 1], self._describe_state_key(key, name))
        return state

    async def patch_record_state(
        self,
        key: Key,
        *,
        updates: dict[str, Any],
        deletes: list[str],
        replace: bool,
        expected_version: int | None,
        must_exist: bool,
    ) -> int:
        args: list[Any] = [
            flag(must_exist),
            flag(replace),
            "" if expected_version is None else str(expected_version),
            len(updates),
        ]
        for name, value in updates.items():
            args += [name, dumps(value)]
        args += deletes
        reply = await self._session("patch", key, args, must_exist)
        if reply[0] == "conflict":
            raise ConflictError(
                f"Session {key.session_id!r} is at version {as_text(reply[1])}, not "
                f"{expected_version}: someone else changed it. Read it again and retry."
            )
        return int(reply[1])

    async def increment_record_value(
        self, key: Key, *, name: str, amount: int | float, default: int | float, must_exist: bool
    ) -> int | float:
        common = [flag(must_exist), name, json_number(amount), json_number(default)]
        for _ in range(_MAX_INCREMENT_RETRIES):
            reply = await self._session("increment", key, [*common, "add"], must_exist)
            if reply[0] == "ok":
                return _number(reply[1], self, key, name)
            # "slow": not a number, or too big for exact arithmetic in Lua: Python adds, and
            # the result is written only if the key still holds what was read.
            held = reply[1]
            what = self._describe_state_key(key, name)
            current = default if held is None else json_value(held, what)
            value = add_numbers(current, amount, name)
            cas = ["cas", flag(held is not None), "" if held is None else held, dumps(value)]
            reply = await self._session("increment", key, [*common, *cas], must_exist)
            if reply[0] == "ok":
                return value
        raise ConflictError(f"State key {name!r} kept changing; the increment was not applied.")

    def _describe_state_key(self, key: Key, name: str) -> str:
        return f"state key {name!r} of session {key.session_id!r} ({self.url})"

    # -- modules and logs -------------------------------------------------------------------

    async def write_modules(
        self, key: Key, *, documents: dict[str, Any], writes: list[LogWrite]
    ) -> dict[str, int]:
        """Returns each written log's length afterwards, by path: with ``start`` -1 the
        append lands wherever the log ends, which only the server knows."""
        return await self._save_modules(key, documents, writes, [])

    async def create_record_with_modules(
        self,
        key: Key,
        *,
        metadata: dict[str, Any],
        documents: dict[str, Any],
        writes: list[LogWrite],
    ) -> dict[str, int]:
        """``save_modules``' script, told to create: one script, one step."""
        return await self._save_modules(key, documents, writes, ["new", *metadata_args(metadata)])

    async def _save_modules(
        self, key: Key, documents: dict[str, Any], writes: list[LogWrite], creating: list[Any]
    ) -> dict[str, int]:
        args: list[Any] = [len(documents)]
        for name, document in documents.items():
            args += [name, dumps(document)]
        args.append(len(writes))
        for write in writes:
            start = "" if write.start is None else str(write.start)
            args += [write.path, start, len(write.messages), *map(dumps, write.messages)]
        reply = await self._session("save_modules", key, args + creating)
        if reply[0] == "conflict" and len(reply) == 1:
            raise ConflictError(create_conflict(key))
        if reply[0] == "conflict":
            raise ConflictError(
                f"Log {as_text(reply[1])!r} holds {as_text(reply[2])} messages, "
                f"not {as_text(reply[3])}."
            )
        return {write.path: int(length) for write, length in zip(writes, reply[1:], strict=True)}

    async def read_modules(self, key: Key, *, names: list[str]) -> StoredModules | None:
        reply = await self._session("load_modules", key, list(names))
        if reply[0] == "none":
            return None
        docs, flat_logs = reply[1], reply[2]
        documents = {}
        for i in range(0, len(docs), 2):
            name = utf8(docs[i], "a module name")
            what = f"module {name!r} of session {key.session_id!r}"
            documents[name] = json_value(docs[i + 1], what)
        logs: dict[str, list[dict[str, Any]]] = {}
        for i in range(0, len(flat_logs), 2):
            path = utf8(flat_logs[i], "a log name")
            what = self._describe_log(key, path)
            logs[path] = [json_value(m, what) for m in flat_logs[i + 1]]
        return StoredModules(documents, logs)

    async def append_log(self, key: Key, *, write: LogWrite) -> int:
        start = -1 if write.start is None else write.start
        args = [write.path, start, *map(dumps, write.messages)]
        reply = await self._session("append", key, args)
        if reply[0] == "conflict":
            raise ConflictError(
                f"Log {write.path!r} holds {as_text(reply[2])} messages, not {write.start}."
            )
        return int(reply[1])

    async def read_log(
        self, key: Key, *, path: str, start: int, stop: int | None
    ) -> list[dict[str, Any]]:
        if stop is None and key not in self._timed:  # a tail: read_tail.lua may vouch for it
            reply = await self._call("read_tail", self._tail_keys(key, path), [start])
            if reply[0] in _OK:
                found = loads_joined(reply[1], int(reply[2]))
                if found is not None:
                    return found
            else:
                self._note_timed(key, reply)
        what = self._describe_log(key, path)  # for errors only: not made on the fast path
        args = [path, start, "" if stop is None else stop, ""]
        reply = await self._session("read_log", key, args)
        found = loads_joined(reply[1], int(reply[2]))
        if found is not None:
            return found
        args[3] = "1"  # one of them is damaged: read them one by one, to name it
        reply = await self._session("read_log", key, args)
        return [json_value(m, what) for m in reply[1]]

    def _note_timed(self, key: Key, declined: list[Any]) -> None:
        """Remember a session a fast-path script declined for its expiry ({'full', 'expiry'}):
        its reads and truncations go to the full scripts straight away."""
        if len(declined) > 1:
            if len(self._timed) >= _KEYS_REMEMBERED:
                self._timed.clear()
            self._timed.add(key)

    async def count_log(self, key: Key, *, path: str) -> int:
        """``LLEN`` in the script that checks the session is live: no message is read."""
        reply = await self._session("count_log", key, [path])
        return int(reply[1])

    async def truncate_log(
        self, key: Key, *, path: str, length: int, expected: int | None
    ) -> list[dict[str, Any]]:
        must_hold = "" if expected is None else expected
        reply = None
        if key not in self._timed:  # truncate_tail.lua may vouch for the session
            token = self._tokens.new(_digest(key.user_id))
            keys = [*self._tail_keys(key, path), self._layout.op(token)]
            args = [length, must_hold, self._clock_override(), self._tokens.ttl_ms, "0"]
            reply = await self._call("truncate_tail", keys, args)
            if reply[0] in _OK:  # the common case, read as it comes: 'ok', the removed...
                return [_message(m, key, path) for m in reply[1:]]
            if as_text(reply[0]) == "full":
                self._note_timed(key, reply)
                reply = None
        if reply is None:
            reply = await self._session("truncate", key, [path, length, must_hold])
        if as_text(reply[0]) == "conflict":
            raise ConflictError(
                f"Log {path!r} holds {as_text(reply[2])} messages, not {as_text(reply[3])}."
            )
        return [_message(m, key, path) for m in reply[1:]]

    def _describe_log(self, key: Key, path: str) -> str:
        return f"message log {path!r} of session {key.session_id!r}"


#: A fast-path script's "ok", as bytes (the store's clients) or str (a client passed in that
#: decodes its replies).
_OK = (b"ok", "ok")

#: ``user_digest`` of the users a process writes for: computed once each, not on every write.
_digest = functools.lru_cache(maxsize=1024)(user_digest)


def _message(text: Any, key: Key, path: str) -> Any:
    """A stored message of a log; the log is named only when the message is damaged."""
    if type(text) is bytes:
        try:
            return decode(text.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError too: named below, where it is read again
            pass
    return json_value(text, f"message log {path!r} of session {key.session_id!r}")


def _number(text: Any, store: RedisBackend, key: Key, name: str) -> int | float:
    """An increment's result, as the script wrote it (named in the error if it is corrupt)."""
    if isinstance(text, bytes) and text.isdigit() and (text[0] != 48 or len(text) == 1):
        # the common case, a non-negative int (and never JSON's forbidden leading zero)
        return int(text)
    value: int | float = json_value(text, store._describe_state_key(key, name))  # the sum
    return value


async def _server_durability(client: Any) -> dict[str, str] | None:
    import redis.exceptions

    try:
        found = await client.config_get("append*")  # one pattern: Redis 6 takes no more
    except redis.exceptions.ResponseError:  # CONFIG renamed or refused
        return None
    config = {as_text(k): as_text(v) for k, v in found.items()}
    appendonly, appendfsync = config.get("appendonly", "?"), config.get("appendfsync", "?")
    level = "power" if appendfsync == "always" else "process"  # a crash of redis-server
    if appendonly != "yes":
        level = "memory"  # a restart loses what came after the last snapshot
    return {"appendonly": appendonly, "appendfsync": appendfsync, "durability": level}


def _decoded_pairs(flat: list[Any], what: str) -> dict[str, Any]:
    """A hash of JSON values, as HGETALL flattens it."""
    return {utf8(flat[i], "a name"): json_value(flat[i + 1], what) for i in range(0, len(flat), 2)}
