"""PraisonStore, LangGraph's long-term store, on every backend: an item is a key of a
namespace's session, the namespace's first label is the user it belongs to (so erasing the user
erases it), TTL in minutes, filters, namespaces listed and deleted whole, search by meaning
through the memory layer's offline embedder, and a graph's node writing to it."""

from __future__ import annotations

import asyncio
import inspect
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from adapter_packaging import assert_benchmark_prints
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from backends import SERVERS, STORE_BACKENDS, store_url
from praisonsession import Session, clock, erase_user, open_store
from praisonsession.errors import InvalidIdError, InvalidValueError
from praisonsession.integrations.langgraph import PraisonSaver
from praisonsession.integrations.langgraph_store import (
    STORE_MARK,
    NamespaceError,
    PraisonStore,
)


@pytest.fixture(params=STORE_BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store of each kind, by URL; memory:// shares one store per PraisonStore only, so
    the tests that open a second object over the same store use the others."""
    if request.param == "memory":
        return "memory://"
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    return store_url(request.param, tmp_path)


@pytest.fixture
def store(url: str) -> Any:
    with PraisonStore(url, index=False) as opened:
        yield opened


def test_an_item_comes_back_as_put_and_keeps_when_it_was_created(store: PraisonStore) -> None:
    value = {"likes": ["ramen", "tea"], "note": "☀ no onions", "level": 3, "nested": {"a": None}}
    store.put(("alice", "prefs"), "food", value)
    first = store.get(("alice", "prefs"), "food")
    assert first is not None
    assert (first.namespace, first.key, first.value) == (("alice", "prefs"), "food", value)

    store.put(("alice", "prefs"), "food", {"likes": ["soba"]})
    second = store.get(("alice", "prefs"), "food")
    assert second is not None
    assert second.value == {"likes": ["soba"]}
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at

    store.delete(("alice", "prefs"), "food")
    assert store.get(("alice", "prefs"), "food") is None
    assert store.get(("alice", "prefs"), "never") is None


def test_a_namespace_is_a_session_of_its_first_label(store: PraisonStore) -> None:
    store.put(("bob", "memories", "work"), "m1", {"text": "standup at nine"})
    store.put(("carol", "memories"), "m1", {"text": "likes jazz"})
    with Session("langgraph-store/memories/work", "bob", store=store.store) as session:
        assert session.get_info().metadata == STORE_MARK
        assert session.get_state("m1")["value"] == {"text": "standup at nine"}
        assert [s.session_id for s in session.list_sessions()] == ["langgraph-store/memories/work"]

    erase_user("bob", store=store.store)
    assert store.get(("bob", "memories", "work"), "m1") is None
    assert store.get(("carol", "memories"), "m1") is not None  # another user's stays
    assert store.list_namespaces() == [("carol", "memories")]


def test_search_filters_pages_and_keeps_to_the_prefix(store: PraisonStore) -> None:
    for n in range(6):
        colour = "red" if n % 2 else "blue"
        store.put(("dan", "notes"), f"n{n}", {"n": n, "colour": colour})
    store.put(("dan", "other"), "x", {"n": 99, "colour": "red"})
    store.put(("erin", "notes"), "y", {"n": 100, "colour": "red"})

    red = store.search(("dan", "notes"), filter={"colour": "red"}, limit=10)
    assert sorted(item.value["n"] for item in red) == [1, 3, 5]
    assert {item.namespace for item in red} == {("dan", "notes")}

    everything = store.search(("dan",), limit=100)
    assert sorted(item.value["n"] for item in everything) == [0, 1, 2, 3, 4, 5, 99]
    pages = store.search(("dan",), limit=3) + store.search(("dan",), limit=3, offset=3)
    pages += store.search(("dan",), limit=3, offset=6)
    assert sorted(item.value["n"] for item in pages) == [0, 1, 2, 3, 4, 5, 99]
    assert all(item.score is None for item in everything)  # no query: not ranked by meaning


FILTERED = [
    {"n": 1, "colour": "red", "tags": ["a", "b"], "meta": {"lang": "en", "level": 2}, "ok": True},
    {"n": 2, "colour": "blue", "tags": ["b"], "meta": {"lang": "fr", "level": 3}, "ok": False},
    {"n": 3, "colour": "red", "meta": {"lang": "en", "level": 1}, "ok": True, "none": 0},
    {"n": 4.5, "colour": None, "tags": [], "meta": {"level": 5}, "ok": 1},
    {"n": 2.0, "colour": "vért ☀", "meta": {"lang": "en", "level": "2"}, "ok": 1.0},
]
FILTERS = [
    {"colour": "red"},
    {"n": 1},
    {"n": 1.0},
    {"ok": True},
    {"ok": 1},
    {"none": None},
    {"missing": None},
    {"tags": ["b"]},
    {"meta": {"lang": "en"}},
    {"meta": {"level": {"$gt": 2}}},
    {"n": {"$gte": 1, "$lt": 3}},
    {"n": {"$lte": 4.5}},
    {"colour": {"$ne": "red"}},
    {"colour": {"$eq": None}},
    {"colour": "red", "ok": True},
    {"meta.lang": "en"},
    {"colour": "vért ☀"},
    {"n": {"$eq": 2}},
    {"ok": 1.0},
    {"meta": {"lang": "en"}, "n": 2},
    {"meta": {"level": 2}},
]


@pytest.mark.parametrize("wanted", FILTERS, ids=[repr(f) for f in FILTERS])
def test_a_filter_finds_what_langgraphs_in_memory_store_finds(
    store: PraisonStore, wanted: dict[str, Any]
) -> None:
    theirs = InMemoryStore()
    for n, value in enumerate(FILTERED):
        for each in (store, theirs):
            each.put(("fay", "notes"), f"k{n}", value)
    found = [item.key for item in store.search(("fay",), filter=wanted, limit=10)]
    expected = [item.key for item in theirs.search(("fay",), filter=wanted, limit=10)]
    assert sorted(found) == sorted(expected)


def test_namespaces_are_listed_by_prefix_suffix_and_depth(store: PraisonStore) -> None:
    for namespace in [
        ("fay", "memories"),
        ("fay", "memories", "travel"),
        ("fay", "profile"),
        ("gus", "memories"),
    ]:
        store.put(namespace, "k", {"v": 1})
    assert store.list_namespaces(prefix=("fay",)) == [
        ("fay", "memories"),
        ("fay", "memories", "travel"),
        ("fay", "profile"),
    ]
    assert store.list_namespaces(suffix=("memories",)) == [("fay", "memories"), ("gus", "memories")]
    assert store.list_namespaces(prefix=("fay",), max_depth=2) == [
        ("fay", "memories"),
        ("fay", "profile"),
    ]
    assert store.list_namespaces(limit=2, offset=1) == [
        ("fay", "memories", "travel"),
        ("fay", "profile"),
    ]


def test_a_namespace_emptied_goes_unless_an_item_is_put_meanwhile(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleting a namespace's last item removes the namespace, in the step that removes the
    item; an item another writer puts before that step keeps the namespace, with it, and
    one put after it makes the namespace again."""
    shared = open_store(url)  # one store below both writers (memory:// is one a URL)
    with PraisonStore(shared, index=False) as store, PraisonStore(shared, index=False) as other:
        store.put(("gus", "notes"), "only", {"n": 1})
        store.delete(("gus", "notes"), "only")
        assert store.list_namespaces(prefix=("gus",)) == []
        store.put(("gus", "notes"), "only", {"n": 1})
        backend = store._backend
        dropping = backend.drop_record_state

        async def put_first(key: Any, **how: Any) -> Any:
            await other.aput(("gus", "notes"), "late", {"n": 2})
            return await dropping(key, **how)

        monkeypatch.setattr(backend, "drop_record_state", put_first)
        store.delete(("gus", "notes"), "only")
        assert store.list_namespaces(prefix=("gus",)) == [("gus", "notes")]
        assert [item.key for item in store.search(("gus", "notes"))] == ["late"]
        monkeypatch.undo()
        other.delete(("gus", "notes"), "late")
        assert store.list_namespaces(prefix=("gus",)) == []
        other.put(("gus", "notes"), "after", {"n": 3})
        assert store.list_namespaces(prefix=("gus",)) == [("gus", "notes")]
    asyncio.run(shared.close())


def test_a_namespace_another_writer_emptied_is_made_again_and_listed(url: str) -> None:
    """A namespace deleted by another writer (its last item gone) and written here again is
    made again as a namespace: listed and searched, not only read by key."""
    shared = open_store(url)
    with PraisonStore(shared, index=False) as store, PraisonStore(shared, index=False) as other:
        store.put(("hal", "notes"), "first", {"n": 1})
        other.delete(("hal", "notes"), "first")
        assert other.list_namespaces(prefix=("hal",)) == []
        store.put(("hal", "notes"), "again", {"n": 2})
        assert store.list_namespaces(prefix=("hal",)) == [("hal", "notes")]
        assert [item.key for item in other.search(("hal",))] == ["again"]
        store.delete(("hal", "gone"), "never")  # no namespace: nothing made, nothing listed
        assert store.list_namespaces(prefix=("hal",)) == [("hal", "notes")]
    asyncio.run(shared.close())


def test_a_namespace_removed_between_a_puts_read_and_write_is_marked_again(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put reads the item, then writes it; another writer that deletes the namespace's last
    item in between removes the namespace. The put's write then finds no session: it marks
    the namespace again before writing, so the item is listed and searched, not only read by
    key."""
    shared = open_store(url)
    with PraisonStore(shared, index=False) as store, PraisonStore(shared, index=False) as other:
        store.put(("ned", "notes"), "only", {"n": 1})
        backend = store._backend  # the one both writers share
        reading = backend.read_record_state

        async def then_emptied(key: Any, **how: Any) -> Any:
            monkeypatch.setattr(backend, "read_record_state", reading)  # once
            state = await reading(key, **how)
            await other.adelete(("ned", "notes"), "only")
            return state

        monkeypatch.setattr(backend, "read_record_state", then_emptied)
        store.put(("ned", "notes"), "second", {"n": 2})
        assert backend.read_record_state is reading  # the window was taken
        assert other.list_namespaces(prefix=("ned",)) == [("ned", "notes")]
        assert [item.key for item in other.search(("ned",))] == ["second"]
        assert store.get(("ned", "notes"), "only") is None
    asyncio.run(shared.close())


def test_a_whole_namespace_is_deleted_with_everything_below_it(store: PraisonStore) -> None:
    store.put(("hal", "memories"), "a", {"v": 1})
    store.put(("hal", "memories", "old"), "b", {"v": 2})
    store.put(("hal", "profile"), "c", {"v": 3})
    assert store.delete_namespace(("hal", "memories")) == 2
    assert store.get(("hal", "memories"), "a") is None
    assert store.get(("hal", "memories", "old"), "b") is None
    assert store.list_namespaces(prefix=("hal",)) == [("hal", "profile")]


def test_a_search_finds_the_newest_live_items_when_the_newest_have_expired(
    store: PraisonStore, frozen_clock: clock.ManualClock
) -> None:
    """A store may hand back only the newest items of a namespace; expired ones among them
    leave fewer than asked, and the namespace is then read whole: the answer is the same."""
    for n in range(12):
        frozen_clock.advance(1)
        store.put(("lou", "notes"), f"k{n:02}", {"n": n, "even": n % 2 == 0})
    for n in range(12, 16):  # the newest four expire
        frozen_clock.advance(1)
        store.put(("lou", "notes"), f"k{n:02}", {"n": n, "even": n % 2 == 0}, ttl=1)
    frozen_clock.advance(61)
    found = store.search(("lou",), limit=5, refresh_ttl=False)
    assert [item.key for item in found] == ["k11", "k10", "k09", "k08", "k07"]
    found = store.search(("lou",), filter={"even": True}, limit=3, offset=1, refresh_ttl=False)
    assert [item.key for item in found] == ["k08", "k06", "k04"]
    assert [item.key for item in store.search(("lou",), limit=3, offset=10)] == ["k01", "k00"]


def test_a_search_reads_each_namespace_once_when_nothing_it_wanted_was_left_out(
    store: PraisonStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that narrows hands back what may match; one that does not hands back the
    whole namespace. Either way a search whose items are live reads each namespace once,
    however few of them match."""
    for n in range(30):
        store.put(("max", "notes"), f"k{n:02}", {"n": n})
    backend = store._backend
    reads: list[Any] = []
    reading = backend.read_record_state_matching

    async def counted(key: Any, **how: Any) -> Any:
        reads.append(how.get("newest"))
        return await reading(key, **how)

    monkeypatch.setattr(backend, "read_record_state_matching", counted)
    assert [item.key for item in store.search(("max",), filter={"n": 7})] == ["k07"]
    assert len(store.search(("max",), filter={"n": {"$gt": 3}}, limit=10)) == 10
    assert [item.key for item in store.search(("max",), limit=3)] == ["k29", "k28", "k27"]
    assert len(reads) == 3


def test_an_item_expires_after_its_ttl_in_minutes(
    store: PraisonStore, frozen_clock: clock.ManualClock
) -> None:
    store.put(("ivy", "cache"), "short", {"v": 1}, ttl=1)
    store.put(("ivy", "cache"), "kept", {"v": 2})
    frozen_clock.advance(30)
    assert store.get(("ivy", "cache"), "short", refresh_ttl=False) is not None
    frozen_clock.advance(31)
    assert store.get(("ivy", "cache"), "short") is None
    assert [item.key for item in store.search(("ivy",), refresh_ttl=False)] == ["kept"]
    assert store.sweep_ttl() == 1
    assert store.get(("ivy", "cache"), "kept") is not None


def test_reading_refreshes_a_ttl_as_langgraph_does_by_default(
    store: PraisonStore, frozen_clock: clock.ManualClock
) -> None:
    store.put(("jo", "cache"), "k", {"v": 1}, ttl=1)
    frozen_clock.advance(50)
    assert store.get(("jo", "cache"), "k") is not None  # refresh_on_read: LangGraph's default
    frozen_clock.advance(50)  # 100 s after the put, 50 s after the refresh
    assert store.get(("jo", "cache"), "k", refresh_ttl=False) is not None
    frozen_clock.advance(11)
    assert store.get(("jo", "cache"), "k", refresh_ttl=False) is None


@pytest.mark.parametrize("method", ["get", "put", "delete", "search"])
def test_the_one_op_methods_take_what_langgraphs_own_take(method: str) -> None:
    """``get``, ``put``, ``delete`` and ``search`` run their op without ``BaseStore``'s
    batch around it: they take the same parameters, in the same places, with the same
    defaults, so a LangGraph release that changes them fails here, not in a graph."""

    def parameters(owner: Any) -> list[tuple[str, Any, Any]]:
        found = inspect.signature(getattr(owner, method)).parameters.values()
        return [(p.name, p.kind, p.default) for p in found]

    assert parameters(PraisonStore) == parameters(BaseStore)


def test_the_ttl_config_gives_puts_their_ttl_and_says_whether_reads_refresh_it(
    url: str, frozen_clock: clock.ManualClock
) -> None:
    """``ttl={"default_ttl": minutes, "refresh_on_read": False}``, as LangGraph's stores take
    it: a put that names no TTL gets the default one, ``ttl=None`` none, and reads leave
    TTLs alone unless asked; the sync calls and the async ones alike."""
    config = {"default_ttl": 1, "refresh_on_read": False}
    with PraisonStore(url, index=False, ttl=config) as store:
        store.put(("uma", "cache"), "default", {"v": 1})
        asyncio.run(store.aput(("uma", "cache"), "async default", {"v": 2}))
        store.put(("uma", "cache"), "forever", {"v": 3}, ttl=None)
        frozen_clock.advance(50)
        assert store.get(("uma", "cache"), "default") is not None  # not refreshed
        assert len(store.search(("uma",))) == 3  # nor these
        assert store.get(("uma", "cache"), "async default", refresh_ttl=True) is not None
        frozen_clock.advance(11)  # 61 s after the puts, 11 s after the refresh asked for
        assert store.get(("uma", "cache"), "default") is None
        kept = [item.key for item in asyncio.run(store.asearch(("uma",)))]
        assert sorted(kept) == ["async default", "forever"]


@pytest.mark.parametrize("meanwhile", ["changed", "deleted", "changed after the version"])
def test_a_refresh_never_puts_back_an_item_another_writer_changed(
    url: str, monkeypatch: pytest.MonkeyPatch, meanwhile: str
) -> None:
    """A read refreshes an item's TTL by writing it back with a new expiry. Another writer
    that changes or deletes the item after the read (or after the refresh has read the
    namespace's version) keeps its write: the refresh reads again, and a deleted item is
    not returned."""
    shared = open_store(url)
    with PraisonStore(shared, index=False) as store, PraisonStore(shared, index=False) as other:
        where = ("lou", "cache")
        store.put(where, "k", {"v": 1}, ttl=5)
        store.put(where, "other", {"v": 0})  # the namespace outlives the item
        backend = store._backend  # the one both writers share
        step = "read_record" if meanwhile == "changed after the version" else "read_record_state"
        reading = getattr(backend, step)

        async def then_written(*args: Any, **how: Any) -> Any:
            monkeypatch.setattr(backend, step, reading)  # once
            found = await reading(*args, **how)
            if meanwhile == "deleted":
                await other.adelete(where, "k")
            else:
                await other.aput(where, "k", {"v": 2}, ttl=5)
            return found

        monkeypatch.setattr(backend, step, then_written)
        got = store.get(where, "k")  # refresh_ttl: LangGraph's default
        assert getattr(backend, step) is reading  # the window was taken
        if meanwhile == "deleted":
            assert got is None
            assert other.get(where, "k", refresh_ttl=False) is None
        else:
            assert got is not None and got.value == {"v": 2}
            assert other.get(where, "k", refresh_ttl=False).value == {"v": 2}
    asyncio.run(shared.close())


def test_bad_input_gets_typed_errors_and_changes_nothing(store: PraisonStore) -> None:
    store.put(("kim", "notes"), "k", {"v": 1})
    for namespace in [(), ("kim", ""), ("kim", "a.b"), ("langgraph", "x")]:
        with pytest.raises(InvalidNamespaceError):  # LangGraph's own checks come first
            store.put(namespace, "k", {"v": 2})
    with pytest.raises(NamespaceError) as caught:  # a user id ours cannot store
        store.put(("kim\n", "notes"), "k", {"v": 2})
    assert isinstance(caught.value, InvalidNamespaceError)  # LangGraph's type
    assert isinstance(caught.value, InvalidIdError)  # and ours
    with pytest.raises(InvalidValueError, match="dict"):
        store.put(("kim", "notes"), "k", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="ttl"):
        store.put(("kim", "notes"), "k", {"v": 3}, ttl=-1)
    with pytest.raises(InvalidIdError, match="item key"):
        store.put(("kim", "notes"), "", {"v": 4})
    with pytest.raises(InvalidValueError, match="value of item 'k'"):
        store.put(("kim", "notes"), "k", {"v": object()})  # no JSON: refused before anything
    with pytest.raises(InvalidValueError, match="list_namespaces: max_depth must be an int >= 0"):
        store.list_namespaces(max_depth="2")  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="batch: ops must be a list"):
        store.batch(None)  # type: ignore[arg-type]
    found = store.get(("kim", "notes"), "k")
    assert found is not None and found.value == {"v": 1}


def test_search_by_meaning_finds_the_item_and_forgets_it_once_deleted(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/meaning.db"
    settings = {"data_dir": str(tmp_path / "data")}
    with PraisonStore(url, settings=settings, index=["text"]) as store:
        store.put(("lee", "memories"), "pet", {"text": "My dog is called Biscuit", "tag": "a"})
        store.put(("lee", "memories"), "food", {"text": "I am allergic to peanuts", "tag": "b"})
        store.put(("lee", "memories"), "job", {"text": "I work as a nurse at night", "tag": "a"})
        store.put(("may", "memories"), "pet", {"text": "My cat is called Biscuit", "tag": "a"})

        with pytest.raises(InvalidValueError):  # refused before its memory is forgotten
            store.put(("lee", "memories"), "pet", ["My dog is called Rex"])  # type: ignore[arg-type]
        hits = store.search(("lee", "memories"), query="what is my dog's name?", limit=2)
        assert hits[0].key == "pet" and hits[0].namespace == ("lee", "memories")
        assert hits[0].score is not None and hits[0].score >= hits[1].score
        assert {hit.namespace[0] for hit in hits} == {"lee"}  # never another user's

        filtered = store.search(("lee",), query="night shifts", filter={"tag": "a"}, limit=5)
        assert next(hit.key for hit in filtered) == "job"
        assert {hit.value["tag"] for hit in filtered} == {"a"}

        store.delete(("lee", "memories"), "pet")
        left = store.search(("lee", "memories"), query="what is my dog's name?", limit=5)
        assert "pet" not in [hit.key for hit in left]
        with Session("langgraph-store/memories", "lee", store=url, settings=settings) as session:
            texts = [found["text"] for found in session.search_memory("Biscuit", limit=10)]
        assert "My dog is called Biscuit" not in texts


class Visits(TypedDict):
    user: str
    seen: Annotated[list[int], operator.add]


def visit(state: Visits, *, store: BaseStore) -> dict[str, Any]:
    """A node that counts a user's visits in the store, across threads."""
    namespace = (state["user"], "visits")
    held = store.get(namespace, "count")
    count = 1 if held is None else held.value["n"] + 1
    store.put(namespace, "count", {"n": count})
    return {"seen": [count]}


def test_a_node_writes_to_the_store_and_another_thread_reads_it(store: PraisonStore) -> None:
    builder = StateGraph(Visits)
    builder.add_node("visit", visit)
    builder.add_edge(START, "visit")
    builder.add_edge("visit", END)
    with PraisonSaver(store.store) as saver:
        graph = builder.compile(checkpointer=saver, store=store)
        first = graph.invoke({"user": "ned"}, {"configurable": {"thread_id": "t1"}})
        second = graph.invoke({"user": "ned"}, {"configurable": {"thread_id": "t2"}})
        assert (first["seen"], second["seen"]) == ([1], [2])
        assert len(list(saver.list(None))) >= 2  # the threads' checkpoints, beside the items
    count = store.get(("ned", "visits"), "count")
    assert count is not None and count.value == {"n": 2}


def test_the_benchmark_runs_quickly_and_prints_every_row(tmp_path: Path) -> None:
    """Every op compared with LangGraph's own SQLite stores, sync and async, at the same
    durability, each answer checked by the benchmark itself."""
    rows = [
        "sync methods vs SqliteStore",
        "async methods vs AsyncSqliteStore",
        "PraisonStore: WAL, synchronous=FULL",
        "AsyncSqliteStore: WAL, synchronous=FULL",
        "| put of a new item |",
        "| put of an item that exists (an update) |",
        "| get of an item |",
        "| search(filter=...) of a namespace of 20, 1 match |",
        "| search() of a namespace of 20, the 10 newest |",
        "| list_namespaces(prefix=(user,)), 2 a user |",
        "| delete of an item |",
    ]
    assert_benchmark_prints("bench_langgraph_store.py", rows, tmp_path, timeout=600)
