"""``RedisSession``: sessions on a Redis server, shared by many processes on many machines.

AgentScope's constructor (``host``, ``port``, ``db``, ``password``, ``connection_pool``,
``key_ttl``, ``key_prefix``, ``**kwargs``), plus a ready ``client``. Every operation is one Lua
script, so it runs as one atomic step on the server: increments, patches, compare-and-set,
appends with an expected length, and the sliding TTL applied to every key of the session.
Nothing is read, changed in Python and written back.

Key layout, under ``{key_prefix}ps:`` (``U``/``S``/``L``: the user id, session id and log name
with ``% : { } * ? [ ] \\`` written as ``%XX``, so that distinct ids never share a key and no id
can act as a glob pattern)::

    s:U:S:meta      HASH   format, version, created_at, updated_at, ttl, expires_at, user_id,
                           session_id, and the user metadata as "m:<name>" -> JSON
    s:U:S:state     HASH   state key -> JSON value
    s:U:S:modules   HASH   module name -> JSON document
    s:U:S:logs      SET    names of the session's message logs
    s:U:S:log:L     LIST   one JSON message per item (RPUSH: appends never rewrite history)
    u:U:sessions    ZSET   the user's session ids (score 0, ordered by id: paged listing)
    expiry          ZSET   "user_id NUL session_id" scored by expires_at: what purge_expired
                           removes, and how "expired" is told from "never existed"
    imported        SET    "user_id NUL session_id" of the AgentScope sessions imported
    op:TOKEN        STRING reply of a write, kept briefly so that a retried write is not applied
                           twice (see ``_call``)

A session with a TTL has the same absolute expiry (PEXPIREAT) on all of its keys, so Redis
deletes all of it at that moment and every reader sees it gone. Times come from the server's
clock (``TIME``), so machines with skewed clocks still agree on when a session expires. What an
expired session leaves is one member of ``expiry`` (and of its user's index until the next
listing): call ``purge_expired()`` now and then, as with the other stores.

Operational notes: run Redis with ``maxmemory-policy noeviction`` (an evicted key is lost data)
and with an append-only file if sessions must survive a restart. The scripts touch keys they
derive from the session's meta key, so this layout is for standalone Redis (and replicas /
Sentinel), not Redis Cluster.

AgentScope's own keys (``{key_prefix}user_id:U:session:S:state``, a JSON object of module states)
are imported on first access (format 0), once, and left in place.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from ...errors import (
    ConflictError,
    InvalidValueError,
    SessionCorruptedError,
    SessionExpiredError,
    SessionNotFoundError,
    StoreUnavailableError,
    UnsupportedFormatError,
)
from ...json_data import dumps, loads
from ..base import UNSET, Key, LogWrite, SessionBase, StoredModules
from ..record import FORMAT_VERSION, SessionInfo, check_format
from .scripts import load_scripts

__all__ = ["RedisSession"]

T = TypeVar("T")

_ESCAPED = frozenset("%:{}*?[]\\")
_TOKEN_TTL_MIN = 60.0
_PURGE_BATCH = 500
_MAX_INCREMENT_RETRIES = 1000


def _enc(text: str) -> str:
    """The injective key segment for an id (the Lua function ``enc`` does the same)."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


def _redis() -> Any:
    try:
        import redis.asyncio
        import redis.exceptions
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "RedisSession needs the 'redis' package (redis-py 5 or newer). Install it with: "
            'pip install "praisonsession[redis]"'
        ) from exc
    return redis


