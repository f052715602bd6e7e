"""An agent resumed in a new process recalls its older turns without embedding them again.

The vectors of an agent's turns are saved beside its conversation (the log ``$turns/<log>``).
Checked here on real SQLite files, in real processes (``process_workers.py``'s
``recall-chat``), and on every backend: what a resumed index embeds (an embedder that records
its calls, never a clock), that it ranks as an index built afresh from the log does, and that
a log cut, rewritten, forked, restored, written by two processes at once, encrypted, rekeyed
or erased never gives a turn a vector that is not its own text's.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from backends import SERVERS, SHARED, store_url
from llm_server import ScriptedChatServer
from praisonsession import AsyncSession, Session, SessionBase, clock, erase_user, open_store
from praisonsession._internal import runtime
from praisonsession.recall.embeddings import MiniLMEmbedder
from praisonsession.recall.memory.turn_vectors import PREFIX, text_digest
from praisonsession.recall.memory.turns import TurnIndex
from praisonsession.stores import record_key
from process_workers import said, worker_command

KEY = base64.urlsafe_b64encode(b"k" * 32).decode()
OTHER_KEY = base64.urlsafe_b64encode(b"o" * 32).decode()
LOG = "agent:Tutor.history"
QUERIES = ["what is my locker code?", "how do I tie a sailing knot?", "when is the train?"]


class Recording:
    """The real model, recording what it is asked to embed."""

    def __init__(self, model: MiniLMEmbedder) -> None:
        self.model = model
        self.name = model.name
        self.dimension = model.dimension
        self.embedded: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return self.model.embed(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()  # loaded once for the module


def turns_of(texts: list[str]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for text in texts:
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
    return messages


def sayings(name: str, count: int, first: int = 0) -> list[str]:
    return [said(name, i) for i in range(first, first + count)]


def run_on(core: AsyncSession, work: Any) -> Any:
    async def opened() -> Any:
        async with core:
            return await work(core)

    return runtime.run(opened())


async def ranked(index: TurnIndex, model: MiniLMEmbedder, before: int) -> list[list[int]]:
    """The turns ``index`` recalls for each of QUERIES, by their first message."""
    found = []
    for query in QUERIES:
        hits = await index.search(LOG, model.embed_query(query), before, 4, 0.0, query=query)
        found.append([start for start, _ in hits])
    return found


async def afresh(core: AsyncSession, model: MiniLMEmbedder, before: int) -> list[list[int]]:
    """What an index built from the log alone recalls (no saved vector read or written)."""
    return await ranked(TurnIndex(core, model, save=False), model, before)


# -- every backend ------------------------------------------------------------------------


def test_a_new_index_reads_the_saved_vectors_and_ranks_as_one_built_afresh(
    store: SessionBase, model: MiniLMEmbedder
) -> None:
    texts = sayings("ada", 30)

    async def work(core: AsyncSession) -> tuple[list[str], list[str], Any, Any]:
        await core.append_messages(LOG, turns_of(texts))
        first = Recording(model)
        assert await TurnIndex(core, first).index(LOG, 60) == 30
        second = Recording(model)
        resumed = TurnIndex(core, second)  # as a new process would hold it
        found = await ranked(resumed, model, 60)
        return first.embedded, second.embedded, found, await afresh(core, model, 60)

    first, second, found, expected = run_on(AsyncSession("s", "u", store=store), work)
    assert first == texts  # each turn embedded once, by what the user said
    assert second == []  # the second index embedded nothing
    assert found == expected and all(len(hits) == 4 for hits in found)
    records = runtime.run(store.read_messages("s", "u", PREFIX + LOG))
    assert sum(len(r["starts"]) for r in records) == 30  # one batch saved, nothing again


# -- a rewritten log ----------------------------------------------------------------------


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sessions.db'}"


def test_a_fork_at_a_message_embeds_only_what_it_says_anew(
    sqlite_url: str, model: MiniLMEmbedder
) -> None:
    async def work(core: AsyncSession) -> tuple[list[str], Any, Any]:
        await core.append_messages(LOG, turns_of(sayings("ada", 20)))
        await TurnIndex(core, model).index(LOG, 40)
        child = await core.fork("child", at_message=(LOG, 20))  # the first 10 turns
        async with child:
            await child.append_messages(LOG, turns_of(sayings("bob", 10)))
            recording = Recording(model)
            found = await ranked(TurnIndex(child, recording), model, 40)
            return recording.embedded, found, await afresh(child, model, 40)

    embedded, found, expected = run_on(AsyncSession("s", "u", store=sqlite_url), work)
    assert embedded == sayings("bob", 10)  # at positions 20-38 the parent said other things
    assert found == expected


def test_a_log_cut_and_said_again_gets_no_vector_of_what_it_held(
    sqlite_url: str, model: MiniLMEmbedder
) -> None:
    async def work(core: AsyncSession) -> tuple[list[str], list[str], Any, Any, Any]:
        await core.append_messages(LOG, turns_of(sayings("ada", 20)))
        recording = Recording(model)
        index = TurnIndex(core, recording)
        await index.index(LOG, 40)
        key = record_key("s", "u")
        await core.store.backend.truncate_log(
            key, path=LOG, length=20, expected=None
        )  # back to turn 10
        # said again: the same words at turn 10, other words after it
        await core.append_messages(LOG, turns_of([said("ada", 10), *sayings("eve", 9)]))
        recording.embedded.clear()
        found = await ranked(index, model, 40)  # this process notices the rewrite
        again = Recording(model)
        resumed = await ranked(TurnIndex(core, again), model, 40)  # and so does the next one
        return recording.embedded, again.embedded, found, resumed, await afresh(core, model, 40)

    embedded, again, found, resumed, expected = run_on(
        AsyncSession("s", "u", store=sqlite_url), work
    )
    assert embedded == sayings("eve", 9)  # what was said anew; turn 10 kept its vector
    assert again == []
    assert found == resumed == expected


def test_a_restored_snapshot_keeps_the_vectors_of_its_own_turns(
    sqlite_url: str, model: MiniLMEmbedder
) -> None:
    async def work(core: AsyncSession) -> tuple[list[str], list[str], Any, Any]:
        await core.append_messages(LOG, turns_of(sayings("ada", 10)))
        await TurnIndex(core, model).index(LOG, 20)
        snapshot = await core.snapshot("ten turns")
        await core.append_messages(LOG, turns_of(sayings("ada", 10, first=10)))
        await TurnIndex(core, model).index(LOG, 40)
        await core.restore(snapshot)  # back to ten turns, and to the vectors saved then
        restored = Recording(model)
        await TurnIndex(core, restored).index(LOG, 20)
        await core.append_messages(LOG, turns_of(sayings("eve", 10)))
        later = Recording(model)
        found = await ranked(TurnIndex(core, later), model, 40)
        return restored.embedded, later.embedded, found, await afresh(core, model, 40)

    restored, later, found, expected = run_on(AsyncSession("s", "u", store=sqlite_url), work)
    assert restored == []
    assert later == sayings("eve", 10)  # not the vectors of ada's turns 10-19 it held once
    assert found == expected


def test_a_session_expired_and_opened_again_has_no_saved_vector_of_its_old_turns(
    sqlite_url: str, model: MiniLMEmbedder, frozen_clock: clock.ManualClock
) -> None:
    async def before(core: AsyncSession) -> None:
        await core.append_messages(LOG, turns_of(sayings("ada", 10)))
        await TurnIndex(core, model).index(LOG, 20)

    run_on(AsyncSession("s", "u", store=sqlite_url, session_ttl=60), before)
    frozen_clock.advance(61)

    async def after(core: AsyncSession) -> tuple[list[str], int, Any, Any]:
        await core.append_messages(LOG, turns_of(sayings("eve", 10)))
        recording = Recording(model)
        found = await ranked(TurnIndex(core, recording), model, 20)
        records = await core.read_messages(PREFIX + LOG)
        return recording.embedded, len(records), found, await afresh(core, model, 20)

    embedded, records, found, expected = run_on(
        AsyncSession("s", "u", store=sqlite_url, session_ttl=60), after
    )
    assert embedded == sayings("eve", 10)  # the same positions held ada's words: gone with them
    assert records == 1 and found == expected


# -- encryption and erasure ---------------------------------------------------------------


def every_byte(root: Path) -> bytes:
    return b"".join(path.read_bytes() for path in root.rglob("*") if path.is_file())


def test_saved_vectors_of_an_encrypted_session_hold_no_readable_text_and_survive_rekey(
    tmp_path: Path, model: MiniLMEmbedder
) -> None:
    from praisonsession.session.rotation import rekey

    plain_url = f"sqlite:///{tmp_path / 'sessions.db'}"
    texts = [f"my pelican-4471 note {i}: the locker code is {1000 + i}" for i in range(12)]

    def sealed(key: str) -> AsyncSession:
        return AsyncSession("s", "u", store=plain_url, settings={"encryption_key": key})

    async def write(core: AsyncSession) -> list[dict[str, Any]]:
        await core.append_messages(LOG, turns_of(texts))
        await TurnIndex(core, model).index(LOG, 24)
        return await core.read_messages(PREFIX + LOG)

    records = run_on(sealed(KEY), write)
    assert [len(r["starts"]) for r in records] == [12]
    stored = every_byte(tmp_path)
    assert b"pelican-4471" not in stored
    assert b"turn_vectors" not in stored and b"digests" not in stored  # sealed whole
    packed = records[0]["vectors"].encode()
    assert not any(packed[at : at + 16] in stored for at in range(0, len(packed) - 16, 500))
    assert not any(text_digest(text).encode() in stored for text in texts)

    async def resume(core: AsyncSession) -> tuple[list[str], Any, Any]:
        recording = Recording(model)
        found = await ranked(TurnIndex(core, recording), model, 24)
        return recording.embedded, found, await afresh(core, model, 24)

    embedded, found, expected = run_on(sealed(KEY), resume)
    assert embedded == [] and found == expected

    plain = open_store(plain_url)
    rekey(KEY, OTHER_KEY, plain, vector_store=None)
    runtime.run(plain.close())
    embedded, found, expected = run_on(sealed(OTHER_KEY), resume)
    assert embedded == [] and found == expected  # rekeyed with the session, still read


def test_erasing_the_user_erases_the_saved_vectors(tmp_path: Path, model: MiniLMEmbedder) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"

    async def write(core: AsyncSession) -> list[dict[str, Any]]:
        await core.append_messages(LOG, turns_of(sayings("ada", 12)))
        await TurnIndex(core, model).index(LOG, 24)
        return await core.read_messages(PREFIX + LOG)

    records = run_on(AsyncSession("s", "erin", store=url), write)
    packed = records[0]["vectors"].encode()
    pieces = [packed[at : at + 16] for at in range(0, len(packed) - 16, 500)]  # pages split it
    stored = every_byte(tmp_path)
    assert sum(piece in stored for piece in pieces) > len(pieces) // 2
    erase_user("erin", store=url, settings={"data_dir": str(tmp_path / "data")})
    stored = every_byte(tmp_path)
    assert not any(piece in stored for piece in pieces)


# -- agents in processes of their own -----------------------------------------------------


@pytest.fixture
def llm() -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer(lambda request: "noted") as server:
        yield server


def recall_chat(
    url: str, data: Path, name: str, count: int, llm: ScriptedChatServer, query: str
) -> dict[str, Any]:
    args = [url, str(data), "-", name, str(count), llm.url, query]
    done = subprocess.run(
        worker_command("recall-chat", *args), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(params=SHARED)
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store many processes open by URL: JSON, SQLite, Redis and PostgreSQL (whose memory
    follows it onto pgvector: no Chroma)."""
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return store_url(request.param, tmp_path)


