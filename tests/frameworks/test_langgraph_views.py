"""PraisonSaver's view of a thread (``langgraph_threads._View``): the newest checkpoint it put
or read, and the listings it read, are served again without a read only while the store
certifies that nothing changed since (``StoreBackend.stamped``). After every kind of change,
by this process or another, on this thread or another, its answers are those of a fresh saver
that remembers nothing. Real SQLite files, real threads, real processes."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from backends import ENCRYPTION_KEY
from praisonsession import erase_user, open_store
from praisonsession.integrations.langgraph import PraisonSaver
from praisonsession.integrations.langgraph_threads import Threads
from praisonsession.stores import guard

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# Another process's writes: ``put:THREAD:STEP``, ``writes:THREAD:TASK`` (to the newest),
# ``writes:THREAD:TASK:ID`` (to checkpoint ID), ``delete:THREAD:0`` or ``prune:THREAD:0``.
_WORKER = """
import sys
from langgraph.checkpoint.base import empty_checkpoint
from praisonsession.integrations.langgraph import PraisonSaver

url, settings, *steps = sys.argv[1:]
with PraisonSaver(url, settings=eval(settings)) as saver:
    for step in steps:
        what, thread, n, *named = step.split(":")
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        if named:
            config["configurable"]["checkpoint_id"] = named[0]
        if what == "delete":
            saver.delete_thread(thread)
        elif what == "prune":
            saver.prune([thread])
        elif what == "put":
            latest = saver.get_tuple(config)
            if latest is not None:
                config = latest.config
            checkpoint = empty_checkpoint()
            version = saver.get_next_version(None, None)
            checkpoint["channel_values"] = {"n": int(n)}
            checkpoint["channel_versions"] = {"n": version}
            saver.put(config, checkpoint, {"source": "other", "step": int(n)}, {"n": version})
        else:
            saver.put_writes(saver.get_tuple(config).config, [("n", int(n))], f"p{n}")
"""


def config(thread_id: str, **more: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **more}}


def put(saver: PraisonSaver, thread_id: str, n: int, checkpoint_id: str | None = None) -> Any:
    """Checkpoint ``n`` of the thread, after its newest (one channel, a new version)."""
    latest = saver.get_tuple(config(thread_id))
    checkpoint = empty_checkpoint()
    if checkpoint_id is not None:
        checkpoint["id"] = checkpoint_id
    version = saver.get_next_version(
        None if latest is None else latest.checkpoint["channel_versions"]["n"], None
    )
    checkpoint["channel_values"] = {"n": n}
    checkpoint["channel_versions"] = {"n": version}
    parent = config(thread_id) if latest is None else latest.config
    return saver.put(parent, checkpoint, {"source": "loop", "step": n}, {"n": version})


def answers(saver: PraisonSaver, thread_id: str) -> Any:
    """What a graph reads of a thread: its newest checkpoint and its listing, comparable."""
    latest = saver.get_tuple(config(thread_id))
    listed = list(saver.list(config(thread_id), limit=10))
    return (
        None if latest is None else _shown(latest),
        [_shown(found) for found in listed],
    )


def _shown(found: Any) -> Any:
    return (
        found.checkpoint["id"],
        found.checkpoint["channel_values"],
        found.metadata,
        sorted(found.pending_writes),
        found.parent_config,
    )


def fresh(url: str, thread_id: str, **settings: Any) -> Any:
    """A saver that remembers nothing: what the store holds now."""
    with PraisonSaver(open_store(url), settings=settings or None) as saver:
        return answers(saver, thread_id)


def other_process(url: str, *steps: str, settings: str = "None") -> None:
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, url, settings, *steps],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def viewed(saver: PraisonSaver, thread_id: str) -> bool:
    """Whether the saver holds a view of the thread that the store still certifies."""
    threads: Threads = saver._threads
    for key, view in list(threads._views.items()):
        if key.session_id == thread_id:
            return threads._certified(key, view)
    return False


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path}/views.db"


def test_the_newest_checkpoint_put_or_read_is_served_from_the_view(url: str) -> None:
    with PraisonSaver(url) as saver:
        put(saver, "t", 1)
        put(saver, "t", 2)
        assert viewed(saver, "t")  # the put left it
        first = answers(saver, "t")
        assert answers(saver, "t") == first == fresh(url, "t")
        # what a caller does with a tuple does not reach the view
        found = saver.get_tuple(config("t"))
        found.checkpoint["channel_values"]["n"] = "changed"
        found.metadata["step"] = "changed"
        found.checkpoint["channel_versions"].clear()
        assert answers(saver, "t") == first


def test_a_put_that_first_rechecks_the_stores_encryption_still_leaves_a_view(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before a write, the store's guard looks again whether the store was encrypted since
    (every half second: here every write). That look is a read inside the put: the view the
    put leaves is of what it wrote, not of that read (which the write then moved on)."""
    monkeypatch.setattr(guard, "RECHECK_SECONDS", 0.0)
    with PraisonSaver(url) as saver:
        put(saver, "t", 1)
        put(saver, "t", 2)  # a read of the newest, then a put: viewed
        assert viewed(saver, "t")
        assert answers(saver, "t") == fresh(url, "t")


