"""Key rotation re-seals the vector store too (``praisonsession rekey``, ``rotation.rekey``):
after it, memories, their history and knowledge open with the new key only, memory ids are
the same, and a rotation killed at any point then run again ends complete."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from praisonsession import DecryptionError, Session
from praisonsession.session.rotation import rekey
from sessions import VECTOR_STORES, vector_settings

KEY = base64.urlsafe_b64encode(b"k" * 32).decode()
NEW_KEY = base64.urlsafe_b64encode(b"n" * 32).decode()
STRANGER_KEY = base64.urlsafe_b64encode(b"s" * 32).decode()
SECRET = "pelican-4471"
FACTS = [
    f"Ada keeps her passport number {SECRET} in the blue folder",
    "Ada's favourite composer is Erik Satie",
    "Ada parks her bicycle behind the library",
]
NOTES = (
    "The quarterly review happens on Friday in room 4. Bring the printed budget.\n\n"
    "The office closes at six on Thursdays; the garage door needs the green badge."
)


@pytest.fixture(params=VECTOR_STORES)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """Where a test's sessions and vectors live: a SQLite store, and each vector store (its
    own namespace or schema on a server)."""
    settings: dict[str, Any] = vector_settings(request.param, request, tmp_path)
    vectors = settings.get("vector_store_url", str(tmp_path / "data" / "chroma"))
    return {"store": f"sqlite://{tmp_path}/s.db", "settings": settings, "vectors": vectors}


def opened(place: dict[str, Any], key: str, session_id: str = "s") -> Session:
    settings = {**place["settings"], "encryption_key": key}
    return Session(session_id, "ada", store=place["store"], settings=settings)


def fill(place: dict[str, Any]) -> dict[str, Any]:
    """Memories (one updated, one deleted), session and user knowledge, under KEY; what a
    reader sees of them."""
    session = opened(place, KEY)
    ids = [str(session.add_memory(fact)) for fact in FACTS]
    session.update_memory(ids[1], text="Ada's favourite composer is Claude Debussy")
    session.delete_memory(ids[2])
    session.add_knowledge(NOTES)
    other = Session(
        "s2",
        "ada",
        store=place["store"],
        settings={**place["settings"], "encryption_key": KEY},
        knowledge_config={"scope": "session"},
    )
    other.add_knowledge("The session's own note: the boiler code is 7781.")
    seen = seen_by(session, ids)
    seen["session_knowledge"] = [hit["text"] for hit in other.search_knowledge("boiler", limit=1)]
    session.close()
    other.close()
    return seen


def seen_by(session: Session, ids: list[str]) -> dict[str, Any]:
    return {
        "ids": ids,
        "search": [(h["id"], h["text"]) for h in session.search_memory("passport", limit=2)],
        "list": [(m["id"], m["text"]) for m in session.list_memories()],
        "get": session.get_memory(ids[0]),
        "history": [session.memory_history(i) for i in ids],
        "knowledge": [h["text"] for h in session.search_knowledge("quarterly review", limit=2)],
    }


def check_rotated(place: dict[str, Any], before: dict[str, Any]) -> None:
    """Everything reads as before under NEW_KEY, and nothing opens with KEY."""
    session = opened(place, NEW_KEY)
    ids = before["ids"]
    after = seen_by(session, ids)
    other = Session(
        "s2",
        "ada",
        store=place["store"],
        settings={**place["settings"], "encryption_key": NEW_KEY},
        knowledge_config={"scope": "session"},
    )
    after["session_knowledge"] = [h["text"] for h in other.search_knowledge("boiler", limit=1)]
    assert json.loads(json.dumps(after)) == json.loads(json.dumps(before))
    again = session.add_memory(FACTS[0])  # a rerun add finds the memory by its new key
    assert (str(again), again.event) == (ids[0], "NONE")
    assert session.add_knowledge(NOTES).chunks_skipped >= 1
    assert session.add_knowledge(NOTES).chunks_added == 0
    assert other.add_knowledge("The session's own note: the boiler code is 7781.").chunks_added == 0
    updated = session.update_memory(ids[0], checked=True)
    assert updated is not None and updated["metadata"]["checked"] is True
    assert session.memory_history(ids[0])[-1]["event"] == "UPDATE"
    assert session.delete_memory(ids[1]) is True
    assert [m["id"] for m in session.list_memories()] == [ids[0]]
    session.close()
    other.close()
    with pytest.raises(DecryptionError, match="it is sealed with the key key-"):
        opened(place, KEY)  # the old key is refused before anything is read or written


@pytest.mark.slow
def test_rekey_reseals_memories_history_and_knowledge_keeping_ids(
    place: dict[str, Any],
) -> None:
    from praisonsession._internal import runtime
    from praisonsession.stores import open_store
    from praisonsession.stores.wrappers import encrypted

    before = fill(place)
    store = open_store(place["store"])
    runtime.run(encrypted.rekey(store, KEY, NEW_KEY))  # the sessions alone, as before the fix
    runtime.run(store.close())
    if "vector_store_url" not in place["settings"]:
        with pytest.raises(DecryptionError):  # the defect: memory no longer opened
            opened(place, NEW_KEY).search_memory("passport")
    report = rekey(
        KEY, NEW_KEY, place["store"], vector_store=place["vectors"], settings=place["settings"]
    )
    # memories, history, chunks; on a server, histories are under the user's key, unchanged
    server = "vector_store_url" in place["settings"]
    assert report.sessions >= 2 and report.vector_entries >= (4 if server else 8)
    check_rotated(place, before)
    again = rekey(
        KEY, NEW_KEY, place["store"], vector_store=place["vectors"], settings=place["settings"]
    )
    assert again.vector_entries == 0  # a rerun of a finished rotation rewrites nothing


@pytest.mark.parametrize("named", [True, False], ids=["--vector-store", "as-sessions-find-it"])
def test_the_cli_rotates_the_vector_store(
    place: dict[str, Any], named: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from praisonsession.apps.cli import main

    before = fill(place)
    (tmp_path / "old.key").write_text(KEY + "\n")
    (tmp_path / "new.key").write_text(NEW_KEY + "\n")
    for name, value in place["settings"].items():  # what sessions are configured by
        if named and name != "vector_namespace":
            continue
        monkeypatch.setenv(f"PRAISONSESSION_{name.upper()}", value)
    old, new = str(tmp_path / "old.key"), str(tmp_path / "new.key")
    command = ["rekey", "--old-key-file", old, "--new-key-file", new, "--store", place["store"]]
    if named:
        command += ["--vector-store", place["vectors"]]
    result = CliRunner().invoke(main, [*command, "--yes"])
    assert result.exit_code == 0, result.output
    assert "Sealed 2 sessions" in result.output or "Sealed 3 sessions" in result.output
    assert "vector entries of" in result.output
    check_rotated(place, before)


def test_help_says_where_the_vectors_are(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from praisonsession.apps.cli import main

    result = CliRunner().invoke(main, ["rekey", "--help"])
    assert "--vector-store" in result.output and "memory" in result.output


def test_an_entry_sealed_with_neither_key_is_named_and_kept(tmp_path: Path) -> None:
    place = {
        "store": f"sqlite://{tmp_path}/s.db",
        "settings": {"data_dir": str(tmp_path / "data")},
        "vectors": str(tmp_path / "data" / "chroma"),
    }
    fill(place)
    from praisonsession._internal.sealing import TextSealer, load_key
    from praisonsession.recall.vectors import chroma_client

    client = chroma_client(place["vectors"])
    (memories,) = [
        c for c in client.list_collections() if "_memory_" in c.name and "history" not in c.name
    ]
    memories = client.get_collection(memories.name)
    stranger = TextSealer(load_key(STRANGER_KEY)).seal(memories.name, "mforeign", "not ours")
    vector = [float(x) for x in memories.get(limit=1, include=["embeddings"])["embeddings"][0]]
    memories.add(ids=["mforeign"], documents=[stranger], metadatas=[{"user_id": "ada"}],
                 embeddings=[vector])  # fmt: skip
    with pytest.raises(DecryptionError, match="'mforeign'") as caught:
        rekey(
            KEY, NEW_KEY, place["store"], vector_store=place["vectors"], settings=place["settings"]
        )
    assert "neither the old nor the new key" in str(caught.value)
    kept = memories.get(ids=["mforeign"], include=["documents"])["documents"]
    assert kept == [stranger]  # nothing lost
    new = TextSealer(load_key(NEW_KEY))  # every other entry was rotated
    for listed in client.list_collections():
        found = client.get_collection(listed.name).get(include=["documents"])
        for entry, text in zip(found["ids"], found["documents"], strict=True):
            if entry != "mforeign":
                new.open(listed.name, entry, text)


def embedded_place(base: Path) -> dict[str, Any]:
    return {
        "store": f"sqlite://{base}/s.db",
        "settings": {"data_dir": str(base / "data")},
        "vectors": str(base / "data" / "chroma"),
    }


def step(name: str, base: Path) -> None:
    """One step of a killed-rotation test, in a process of its own, as a real rerun is: an
    embedded Chroma client does not see another process's writes (its vector index is
    cached), so the test process itself opens no embedded Chroma store."""
    place = json.loads((base / "place.json").read_text())
    embedded = not place["vectors"].startswith("http")  # sealed with the key, not a vault
    if name == "fill":
        (base / "before.json").write_text(json.dumps(fill(place)))
        return
    if embedded:  # on a server, entries stay under their user's key: nothing to count
        assert_one_key_each(place)  # what the killed run left
    rekey(KEY, NEW_KEY, place["store"], vector_store=place["vectors"], settings=place["settings"])
    if embedded:
        assert_one_key_each(place)
    check_rotated(place, json.loads((base / "before.json").read_text()))


STEP = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import test_rekey_vectors
    test_rekey_vectors.step(sys.argv[2], Path(sys.argv[3]))
    """
)