class RedisSession(SessionBase):
    """Sessions in Redis: every operation is one atomic server-side step.

    ``host``, ``port``, ``db``, ``password``, ``connection_pool``, ``key_ttl`` and
    ``key_prefix`` are AgentScope's; ``key_ttl`` (seconds) is this library's ``default_ttl``.
    ``client`` is a ready ``redis.asyncio.Redis`` (never closed here: its owner closes it).
    Other keyword arguments go to ``redis.asyncio.Redis``.

    A call that cannot reach the server is retried (exponential backoff 0.05, 0.1, 0.2 ... s,
    at most ``retry_attempts`` attempts, no wait ending later than ``retry_max_delay`` seconds
    after the first attempt) and then raises ``StoreUnavailableError``: a dead server (refused
    connections) fails within about ``retry_max_delay``; a hung one within that plus one
    ``socket_timeout``. A retried write is never applied twice: each write carries a token,
    and the server answers a retry with the first attempt's reply. An injected ``client`` or
    ``connection_pool`` keeps its own redis-py retry settings, which add to these.

    The store can be used from any event loop: each loop gets its own client (redis-py's
    clients are bound to the loop they first ran in). ``close()`` closes them all.
    """

    runs_inline = False

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
        if isinstance(retry_attempts, bool) or not isinstance(retry_attempts, int):
            raise InvalidValueError(f"retry_attempts must be an int, got {retry_attempts!r}.")
        if retry_attempts < 1 or not retry_max_delay >= 0:
            raise InvalidValueError("retry_attempts must be >= 1 and retry_max_delay >= 0.")
        redis = _redis()
        self._redis = redis
        self._scripts = load_scripts()
        self.key_prefix = key_prefix
        self._raw_prefix = key_prefix  # AgentScope's keys use the prefix exactly as given
        separated = key_prefix if not key_prefix or key_prefix.endswith(":") else key_prefix + ":"
        self._ns = separated + "ps:"
        self.retry_attempts = retry_attempts
        self.retry_max_delay = float(retry_max_delay)
        self._given_client = client
        self._given_pool = connection_pool
        self._options: dict[str, Any] = {
            "host": host,
            "port": int(port),
            "db": int(db),
            "password": password,
            "socket_timeout": socket_timeout,
            "socket_connect_timeout": socket_connect_timeout,
            **kwargs,
        }
        if "retry" not in kwargs:  # tenacity retries here; redis-py's own would stack up
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            self._options["retry"] = Retry(NoBackoff(), 0)
        timeout = max(socket_timeout or 0.0, socket_connect_timeout or 0.0)
        self._token_ttl_ms = int(
            1000 * max(_TOKEN_TTL_MIN, 2 * (self.retry_max_delay + retry_attempts * timeout))
        )
        self._token_base = secrets.token_hex(8)
        self._token_count = itertools.count()
        self.url = self._describe(host, port, db, password)
        self._lock = threading.Lock()
        # event loop -> its client: a redis.asyncio client works only in the loop it started in
        self._clients: dict[Any, _Bound] = {}
        self._given_in_use = False

    # -- construction helpers -------------------------------------------------------------

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisSession:
        """``redis://[[user]:password@]host[:port][/db][?key_prefix=...]``; ``rediss://`` = TLS.

        Query parameters other than ``key_prefix`` are passed on as numbers when they look
        like numbers (``socket_timeout=5``), ``true``/``false`` as booleans.
        """
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("redis", "rediss"):
            raise InvalidValueError(f"{url!r} is not a redis:// or rediss:// URL.")
        try:
            port = parts.port or 6379
        except ValueError:
            raise InvalidValueError(f"Store URL {url!r} has an invalid port.") from None
        path = parts.path.strip("/")
        if path and not path.isdigit():
            raise InvalidValueError(f"Store URL {url!r}: the path must be a db number, e.g. /0.")
        settings: dict[str, Any] = {
            "host": unquote(parts.hostname or "localhost"),
            "port": port,
            "db": int(path or 0),
        }
        if parts.password is not None:
            settings["password"] = unquote(parts.password)
        if parts.username:
            settings["username"] = unquote(parts.username)
        if scheme == "rediss":
            settings["ssl"] = True
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            settings[name] = value if name == "key_prefix" else _query_value(value)
        # Session() passes default_ttl=None etc. from its settings: the URL's own value wins
        given = {k: v for k, v in options.items() if v is not None or k not in settings}
        return cls(**{**settings, **given})

    def _describe(self, host: str, port: int, db: int, password: str | None) -> str:
        if self._given_client is not None or self._given_pool is not None:
            pool = self._given_pool or self._given_client.connection_pool
            found = getattr(pool, "connection_kwargs", {})
            host = found.get("host", host)
            port = found.get("port", port)
            db = found.get("db", db)
            password = found.get("password")
        scheme = "rediss" if self._options.get("ssl") else "redis"
        auth = ":***@" if password else ""
        url = f"{scheme}://{auth}{host}:{port}/{db}"
        if self.key_prefix:
            url += f"?key_prefix={quote(self.key_prefix, safe=':')}"
        return url

    # -- clients, one per event loop ------------------------------------------------------

    async def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        bound = self._clients.get(loop)
        if bound is not None and bound.pid == os.getpid():
            return bound.client
        with self._lock:
            bound = self._clients.get(loop)
            if bound is not None and bound.pid == os.getpid():
                return bound.client
            self._forget_dead_loops()
            client, owned = self._new_client()
            bound = self._clients[loop] = _Bound(client, owned)
        if owned:
            # asyncio.run() finalizes async generators before it closes its loop: this one
            # closes the client then, so a store used without close() leaves no socket open.
            closer = _close_at_loop_end(client)
            await closer.__anext__()
            bound.closer = closer
        return client

    def _new_client(self) -> tuple[Any, bool]:
        aio = self._redis.asyncio
        if self._given_client is not None and not self._given_in_use:
            self._given_in_use = True
            return self._given_client, False
        if self._given_pool is not None and not self._given_in_use:
            self._given_in_use = True
            return aio.Redis(connection_pool=self._given_pool), False
        source = self._given_pool or (
            self._given_client.connection_pool if self._given_client is not None else None
        )
        if source is not None:  # another loop: a pool of our own with the same settings
            pool = aio.ConnectionPool(
                connection_class=source.connection_class,
                max_connections=source.max_connections,
                **source.connection_kwargs,
            )
            return aio.Redis.from_pool(pool), True
        return aio.Redis(**self._options), True

    def _forget_dead_loops(self) -> None:
        """Drop the clients of loops that were closed (e.g. by ``asyncio.run``) or forked."""
        for loop, bound in list(self._clients.items()):
            if bound.pid != os.getpid() or loop.is_closed():
                del self._clients[loop]
                if not bound.owned:
                    self._given_in_use = False
                elif bound.pid == os.getpid():
                    _drop_connections(bound.client)

    def get_client(self) -> Any:
        """The ``redis.asyncio.Redis`` client of the running event loop (AgentScope's call).

        Call it inside a coroutine. It is closed by ``close()`` unless it was passed in.
        """
        loop = asyncio.get_running_loop()
        bound = self._clients.get(loop)
        if bound is not None and bound.pid == os.getpid():
            return bound.client
        with self._lock:
            self._forget_dead_loops()
            client, owned = self._new_client()
            self._clients[loop] = _Bound(client, owned)
        return client

    async def close(self) -> None:
        """Close the clients this store created, in every loop; an injected client stays open.

        The store stays usable: the next call connects again.
        """
        with self._lock:
            clients, self._clients = self._clients, {}
            self._given_in_use = False
        here = asyncio.get_running_loop()
        for loop, bound in clients.items():
            if not bound.owned or bound.pid != os.getpid():
                continue
            if loop is here:
                await bound.close()
            elif not loop.is_closed() and loop.is_running():
                future = asyncio.run_coroutine_threadsafe(bound.close(), loop)
                try:
                    await asyncio.wait_for(asyncio.wrap_future(future), 5.0)
                except (asyncio.TimeoutError, RuntimeError):
                    _drop_connections(bound.client)
            else:
                _drop_connections(bound.client)

    # -- calling the server ---------------------------------------------------------------

    def _meta_key(self, key: Key) -> str:
        return f"{self._ns}s:{_enc(key.user_id)}:{_enc(key.session_id)}:meta"

    def _keys(self, key: Key) -> list[str]:
        """The session's keys (meta, state, modules, logs), its user's index, and the expiry
        and imported sets: where the scripts keep things, for tests and inspection."""
        base = self._meta_key(key)[: -len("meta")]
        return [
            base + "meta",
            base + "state",
            base + "modules",
            base + "logs",
            f"{self._ns}u:{_enc(key.user_id)}:sessions",
            self._ns + "expiry",
            self._ns + "imported",
        ]

    def _settings(self) -> str:
        """ARGV[1] of the per-session scripts (read on every call: the TTL knobs may change)."""
        sliding = "1" if self.sliding_ttl else "0"
        ttl = _num(self.default_ttl)
        return f"{self._ns}\0{self._raw_prefix}\0{sliding}\0{ttl}\0{self._token_ttl_ms}"

    def _token(self) -> str:
        # unique per store object, process and call; cheaper than os.urandom on every write
        return f"{self._token_base}.{os.getpid()}.{next(self._token_count)}"

    def _agentscope_key(self, key: Key) -> str:
        return f"{self._raw_prefix}user_id:{key.user_id}:session:{key.session_id}:state"

    async def _retrying(self, work: Callable[[Any, int], Awaitable[T]]) -> T:
        """``work(client, attempt)`` with bounded retries; StoreUnavailableError at the end.

        The first attempt runs directly (tenacity costs tens of µs a call, which matters at
        thousands of calls a second); after a connection error, tenacity retries with
        exponential backoff (0.05, 0.1, 0.2, ... s, at most 1 s), and stops after
        ``retry_attempts`` attempts or before a wait that would end more than
        ``retry_max_delay`` seconds after the first attempt started.
        """
        errors = self._redis.exceptions
        started = time.monotonic()
        attempts = 1
        try:
            try:
                return await work(await self._client(), 1)
            except Exception as exc:
                if not _retryable(exc) or self.retry_attempts < 2 or self.retry_max_delay < 0.05:
                    raise
            from tenacity import AsyncRetrying, retry_if_exception, wait_exponential

            def stop(state: Any) -> bool:
                if state.attempt_number + 1 >= self.retry_attempts:
                    return True
                upcoming = getattr(state, "upcoming_sleep", 0.0) or 0.0
                return time.monotonic() - started + upcoming > self.retry_max_delay

            await asyncio.sleep(0.05)
            retrying = AsyncRetrying(
                stop=stop,
                wait=wait_exponential(multiplier=0.1, max=1.0),
                retry=retry_if_exception(_retryable),
                reraise=True,
            )
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    return await work(await self._client(), attempts)
        except (errors.AuthenticationError, errors.AuthorizationError) as exc:
            raise StoreUnavailableError(
                f"Redis at {self.url} refused the credentials ({exc}). Check the password "
                "(and user name) in the store URL or the RedisSession arguments."
            ) from exc
        except (errors.ConnectionError, errors.TimeoutError, OSError) as exc:
            raise StoreUnavailableError(
                f"Redis at {self.url} could not be reached: {attempts} attempt(s) in "
                f"{time.monotonic() - started:.1f} s, last error {type(exc).__name__}: {exc}. "
                "Check that redis-server is running and reachable from this machine (host, "
                "port, firewall, TLS, password). The last write was not acknowledged, so it "
                "may or may not have been applied; nothing was assumed about the session."
            ) from exc
        except errors.ResponseError as exc:
            if "WRONGTYPE" in str(exc):
                raise SessionCorruptedError(
                    f"a key of this store in {self.url}",
                    "it holds another Redis type than this library writes",
                ) from None
            raise StoreUnavailableError(f"Redis at {self.url} refused the command: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run one of the scripts (EVALSHA, or EVAL when the server does not have it yet).

        The arguments of a write hold an op token (positions 3 and 4: token, check). The
        first attempt records the token with its reply; a retry asks the server for that
        reply instead of applying the write again, since a lost connection may have dropped
        only the answer.
        """
        script = self._scripts[name]

        async def work(client: Any, attempt: int) -> Any:
            if attempt > 1 and script.writes:
                args[4] = "1"
            return await script.run(client, keys, args)

        return await self._retrying(work)

    async def _session(
        self, name: str, key: Key, args: list[Any], must_exist: bool = False
    ) -> list[Any]:
        """Run a per-session script; import the AgentScope key first when the script asks."""
        meta = [self._meta_key(key)]
        for _ in range(3):
            token = self._token() if self._scripts[name].writes else ""
            common = [self._settings(), key.user_id, key.session_id, token, "0"]
            reply = await self._call(name, meta, [*common, *args])
            status = _text(reply[0])
            if status == "import":
                await self._import_agentscope(key)
                continue
            if status in ("ok", "none", "slow", "retry", "conflict"):
                return [status, *reply[1:]]
            raise self._error(status, reply, key)
        raise AssertionError(f"AgentScope session {key.session_id!r} could not be imported")

    def _error(self, status: str, reply: list[Any], key: Key) -> Exception:
        what = f"session {key.session_id!r} of user {key.user_id!r} in {self.url}"
        if status == "notfound":
            return SessionNotFoundError(
                key.session_id,
                key.user_id,
                "It was deleted or has expired; open a new Session(...) to start it afresh.",
            )
        if status == "expired":
            return SessionExpiredError(key.session_id, key.user_id, _float(reply[1]))
        if status == "format":
            return UnsupportedFormatError(what, int(_text(reply[1])), FORMAT_VERSION)
        if status == "corrupt":
            return SessionCorruptedError(what, _text(reply[1]))
        return StoreUnavailableError(f"Redis at {self.url} answered {status!r} unexpectedly.")

    async def _import_agentscope(self, key: Key) -> None:
        """Adopt the session AgentScope's RedisSession left under its own key (format 0)."""
        as_key = self._agentscope_key(key)

        async def fetch(client: Any, attempt: int) -> Any:
            return await client.get(as_key)

        value = await self._retrying(fetch)
        if value is None:
            return
        what = f"AgentScope session {key.session_id!r} of user {key.user_id!r} ({as_key!r})"
        modules = loads(_utf8(value, what), what)
        if not isinstance(modules, dict):
            raise SessionCorruptedError(what, "not a JSON object")
        args: list[Any] = [self._settings(), key.user_id, key.session_id, "", "0"]
        for name, document in modules.items():
            if not _valid_text(name):
                raise SessionCorruptedError(what, f"the module name {name!r} is not valid text")
            args += [name, dumps(document)]
        await self._call("import", [self._meta_key(key)], args)

    # -- decoding ---------------------------------------------------------------------------

    def _info_from(self, flat: list[Any], user_id: str, session_id: str) -> SessionInfo:
        what = f"session {session_id!r} of user {user_id!r} in {self.url}"
        fields = {_utf8(flat[i], what): flat[i + 1] for i in range(0, len(flat), 2)}
        try:
            fmt = int(fields["format"])
            check_format(fmt, what)
            expires = _text(fields.get("expires_at") or b"")
            ttl = _text(fields.get("ttl") or b"")
            info = SessionInfo(
                session_id=session_id,
                user_id=user_id,
                created_at=float(fields["created_at"]),
                updated_at=float(fields["updated_at"]),
                expires_at=float(expires) if expires else None,
                ttl=float(ttl) if ttl else None,
                version=int(fields["version"]),
                format=fmt,
                metadata=_metadata(fields, what),
            )
        except (KeyError, ValueError) as exc:
            raise SessionCorruptedError(f"metadata of {what}", repr(exc)) from None
        return info

    def _decode(self, value: Any, what: str) -> Any:
        return loads(_utf8(value, what), what)

    # -- sessions ---------------------------------------------------------------------------

    async def _create(self, key: Key, ttl: Any, metadata: dict[str, Any]) -> SessionInfo:
        args = ["keep" if ttl is UNSET else "set", "" if ttl is UNSET else _num(ttl)]
        reply = await self._session("create", key, args + _metadata_args(metadata))
        return self._info_from(reply[1], key.user_id, key.session_id)

    async def _info(self, key: Key) -> SessionInfo | None:
        reply = await self._session("info", key, [])
        return None if reply[1] is None else self._info_from(reply[1], key.user_id, key.session_id)

    async def _set_metadata(self, key: Key, metadata: dict[str, Any]) -> SessionInfo:
        reply = await self._session("set_metadata", key, _metadata_args(metadata), True)
        return self._info_from(reply[1], key.user_id, key.session_id)

    async def _list(self, user_id: str, limit: int, after: str | None) -> list[SessionInfo]:
        index = f"{self._ns}u:{_enc(user_id)}:sessions"
        reply = await self._call("list", [index], [self._ns, user_id, after or "", limit])
        flat = reply[1]
        return [
            self._info_from(flat[i + 1], user_id, _utf8(flat[i], "a session id"))
            for i in range(0, len(flat), 2)
        ]

    async def _delete(self, key: Key) -> bool:
        reply = await self._session("delete", key, [])
        return _text(reply[1]) == "1"

    async def _touch(self, key: Key, ttl: Any) -> SessionInfo | None:
        args = ["keep" if ttl is UNSET else "set", "" if ttl is UNSET else _num(ttl)]
        reply = await self._session("touch", key, args)
        return None if reply[1] is None else self._info_from(reply[1], key.user_id, key.session_id)

    async def _purge(self) -> int:
        removed = 0
        while True:
            reply = await self._call("purge", [self._ns + "expiry"], [self._ns, _PURGE_BATCH])
            removed += int(reply[1])
            if int(reply[2]) < _PURGE_BATCH:
                return removed

    # -- key-value state --------------------------------------------------------------------

    async def _get_state(
        self, key: Key, names: list[str] | None, must_exist: bool
    ) -> dict[str, Any]:
        args = ["1" if must_exist else "0", "1" if names is None else "0", *(names or [])]
        reply = await self._session("get_state", key, args, must_exist)
        flat = reply[1]
        state = {}
        for i in range(0, len(flat), 2):
            name = _utf8(flat[i], "a state key")
            what = f"state key {name!r} of session {key.session_id!r} ({self.url})"
            state[name] = self._decode(flat[i + 1], what)
        return state

    async def _patch(self, key, updates, deletes, replace, expected_version, must_exist) -> int:
        args: list[Any] = [
            "1" if must_exist else "0",
            "1" if replace else "0",
            "" if expected_version is None else str(expected_version),
            len(updates),
        ]
        for name, value in updates.items():
            args += [name, dumps(value)]
        args += deletes
        reply = await self._session("patch", key, args, must_exist)
        if reply[0] == "conflict":
            raise ConflictError(
                f"Session {key.session_id!r} is at version {_text(reply[1])}, not "
                f"{expected_version}: someone else changed it. Read it again and retry."
            )
        return int(reply[1])

    async def _increment(self, key, name, amount, default, must_exist) -> int | float:
        what = f"state key {name!r} of session {key.session_id!r} ({self.url})"
        common = ["1" if must_exist else "0", name, _number(amount), _number(default)]
        for _ in range(_MAX_INCREMENT_RETRIES):
            reply = await self._session("increment", key, [*common, "add"], must_exist)
            if reply[0] == "ok":
                return self._decode(reply[1], what)
            # "slow": not a number, or too big for exact arithmetic in Lua: Python adds, and
            # the result is written only if the key still holds what was read.
            held = reply[1]
            current = default if held is None else self._decode(held, what)
            if isinstance(current, bool) or not isinstance(current, (int, float)):
                raise InvalidValueError(
                    f"State key {name!r} holds {current!r}, not a number, so it cannot be "
                    "incremented. Set it to a number first."
                )
            value = current + amount
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidValueError(f"{current!r} + {amount!r} is {value!r}, not JSON data.")
            cas = ["cas", "0" if held is None else "1", "" if held is None else held, dumps(value)]
            reply = await self._session("increment", key, [*common, *cas], must_exist)
            if reply[0] == "ok":
                return value
        raise ConflictError(f"State key {name!r} kept changing; the increment was not applied.")

    # -- modules and logs -------------------------------------------------------------------

    async def _save_modules(
        self, key: Key, documents: dict[str, Any], writes: list[LogWrite]
    ) -> None:
        args: list[Any] = [len(documents)]
        for name, document in documents.items():
            args += [name, dumps(document)]
        args.append(len(writes))
        for write in writes:
            start = "" if write.start is None else str(write.start)
            args += [write.path, start, len(write.messages), *map(dumps, write.messages)]
        reply = await self._session("save_modules", key, args)
        if reply[0] == "conflict":
            raise ConflictError(
                f"Log {_text(reply[1])!r} holds {_text(reply[2])} messages, not {_text(reply[3])}."
            )

    async def _load_modules(self, key: Key, names: list[str]) -> StoredModules | None:
        reply = await self._session("load_modules", key, list(names))
        if reply[0] == "none":
            return None
        docs, flat_logs = reply[1], reply[2]
        documents = {}
        for i in range(0, len(docs), 2):
            name = _utf8(docs[i], "a module name")
            what = f"module {name!r} of session {key.session_id!r}"
            documents[name] = self._decode(docs[i + 1], what)
        logs: dict[str, list[dict[str, Any]]] = {}
        for i in range(0, len(flat_logs), 2):
            path = _utf8(flat_logs[i], "a log name")
            what = f"message log {path!r} of session {key.session_id!r}"
            logs[path] = [self._decode(m, what) for m in flat_logs[i + 1]]
        return StoredModules(documents, logs)

    async def _append(self, key: Key, write: LogWrite) -> int:
        start = -1 if write.start is None else write.start
        args = [write.path, start, *map(dumps, write.messages)]
        reply = await self._session("append", key, args)
        if reply[0] == "conflict":
            raise ConflictError(
                f"Log {write.path!r} holds {_text(reply[2])} messages, not {write.start}."
            )
        return int(reply[1])

    async def _read_log(self, key: Key, path: str, start: int, stop: int | None):
        args = [path, start, "" if stop is None else stop]
        reply = await self._session("read_log", key, args)
        what = f"message log {path!r} of session {key.session_id!r}"
        return [self._decode(m, what) for m in reply[1]]


# -- helpers ---------------------------------------------------------------------------------


def _retryable(exc: BaseException) -> bool:
    import redis.exceptions as errors

    if isinstance(exc, (errors.AuthenticationError, errors.AuthorizationError)):
        return False
    if isinstance(exc, errors.ResponseError):
        return isinstance(exc, errors.ReadOnlyError)
    return isinstance(exc, (errors.ConnectionError, errors.TimeoutError, OSError))


class _Bound:
    """The client of one event loop; ``owned`` when this store created it (and closes it)."""

    __slots__ = ("client", "closer", "owned", "pid")

    def __init__(self, client: Any, owned: bool) -> None:
        self.client = client
        self.owned = owned
        self.pid = os.getpid()
        self.closer: Any = None

    async def close(self) -> None:
        if self.closer is not None:
            await self.closer.aclose()  # runs _close_at_loop_end's finally: closes the client
        else:
            await self.client.aclose()


async def _close_at_loop_end(client: Any) -> AsyncIterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # the loop is ending: nothing can be reported
            await client.aclose()


def _drop_connections(client: Any) -> None:
    """Shut the sockets of a client whose event loop is gone (it cannot be awaited)."""
    import socket

    pool = getattr(client, "connection_pool", None)
    connections = [
        *getattr(pool, "_available_connections", ()),
        *getattr(pool, "_in_use_connections", ()),
    ]
    for connection in connections:
        writer = getattr(connection, "_writer", None)
        if writer is None:
            continue
        sock = writer.get_extra_info("socket")
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)  # the server sees the client go at once
        except OSError:
            pass


def _query_value(value: str) -> Any:
    lowered = value.lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("none", "null", ""):
        return None
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value


def _number(value: int | float) -> str:
    """JSON text of a number, as ``dumps`` writes it (ints and finite floats only)."""
    return int.__repr__(value) if isinstance(value, int) else float.__repr__(value)


def _num(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _float(value: Any) -> float | None:
    try:
        return float(_text(value))
    except (TypeError, ValueError):
        return None


def _utf8(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SessionCorruptedError(what, f"not UTF-8 text: {exc}") from None


def _valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _metadata_args(metadata: dict[str, Any]) -> list[str]:
    args = []
    for name, value in metadata.items():
        field = "m:" + name if _valid_text(name) else "j:" + dumps(name)
        args += [field, dumps(value)]
    return args


def _metadata(fields: dict[str, Any], what: str) -> dict[str, Any]:
    metadata = {}
    for field, value in fields.items():
        if field.startswith("m:"):
            metadata[field[2:]] = loads(_utf8(value, what), f"metadata of {what}")
        elif field.startswith("j:"):
            name = loads(field[2:], f"metadata of {what}")
            metadata[name] = loads(_utf8(value, what), f"metadata of {what}")
    return metadata