def test_only_a_put_after_a_read_of_the_newest_pays_for_a_view(url: str) -> None:
    """A graph's steps put and write with one read of the newest at the start of a run: a
    stamp costs a put a statement, so puts in a row take none."""
    with PraisonSaver(url) as saver:
        first = put(saver, "t", 1)  # a read of the newest, then a put: viewed
        assert viewed(saver, "t")
        checkpoint = saver.get_tuple(first).checkpoint  # by id: not the newest
        again = saver.put(first, {**checkpoint, "id": empty_checkpoint()["id"]}, {"step": 2}, {})
        assert not viewed(saver, "t")  # a put after a put
        assert saver.get_tuple(config("t")).config == again  # read: viewed again
        assert viewed(saver, "t")
        put(saver, "t", 3)
        assert viewed(saver, "t")
        assert answers(saver, "t") == fresh(url, "t")


def test_where_the_store_changes_between_every_two_reads_views_are_seldom_made(
    url: str,
) -> None:
    """Many writers on one file void every view before it serves: the saver then takes a
    stamp for one read in 16, and for every read again once a view serves one."""
    with PraisonSaver(url) as saver, PraisonSaver(open_store(url)) as elsewhere:
        put(saver, "t", 1)
        made = []
        for n in range(48):
            put(elsewhere, "other", n)
            assert saver.get_tuple(config("t")).checkpoint["channel_values"] == {"n": 1}
            made.append(bool(saver._threads._views))
        assert all(made[:3]) and sum(made[4:]) <= 3  # one read in 16 after four voided
        for _ in range(17):  # quiet: the next stamp's view serves, and views are made again
            saver.get_tuple(config("t"))
        assert viewed(saver, "t")
        assert answers(saver, "t") == fresh(url, "t")


def test_another_process_writing_the_thread_is_seen(url: str) -> None:
    with PraisonSaver(url) as saver:
        put(saver, "t", 1)
        answers(saver, "t")
        other_process(url, "put:t:2")
        assert answers(saver, "t") == fresh(url, "t")
        assert saver.get_tuple(config("t")).checkpoint["channel_values"] == {"n": 2}
        other_process(url, "writes:t:7")
        assert answers(saver, "t") == fresh(url, "t")
        assert saver.get_tuple(config("t")).pending_writes == [("p7", "n", 7)]
        other_process(url, "put:elsewhere:1")  # another thread: still the same answers
        assert answers(saver, "t") == fresh(url, "t")


def test_another_saver_of_this_process_on_the_file_is_seen(url: str) -> None:
    with PraisonSaver(url) as saver, PraisonSaver(open_store(url)) as other:
        put(saver, "t", 1)
        answers(saver, "t")
        put(other, "t", 2)  # same thread, same connection (this thread's)
        assert saver.get_tuple(config("t")).checkpoint["channel_values"] == {"n": 2}
        other.put_writes(other.get_tuple(config("t")).config, [("n", 5)], "task")
        assert answers(saver, "t") == fresh(url, "t")
        put(other, "u", 1)  # another thread of the file
        assert answers(saver, "t") == fresh(url, "t")
        done = threading.Thread(target=put, args=(other, "t", 3))  # another connection
        done.start()
        done.join()
        assert saver.get_tuple(config("t")).checkpoint["channel_values"] == {"n": 3}
        assert answers(saver, "t") == fresh(url, "t")