@pytest.mark.slow
def test_an_agent_resumed_in_a_new_process_embeds_only_its_new_message(
    tmp_path: Path, model: MiniLMEmbedder, llm: ScriptedChatServer, shared_url: str
) -> None:
    url = shared_url
    texts = sayings("ada", 40)

    async def seed(core: AsyncSession) -> None:
        await core.append_messages(LOG, turns_of(texts))
        await TurnIndex(core, model).index(LOG, 80)  # as the agent did while it chatted

    run_on(AsyncSession("shared", "u", store=url), seed)
    query = QUERIES[0]
    resumed = recall_chat(url, tmp_path / "data", "bob", 1, llm, query)
    assert resumed["embedded"] == []  # no old turn, and its own turn had its query's vector
    assert resumed["queries"] == [said("bob", 0), query]

    async def rebuilt(core: AsyncSession) -> list[int]:
        index = TurnIndex(core, model, save=False)
        hits = await index.search(
            LOG, model.embed_query(query), resumed["before"], 4, 0.25, query=query
        )
        return [start for start, _ in hits]

    expected = run_on(AsyncSession("shared", "u", store=url), rebuilt)
    assert resumed["recalled"] == expected and expected

    # the same process without saved vectors (what every resumed agent did before): all again
    Session("shared", "u", store=url).clear_messages(PREFIX + LOG)
    again = recall_chat(url, tmp_path / "data", "cy", 1, llm, query)
    assert again["embedded"][:40] == texts  # every old turn, each once
    assert len(again["embedded"]) == len(set(again["embedded"]))
    assert again["recalled"] == run_on(AsyncSession("shared", "u", store=url), rebuilt)