def run_step(name: str, base: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", STEP, str(Path(__file__).parent), name, str(base)],
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]


CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    from praisonsession.session.rotation import rekey

    place = json.loads(open(sys.argv[3]).read())
    point, count = sys.argv[4], int(sys.argv[5])
    calls = {"n": 0}

    def killing(real):
        def call(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == count:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        return call

    if point == "store":
        from praisonsession.stores.wrappers.encrypted import EncryptedBackend
        real = EncryptedBackend.write_modules
        async def write_modules(self, *args, **kwargs):
            calls["n"] += 1
            if calls["n"] == count:
                os.kill(os.getpid(), signal.SIGKILL)
            return await real(self, *args, **kwargs)
        EncryptedBackend.write_modules = write_modules
    elif place["vectors"].startswith("postgresql"):
        from praisonsession.recall.vectors.pgvector import PgCollection
        setattr(PgCollection, point, killing(getattr(PgCollection, point)))
    else:
        from chromadb.api.models.Collection import Collection
        setattr(Collection, point, killing(getattr(Collection, point)))
    old, new = sys.argv[1], sys.argv[2]
    rekey(old, new, place["store"], vector_store=place["vectors"], settings=place["settings"])
    """
)


def assert_one_key_each(place: dict[str, Any]) -> None:
    """Every sealed text of the embedded store opens with exactly one of the two keys."""
    from praisonsession._internal.sealing import TextSealer, load_key
    from praisonsession.recall.vectors import chroma_client

    old, new = TextSealer(load_key(KEY)), TextSealer(load_key(NEW_KEY))
    client = chroma_client(place["vectors"])
    for listed in client.list_collections():
        found = client.get_collection(listed.name).get(include=["documents"])
        for entry, text in zip(found["ids"], found["documents"], strict=True):
            opens = []
            for sealer in (old, new):
                try:
                    sealer.open(listed.name, entry, text)
                    opens.append(sealer)
                except DecryptionError:
                    pass
            assert len(opens) == 1, (listed.name, entry)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "point", "count"),
    [
        ("embedded", "store", 2),  # in the session store's part
        ("embedded", "upsert", 1),  # before the first vector entry is rewritten
        ("embedded", "upsert", 3),  # some collections done, the others not
        ("embedded", "delete", 1),  # a chunk under its new id, the old one still there
        ("chroma-server", "upsert", 2),
        ("chroma-server", "delete", 1),
        ("pgvector", "upsert", 3),
        ("pgvector", "delete", 1),
    ],
)
def test_a_killed_rekey_run_again_ends_complete(
    where: str, point: str, count: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    place = embedded_place(tmp_path)
    place["settings"] = vector_settings(where, request, tmp_path)
    place["vectors"] = place["settings"].get("vector_store_url", place["vectors"])
    (tmp_path / "place.json").write_text(json.dumps(place))
    run_step("fill", tmp_path)
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            KEY,
            NEW_KEY,
            str(tmp_path / "place.json"),
            point,
            str(count),
        ],
        capture_output=True,
        timeout=300,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()[-2000:]
    run_step("finish", tmp_path)  # checks what the kill left, reruns, checks the end


def test_a_misnamed_vector_store_is_refused_before_anything_changes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from praisonsession import InvalidValueError
    from praisonsession.apps.cli import main

    place = embedded_place(tmp_path)
    session = opened(place, KEY)
    session.set_state("note", SECRET)
    session.close()
    with pytest.raises(InvalidValueError, match="no vector store at"):
        rekey(KEY, NEW_KEY, place["store"], vector_store=tmp_path / "chorma")
    (tmp_path / "old.key").write_text(KEY + "\n")
    (tmp_path / "new.key").write_text(NEW_KEY + "\n")
    keys = [
        "--old-key-file",
        str(tmp_path / "old.key"),
        "--new-key-file",
        str(tmp_path / "new.key"),
    ]
    where = ["--store", place["store"], "--vector-store", str(tmp_path / "chorma"), "--yes"]
    result = CliRunner().invoke(main, ["rekey", *keys, *where])
    assert result.exit_code != 0 and "no vector store at" in result.output
    assert opened(place, KEY).get_state("note") == SECRET  # still under the old key