def test_writes_stored_before_their_checkpoint_are_the_put_checkpoints(url: str) -> None:
    """LangGraph's durability="async" may store a task's writes to a checkpoint while the
    checkpoint itself is still being put, on another thread."""
    with PraisonSaver(url) as saver, PraisonSaver(open_store(url)) as other:
        put(saver, "t", 1)
        ahead = empty_checkpoint()["id"]
        other.put_writes(config("t", checkpoint_id=ahead), [("n", 9)], "early")
        put(saver, "t", 2, checkpoint_id=ahead)
        assert saver.get_tuple(config("t")).pending_writes == [("early", "n", 9)]
        assert answers(saver, "t") == fresh(url, "t")


def test_a_deleted_or_erased_thread_is_gone(url: str) -> None:
    with PraisonSaver(url) as saver, PraisonSaver(open_store(url)) as other:
        put(saver, "t", 1)
        answers(saver, "t")
        other.delete_thread("t")
        assert answers(saver, "t") == (None, [])
    with PraisonSaver(url, user_id="eve") as saver:
        put(saver, "t", 2)
        put(saver, "e", 1)
        saver.get_tuple(config("e"))
        store = open_store(url)
        assert sorted(erase_user("eve", store).session_ids) == ["e", "t"]
        assert answers(saver, "t") == answers(saver, "e") == (None, [])
        asyncio.run(store.close())


def test_a_thread_with_a_ttl_expires_and_slides_on_every_read(url: str, frozen_clock: Any) -> None:
    with PraisonSaver(url, settings={"default_ttl": 60}) as saver:
        put(saver, "t", 1)
        for _ in range(4):  # each read restarts the TTL: 200 s after the put, still there
            frozen_clock.advance(50)
            assert saver.get_tuple(config("t")) is not None
            assert len(list(saver.list(config("t"), limit=10))) == 1
        frozen_clock.advance(61)
        assert answers(saver, "t") == (None, [])


def test_a_ttl_given_to_a_viewed_thread_ends_it(url: str, frozen_clock: Any) -> None:
    with PraisonSaver(url) as saver:
        put(saver, "t", 1)
        answers(saver, "t")
        store = open_store(url)
        asyncio.run(store.touch("t", ttl=60))
        frozen_clock.advance(30)
        assert saver.get_tuple(config("t")) is not None
        frozen_clock.advance(61)
        assert answers(saver, "t") == (None, [])
        asyncio.run(store.close())


def test_a_purged_thread_is_gone(url: str, frozen_clock: Any) -> None:
    with PraisonSaver(url) as saver:
        put(saver, "t", 1)
        answers(saver, "t")
        store = open_store(url)
        asyncio.run(store.expire("t"))
        assert asyncio.run(store.purge_expired()) == 1
        assert answers(saver, "t") == (None, [])
        asyncio.run(store.close())


def test_interleaved_writers_never_make_it_answer_otherwise_than_a_fresh_saver(
    url: str,
) -> None:
    chance = random.Random(39)
    with PraisonSaver(url) as saver, PraisonSaver(open_store(url)) as other:
        for n in range(1, 61):
            thread = chance.choice(["a", "b"])
            move = chance.random()
            if move < 0.35:
                put(saver, thread, n)
            elif move < 0.6:
                put(other, thread, n)
            elif move < 0.7 and saver.get_tuple(config(thread)) is not None:
                target = chance.choice([saver, other])
                target.put_writes(target.get_tuple(config(thread)).config, [("n", n)], f"w{n}")
            elif move < 0.75:
                chance.choice([saver, other]).delete_thread(thread)
            elif move < 0.8:
                other_process(url, f"put:{thread}:{n}")
            for looked in ("a", "b"):
                assert answers(saver, looked) == fresh(url, looked), (n, looked)


