"""Embedded Chroma shared by processes: a process that has opened a user's memory finds what
other processes remember after it, and never loses it.

Embedded Chroma keeps each collection's vector index in the memory of each process, caught up
from the write log once, at first use: before ``freshness.py`` such a process failed with
``InternalError: Error finding id`` (or ``Nothing found on disk`` when it had found the
collection empty), or silently missed the other's memories, and an index it saved later wrote
over the other's on disk. Every writer here is a real process that has exited when the first
reads again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from held import SAFETY
from praisonsession import Session

pytestmark = pytest.mark.slow

SAILING = [f"Ben's sailing note number {i}: the boat needs a new mainsail" for i in range(3)]


def open_(tmp_path: Path, session_id: str = "s1") -> Session:
    return Session(
        session_id,
        "ada",
        store=f"sqlite://{tmp_path}/sessions.db",
        settings={"data_dir": str(tmp_path / "data")},
    )


def in_another_process(tmp_path: Path, session_id: str, code: str) -> str:
    """Run ``code`` with ``s``, the session ``session_id`` of user ada, in a new process that
    exits when it is done; what it printed."""
    opened = (
        "from praisonsession import Session\n"
        f"s = Session({session_id!r}, 'ada', store='sqlite://{tmp_path}/sessions.db', "
        f"settings={{'data_dir': {str(tmp_path / 'data')!r}}})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", opened + code], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


#: Makes the collection ``memory_shared`` in the folder ``sys.argv[1]`` as praisonsession made
#: one before it set ``SAVED_EVERY``: with Chroma's default saving; prints its sync_threshold.
MADE_BEFORE = (
    "import sys, chromadb\n"
    "from chromadb.config import Settings\n"
    "from praisonsession.recall.embeddings import MiniLMEmbedder, "
    "as_chroma_embedding_function\n"
    "model = MiniLMEmbedder()\n"
    "client = chromadb.PersistentClient(sys.argv[1], Settings(anonymized_telemetry=False))\n"
    "made = client.create_collection('memory_shared', configuration={'hnsw': {'space': "
    "'cosine'}}, metadata={'embedder': model.name, 'dimension': model.dimension}, "
    "embedding_function=as_chroma_embedding_function(model))\n"
    "print(made.configuration_json['hnsw']['sync_threshold'])\n"
)


def made_before(folder: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", MADE_BEFORE, str(folder)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1000"]


@pytest.mark.parametrize("remembered_first", [True, False], ids=["own-memory", "empty"])
@pytest.mark.parametrize("writer_session", ["s1", "s2"], ids=["same-session", "other-session"])
def test_a_search_finds_what_another_process_remembered_after_it_searched(
    tmp_path: Path, remembered_first: bool, writer_session: str
) -> None:
    mine = open_(tmp_path)
    own = mine.add_memory("Ada likes green tea") if remembered_first else None
    mine_alone = [hit["text"] for hit in mine.search_memory("sailing")]
    assert mine_alone == ([] if own is None else ["Ada likes green tea"])
    printed = in_another_process(
        tmp_path, writer_session, f"print(','.join(s.add_memory(t) for t in {SAILING!r}))\n"
    )
    theirs = printed.strip().split(",")

    found = mine.search_memory("sailing boat mainsail", limit=5)
    assert sorted(hit["text"] for hit in found[:3]) == SAILING
    assert {hit["id"] for hit in found[:3]} == set(theirs)
    assert [hit["text"] for hit in found[3:]] == ([] if own is None else ["Ada likes green tea"])
    assert [memory["text"] for memory in mine.list_memories()] == (
        ([] if own is None else ["Ada likes green tea"]) + SAILING
    )
    assert mine.get_memory(theirs[0])["text"] == SAILING[0]
    if own is not None:
        assert mine.get_memory(own)["text"] == "Ada likes green tea"


def test_a_search_by_meaning_alone_or_filtered_finds_another_processes_memory(
    tmp_path: Path,
) -> None:
    mine = open_(tmp_path)
    mine.add_memory("I go running every morning before work")
    assert [hit["text"] for hit in mine.search_memory("exercise habits")] == [
        "I go running every morning before work"
    ]
    in_another_process(
        tmp_path, "s2", "s.add_memory('I would like a refund for the broken blender')\n"
    )

    refund = "I would like a refund for the broken blender"
    # no word in common: only the vector index can find it (it was missed, not failed, before)
    assert mine.search_memory("getting my money back", limit=1)[0]["text"] == refund
    # a filter makes Chroma look its entries up in the index by id: it failed before
    filtered = mine.search_memory("refund", where={"session_id": "s2"})
    assert [hit["text"] for hit in filtered] == [refund]
    recent = mine.search_memory("getting my money back", limit=1, prefer_recent=True)
    assert recent[0]["text"] == refund


def test_knowledge_another_process_added_is_found(tmp_path: Path) -> None:
    mine = open_(tmp_path)
    mine.add_knowledge("The office opens at nine in the morning.")
    assert mine.search_knowledge("opening hours")[0]["text"] == (
        "The office opens at nine in the morning."
    )
    in_another_process(tmp_path, "s1", "s.add_knowledge('Parking is free for visitors.')\n")
    found = mine.search_knowledge("where can I leave the car", limit=2)
    assert [hit["text"] for hit in found] == [
        "Parking is free for visitors.",
        "The office opens at nine in the morning.",
    ]


def entries_process(folder: Path, *job: str) -> Any:
    """``vector_entries.py`` run in a new process on ``folder``; what it printed, as JSON."""
    script = Path(__file__).with_name("vector_entries.py")
    done = subprocess.run(
        [sys.executable, str(script), str(folder), *job],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def test_an_index_saved_by_a_process_keeps_what_another_process_saved(tmp_path: Path) -> None:
    """Chroma saves a process's index to disk every 1,000 entries it applies. A process whose
    index had not caught up with another's 1,100 entries saved its own over theirs: a fresh
    process then found none of them by their own vectors (0 of 22) and failed to read their
    vectors."""
    from vector_entries import index_at, probe, write

    folder = tmp_path / "chroma"
    index = index_at(folder)  # this process's
    write(index, "a", 1, 1)
    assert [hit.id for hit in index.query([0.1] * 384, 3)] == ["a0"]
    entries_process(folder, "write", "b", "1100", "2")  # saves its index (past 1,000), exits
    write(index, "c", 1100, 3)  # as many here: this process saves its index in turn

    assert entries_process(folder, "probe", "b", "1100", "2") == {
        "found by their own vector": 22,
        "probed": 22,
        "vectors read": 5,
        "count": 2201,
    }
    assert probe(index, "c", 1100, 3)["found by their own vector"] == 22


def test_a_process_alone_never_reopens_its_store(tmp_path: Path) -> None:
    from praisonsession._internal import runtime
    from praisonsession.recall.vectors.index import _freshness

    mine = open_(tmp_path)
    for i in range(5):
        mine.add_memory(f"Ada's fact number {i} about tea")
        assert mine.search_memory(f"fact number {i}", limit=1)[0]["text"] == (
            f"Ada's fact number {i} about tea"
        )
    other = open_(tmp_path, "s2")  # another session of the process: the same engine
    other.add_memory("Ada's other session notes about coffee")
    assert mine.search_memory("coffee", limit=1)[0]["text"] == (
        "Ada's other session notes about coffee"
    )
    recall = runtime.run(mine._core._memory())
    watch = _freshness[id(recall.long.index.index._client)]
    assert watch.reopened == 0


def test_an_index_found_lacking_an_entry_is_reopened_once(tmp_path: Path) -> None:
    """A writer the positions cannot account for (one racing this process's own write):
    Chroma's error on the index makes the engine reopen, and the read is answered."""
    from praisonsession._internal import runtime
    from praisonsession.recall.vectors.index import _freshness

    mine = open_(tmp_path)
    mine.add_memory("Ada likes green tea")
    assert mine.search_memory("tea")[0]["text"] == "Ada likes green tea"
    in_another_process(tmp_path, "s2", f"s.add_memory({SAILING[0]!r})\n")
    recall = runtime.run(mine._core._memory())
    index = recall.long.index.index
    watch = _freshness[id(index._client)]
    collection = str(index.collection.id)
    watch.wrote(collection, watch.generation)  # as if the other write had been this one's
    filtered = mine.search_memory("mainsail", where={"session_id": "s2"})
    assert [hit["text"] for hit in filtered] == [SAILING[0]]
    assert watch.reopened == 1


def test_an_embedded_index_is_saved_every_100_entries_old_collections_too(
    tmp_path: Path,
) -> None:
    """What a reopened engine or a new process adds again from the log is what was written
    since the index was last saved: at most 99 entries, not Chroma's default 999."""
    from vector_entries import index_at, write

    folder = tmp_path / "chroma"
    made_before(folder)
    index = index_at(folder)
    write(index, "a", 250, 1)
    assert index.collection.configuration_json["hnsw"]["sync_threshold"] == 100
    fresh = index_at(tmp_path / "other")
    write(fresh, "b", 1, 2)
    assert fresh.collection.configuration_json["hnsw"]["sync_threshold"] == 100
    assert entries_process(folder, "saved") == {"entries": 250, "unsaved": 50}  # saved at 200


#: A writer at work on the SQLite file ``sys.argv[1]``: its write lock, held until a line comes.
WRITER = (
    "import sqlite3, sys\n"
    "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "conn.execute('BEGIN IMMEDIATE')\n"
    "print('held', flush=True)\n"
    "sys.stdin.readline()\n"
    "conn.execute('COMMIT')\n"
)


def test_an_old_collection_is_set_to_save_often_while_another_writer_holds_the_file(
    tmp_path: Path,
) -> None:
    """Chroma refuses its configuration change at once ("database is locked", no wait) while
    another writer holds ``chroma.sqlite3``: another process's, or, under load, a connection of
    Chroma's own as it opens the store. The change is made again until the writer is done,
    not raised from the memory call that opened the collection."""
    from praisonsession.recall.embeddings import MiniLMEmbedder, as_chroma_embedding_function
    from praisonsession.recall.vectors.freshness import saved_often
    from praisonsession.recall.vectors.index import vector_store

    folder = tmp_path / "chroma"
    made_before(folder)
    function = as_chroma_embedding_function(MiniLMEmbedder())
    collection = vector_store(folder).get_collection("memory_shared", embedding_function=function)
    tried: list[dict[str, Any]] = []

    class Counted:
        """The collection, each modify counted."""

        configuration_json = collection.configuration_json

        def modify(self, **change: Any) -> None:
            tried.append(change)
            collection.modify(**change)

    failed: list[Exception] = []

    def opening() -> None:
        try:
            saved_often(Counted())
        except Exception as exc:
            failed.append(exc)

    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder / "chroma.sqlite3")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    thread = threading.Thread(target=opening)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "held\n"
        thread.start()
        while len(tried) < 2 and thread.is_alive():  # refused once at least, while held
            time.sleep(0.001)
        assert len(tried) >= 2, failed
    finally:
        writer.communicate("done\n", timeout=SAFETY)  # the writer commits and ends
    thread.join()
    assert failed == []
    again = vector_store(folder).get_collection("memory_shared", embedding_function=function)
    assert again.configuration_json["hnsw"]["sync_threshold"] == 100