@pytest.mark.slow
def test_two_processes_chatting_on_one_session_share_their_saved_vectors(
    tmp_path: Path, model: MiniLMEmbedder, llm: ScriptedChatServer
) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    query = QUERIES[1]
    workers = [
        subprocess.Popen(
            worker_command(
                "recall-chat", url, str(tmp_path / "data"), str(barrier), name, "12", llm.url, query
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("ann", "ben")
    ]
    for name in ("ann", "ben"):
        ready = barrier / f"ready-{name}"
        for _ in range(3000):
            if ready.exists():
                break
            subprocess.run(["sleep", "0.05"], check=True)
    (barrier / "go").touch()
    for worker in workers:
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err

    async def check(core: AsyncSession) -> tuple[list[str], list[str], set[int], Any, Any]:
        history = await core.read_messages(LOG)
        records = await core.read_messages(PREFIX + LOG)
        saved = {
            (start, digest)
            for record in records
            for start, digest in zip(record["starts"], record["digests"], strict=True)
        }
        starts = [i for i, m in enumerate(history) if m["role"] == "user"]
        unsaved = [
            history[i]["content"]
            for i in starts
            if (i, text_digest(history[i]["content"])) not in saved
        ]
        recording = Recording(model)
        found = await ranked(TurnIndex(core, recording), model, len(history))
        covered = {start for start, _ in saved}
        return recording.embedded, unsaved, covered, found, await afresh(core, model, len(history))

    embedded, unsaved, covered, found, expected = run_on(
        AsyncSession("shared", "u", store=url), check
    )
    assert embedded == unsaved  # exactly the turns no process saved a vector for
    assert found == expected
    history = Session("shared", "u", store=url).read_messages(LOG)
    authors = {history[start]["content"].split()[0] for start in covered}
    assert authors == {"ann", "ben"}  # each process saved vectors the other could read


def test_clearing_an_agents_history_clears_the_saved_vectors_of_its_turns(
    sqlite_url: str, llm: ScriptedChatServer
) -> None:
    session = Session(
        "s",
        "u",
        store=sqlite_url,
        settings={"data_dir": str(Path(sqlite_url[10:]).parent / "data")},
    )
    agent = session.Agent("Tutor", history_window=2, llm={"base_url": llm.url, "model": "m"})
    for text in sayings("ada", 8):
        agent.chat(text)
    assert session.recall_turns(agent.log_name, QUERIES[0], 8, 4)  # indexed, vectors saved
    assert session.message_count(PREFIX + agent.log_name) > 0
    agent.clear_history()
    assert session.message_count(PREFIX + agent.log_name) == 0
    assert session.recall_turns(agent.log_name, QUERIES[0], 8, 4) == []


def test_an_export_counts_saved_vector_records_apart_from_messages(
    tmp_path: Path, model: MiniLMEmbedder
) -> None:
    from click.testing import CliRunner

    from praisonsession.apps.cli import main

    url = f"sqlite:///{tmp_path / 'sessions.db'}"

    async def write(core: AsyncSession) -> None:
        await core.append_messages(LOG, turns_of(sayings("ada", 5)))
        await TurnIndex(core, model).index(LOG, 10)

    run_on(AsyncSession("s", "u", store=url), write)
    archive = str(tmp_path / "s.jsonl")
    said_ = CliRunner().invoke(main, ["export", "s", archive, "--user", "u", "--store", url])
    assert said_.exit_code == 0, said_.output
    assert "11 log entries (10 messages, 1 saved vector record)" in said_.output


OPEN_AT_ONCE = """
import sys, time
from pathlib import Path
import chromadb  # imported before the start, so that the openings meet
from praisonsession.recall.vectors.index import vector_store
folder, go = sys.argv[1], Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
client = vector_store(folder)
print(client.get_or_create_collection("memories").count())
"""


@pytest.mark.slow
def test_processes_opening_one_new_memory_folder_at_once_all_open_it(tmp_path: Path) -> None:
    """Chroma makes its tables at a new folder's first opening without a lock of its own: two
    processes starting on one new data directory at once had one fail ("table collections
    already exists"). Four processes open each of three new folders at the same moment."""
    import sys

    for round_ in range(3):
        folder, go = tmp_path / f"vectors-{round_}", tmp_path / f"go-{round_}"
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AT_ONCE, str(folder), str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        subprocess.run(["sleep", "2"], check=True)  # each has imported chromadb by then
        go.touch()
        for opener in openers:
            out, err = opener.communicate(timeout=300)
            assert (opener.returncode, out.strip()) == (0, "0"), err


def test_an_opening_waits_for_another_at_most_its_patience_then_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The openings' lock is the package's one file lock: an opening held up by another (here a
    lock held on another descriptor, which flock treats as another holder) ends with a typed
    error at its patience instead of hanging, and opens once the other is done."""
    from praisonsession._internal.file_lock import FileLock
    from praisonsession.errors import StoreUnavailableError
    from praisonsession.recall.vectors import index

    folder = tmp_path / "vectors"
    folder.mkdir()
    monkeypatch.setattr(index, "_OPENING_PATIENCE", 0.2)
    with FileLock(folder / index._OPENING_LOCK), pytest.raises(StoreUnavailableError) as held:
        index._new_client(str(folder))
    assert "stayed locked by another process for 0.2 s" in str(held.value)
    assert "opening this memory folder" in str(held.value)
    client = index._new_client(str(folder))
    assert client.get_or_create_collection("memories").count() == 0