def test_an_encrypted_saver_serves_its_view_and_sees_other_writers(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/sealed.db"
    settings = {"encryption_key": ENCRYPTION_KEY}
    with PraisonSaver(url, settings=settings) as saver:
        put(saver, "t", 1)
        first = answers(saver, "t")
        assert viewed(saver, "t")  # the read left one (a sealed put cannot)
        assert answers(saver, "t") == first == fresh(url, "t", **settings)
        other_process(url, "put:t:2", settings=repr(settings))
        assert saver.get_tuple(config("t")).checkpoint["channel_values"] == {"n": 2}
        assert answers(saver, "t") == fresh(url, "t", **settings)


def test_threads_of_one_process_committing_together_keep_their_views_true(url: str) -> None:
    """At durability "power" the writers of a process share commits: a leader runs the others'
    statements on its own connection, so a stamp names the connection it was taken on."""
    power = url + "?durability=power"
    with PraisonSaver(power) as saver:

        def steps(worker: int) -> None:
            for n in range(25):
                put(saver, f"own-{worker}", n)
                found = saver.get_tuple(config(f"own-{worker}"))
                assert found.checkpoint["channel_values"] == {"n": n}
                assert len(list(saver.list(config(f"own-{worker}"), limit=3))) == min(n + 1, 3)
                put(saver, "shared", 100 * worker + n)
                saver.get_tuple(config("shared"))

        with ThreadPoolExecutor(6) as pool:
            list(pool.map(steps, range(6)))  # a worker's failure is raised here
        for thread_id in ["shared", *(f"own-{w}" for w in range(6))]:
            assert answers(saver, thread_id) == fresh(power, thread_id), thread_id


# -- checkpoints named by id: a second read of one is viewed, and every change is seen ---------


def by_id(saver: PraisonSaver, thread_id: str, checkpoint_id: str) -> Any:
    found = saver.get_tuple(config(thread_id, checkpoint_id=checkpoint_id))
    return None if found is None else _shown(found)


def fresh_by_id(url: str, thread_id: str, checkpoint_id: str, **settings: Any) -> Any:
    with PraisonSaver(open_store(url), settings=settings or None) as saver:
        return by_id(saver, thread_id, checkpoint_id)


def held(saver: PraisonSaver, thread_id: str, checkpoint_id: str) -> bool:
    """Whether the saver's view of the thread holds the checkpoint, still certified."""
    threads: Threads = saver._threads
    for key, view in list(threads._views.items()):
        if key.session_id == thread_id and ("", checkpoint_id) in view.loaded:
            return threads._certified(key, view)
    return False


def history(saver: PraisonSaver, thread_id: str, steps: int, run: str | None = None) -> list[str]:
    """The ids of ``steps`` checkpoints put in a row (of run ``run``, when given)."""
    ids = []
    for n in range(steps):
        latest = saver.get_tuple(config(thread_id))
        checkpoint = empty_checkpoint()
        version = saver.get_next_version(
            None if latest is None else latest.checkpoint["channel_versions"]["n"], None
        )
        checkpoint["channel_values"] = {"n": n}
        checkpoint["channel_versions"] = {"n": version}
        parent = config(thread_id) if latest is None else latest.config
        if run is not None:
            parent = {"configurable": {**parent["configurable"], "run_id": run}}
        saver.put(parent, checkpoint, {"source": "loop", "step": n}, {"n": version})
        ids.append(checkpoint["id"])
    return ids


def read_twice(saver: PraisonSaver, thread_id: str, checkpoint_id: str) -> Any:
    """Read a checkpoint by id twice: the second read leaves it in the view."""
    first = by_id(saver, thread_id, checkpoint_id)
    assert by_id(saver, thread_id, checkpoint_id) == first
    assert held(saver, thread_id, checkpoint_id)
    return first


def test_a_checkpoint_read_by_id_again_is_served_from_the_view(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PraisonSaver(url) as saver:
        ids = history(saver, "t", 20)
        first = by_id(saver, "t", ids[3])
        assert first[1] == {"n": 3} and not held(saver, "t", ids[3])  # read once: not kept
        assert read_twice(saver, "t", ids[3]) == first == fresh_by_id(url, "t", ids[3])

        def no_read(*args: Any) -> Any:
            raise AssertionError("read from the store")

        with monkeypatch.context() as patched:
            patched.setattr(saver._threads, "_load_one", no_read)
            found = saver.get_tuple(config("t", checkpoint_id=ids[3]))  # from the view
            assert _shown(found) == first
            found.checkpoint["channel_values"]["n"] = "changed"
            found.metadata["step"] = "changed"
            found.checkpoint["channel_versions"].clear()
            assert by_id(saver, "t", ids[3]) == first  # what a caller changes stays its own
        assert fresh_by_id(url, "t", ids[3]) == first


def test_writes_to_an_older_checkpoint_by_anyone_are_seen(url: str) -> None:
    with PraisonSaver(url) as saver, PraisonSaver(open_store(url)) as other:
        ids = history(saver, "t", 20)
        read_twice(saver, "t", ids[5])
        other.put_writes(config("t", checkpoint_id=ids[5]), [("n", 50)], "late")
        assert by_id(saver, "t", ids[5]) == fresh_by_id(url, "t", ids[5])
        assert by_id(saver, "t", ids[5])[3] == [("late", "n", 50)]
        read_twice(saver, "t", ids[5])
        other_process(url, f"writes:t:51:{ids[5]}")  # another process
        assert by_id(saver, "t", ids[5])[3] == [("late", "n", 50), ("p51", "n", 51)]
        read_twice(saver, "t", ids[5])
        done = threading.Thread(  # this saver, on another thread (another connection)
            target=saver.put_writes, args=(config("t", checkpoint_id=ids[5]), [("n", 52)], "x")
        )
        done.start()
        done.join()
        assert ("x", "n", 52) in by_id(saver, "t", ids[5])[3]
        for task in range(20):  # past the writes document, into its log
            read_twice(saver, "t", ids[5])
            other.put_writes(config("t", checkpoint_id=ids[5]), [("n", task)], f"many{task}")
            assert by_id(saver, "t", ids[5]) == fresh_by_id(url, "t", ids[5]), task
        assert len(by_id(saver, "t", ids[5])[3]) == 23
        read_twice(saver, "t", ids[6])
        other.put_writes(put(other, "u", 1), [("n", 9)], "u-task")  # another thread
        assert by_id(saver, "t", ids[6]) == fresh_by_id(url, "t", ids[6])
        read_twice(saver, "t", ids[6])
        put(other, "t", 99)  # a new checkpoint on the thread: the older one is unchanged
        assert by_id(saver, "t", ids[6]) == fresh_by_id(url, "t", ids[6])


def test_an_older_checkpoint_pruned_deleted_or_erased_is_gone(url: str) -> None:
    with PraisonSaver(url) as saver, PraisonSaver(open_store(url)) as other:
        ids = history(saver, "t", 20)
        read_twice(saver, "t", ids[2])
        other.prune(["t"])  # keep_latest: ids[2] goes
        assert by_id(saver, "t", ids[2]) is None is fresh_by_id(url, "t", ids[2])
        assert by_id(saver, "t", ids[19]) == fresh_by_id(url, "t", ids[19])

        ids = history(saver, "r", 4, run="run-1") + history(saver, "r", 4, run="run-2")
        read_twice(saver, "r", ids[1])
        read_twice(saver, "r", ids[6])
        other.delete_for_runs(["run-1"])
        assert by_id(saver, "r", ids[1]) is None is fresh_by_id(url, "r", ids[1])
        assert by_id(saver, "r", ids[6]) == fresh_by_id(url, "r", ids[6]) is not None

        ids = history(saver, "p", 20)
        read_twice(saver, "p", ids[4])
        other_process(url, "prune:p:0")
        assert by_id(saver, "p", ids[4]) is None is fresh_by_id(url, "p", ids[4])
        ids = history(saver, "p", 5)
        read_twice(saver, "p", ids[1])
        other_process(url, "delete:p:0")
        assert by_id(saver, "p", ids[1]) is None

        ids = history(saver, "d", 5)
        read_twice(saver, "d", ids[1])
        other.delete_thread("d")
        assert by_id(saver, "d", ids[1]) is None
        # put again under the same id, with other values: the new checkpoint, not the old
        again = history(other, "d", 1)
        read_twice(saver, "d", again[0])
        other.delete_thread("d")
        checkpoint = empty_checkpoint()
        checkpoint["id"] = again[0]
        checkpoint["channel_values"] = {"n": "again"}
        checkpoint["channel_versions"] = {"n": "7"}
        other.put(config("d"), checkpoint, {"source": "loop", "step": 7}, {"n": "7"})
        assert by_id(saver, "d", again[0])[1] == {"n": "again"}
    with PraisonSaver(url, user_id="eve") as saver:
        ids = history(saver, "e", 5)
        read_twice(saver, "e", ids[2])
        store = open_store(url)
        assert erase_user("eve", store).session_ids == ["e"]
        assert by_id(saver, "e", ids[2]) is None
        asyncio.run(store.close())


def test_an_older_checkpoint_of_a_thread_given_a_ttl_or_purged_is_gone(
    url: str, frozen_clock: Any
) -> None:
    with PraisonSaver(url) as saver:
        ids = history(saver, "t", 5)
        read_twice(saver, "t", ids[1])
        store = open_store(url)
        asyncio.run(store.touch("t", ttl=60))  # a TTL given later: no view holds it now
        frozen_clock.advance(30)
        assert by_id(saver, "t", ids[1]) == fresh_by_id(url, "t", ids[1]) is not None
        assert by_id(saver, "t", ids[1]) is not None
        frozen_clock.advance(61)
        assert by_id(saver, "t", ids[1]) is None
        assert not held(saver, "t", ids[1])  # a thread with a TTL is never viewed
        ids = history(saver, "p", 5)
        read_twice(saver, "p", ids[1])
        asyncio.run(store.expire("p"))
        assert asyncio.run(store.purge_expired()) == 2  # "p", and "t", expired above
        assert by_id(saver, "p", ids[1]) is None
        asyncio.run(store.close())


def test_an_encrypted_saver_views_a_checkpoint_by_id_and_sees_other_writers(
    tmp_path: Path,
) -> None:
    url = f"sqlite://{tmp_path}/sealed.db"
    settings = {"encryption_key": ENCRYPTION_KEY}
    with PraisonSaver(url, settings=settings) as saver:
        ids = history(saver, "t", 5)
        first = read_twice(saver, "t", ids[2])
        assert first == fresh_by_id(url, "t", ids[2], **settings)
        other_process(url, f"writes:t:8:{ids[2]}", settings=repr(settings))
        assert by_id(saver, "t", ids[2])[3] == [("p8", "n", 8)]
        assert by_id(saver, "t", ids[2]) == fresh_by_id(url, "t", ids[2], **settings)


def test_interleaved_writers_never_make_a_read_by_id_answer_otherwise_than_a_fresh_saver(
    url: str,
) -> None:
    chance = random.Random(41)
    with PraisonSaver(url) as saver, PraisonSaver(open_store(url)) as other:
        ids = {thread: history(saver, thread, 8) for thread in ("a", "b")}
        for n in range(80):
            thread = chance.choice(["a", "b"])
            move = chance.random()
            target = chance.choice([saver, other])
            if move < 0.25:
                ids[thread] += history(target, thread, 1)
            elif move < 0.5 and ids[thread]:
                named = config(thread, checkpoint_id=chance.choice(ids[thread]))
                if target.get_tuple(named) is not None:
                    target.put_writes(named, [("n", n)], f"w{n}")
            elif move < 0.55:
                target.delete_thread(thread)
            elif move < 0.6:
                target.prune([thread])
            for looked in ("a", "b"):
                for checkpoint_id in chance.sample(ids[looked], min(3, len(ids[looked]))):
                    for _ in range(2):  # the second read is viewed, and must stay true
                        assert by_id(saver, looked, checkpoint_id) == fresh_by_id(
                            url, looked, checkpoint_id
                        ), (n, looked)


def test_what_views_and_reads_by_id_hold_is_bounded(url: str) -> None:
    from praisonsession.integrations import langgraph_threads

    with PraisonSaver(url) as saver:
        ids = history(saver, "t", 150)
        for checkpoint_id in ids:
            assert by_id(saver, "t", checkpoint_id) == by_id(saver, "t", checkpoint_id)
        threads: Threads = saver._threads
        (view,) = threads._views.values()
        assert len(view.loaded) <= langgraph_threads._VIEWED
        assert all(("", checkpoint_id) in view.loaded for checkpoint_id in ids[-20:])
        assert len(threads._asked) == langgraph_threads._VIEWED
        # asked for 64 reads ago: forgotten, so its next read is not viewed either
        view.loaded.clear()
        for checkpoint_id in ids[:64]:
            by_id(saver, "t", checkpoint_id)
        by_id(saver, "t", ids[100])
        assert not held(saver, "t", ids[100])
        assert len(threads._asked) == langgraph_threads._VIEWED
        by_id(saver, "t", ids[100])
        assert held(saver, "t", ids[100])
