"""``AsyncSession``: the core, used from the caller's own event loop, and ``Session`` as its
one-to-one synchronous shell."""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path
from typing import Any

import pytest

from backends import CONFORMANCE_BACKENDS, SERVERS, make_store
from praisonsession import (
    AsyncSession,
    InvalidValueError,
    MessageLog,
    PraisonSessionError,
    Session,
    SessionBase,
    StateModule,
)
from praisonsession._internal import runtime

# -- Session is AsyncSession, synchronously --------------------------------------------------


def public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_session_and_async_session_have_the_same_public_names() -> None:
    assert public_names(Session) == public_names(AsyncSession)


def comparable(shell: inspect.Signature, core: inspect.Signature) -> tuple[Any, Any]:
    """Both signatures, less their return types where one returns a session object (a fork of
    a Session is a Session, of an AsyncSession an AsyncSession)."""
    if "Session" in str(shell.return_annotation) + str(core.return_annotation):
        empty = inspect.Signature.empty
        return shell.replace(return_annotation=empty), core.replace(return_annotation=empty)
    return shell, core


@pytest.mark.parametrize("name", sorted(public_names(AsyncSession)))
def test_each_operation_has_the_same_signature_and_defaults_in_both(name: str) -> None:
    core = inspect.getattr_static(AsyncSession, name)
    shell = inspect.getattr_static(Session, name)
    if isinstance(core, property):
        assert isinstance(shell, property), f"{name} is a property of AsyncSession only"
        return
    assert isinstance(core, classmethod) == isinstance(shell, classmethod), name
    if isinstance(core, classmethod):
        core, shell = core.__func__, shell.__func__
    assert inspect.iscoroutinefunction(core), f"AsyncSession.{name} is not async"
    assert not inspect.iscoroutinefunction(shell), f"Session.{name} is async"
    shell_signature, core_signature = comparable(inspect.signature(shell), inspect.signature(core))
    assert shell_signature == core_signature, name
    assert shell.__doc__ is not None or core.__doc__ is None, f"Session.{name} lost its docstring"


def test_the_constructors_take_the_same_arguments_with_the_same_defaults() -> None:
    assert inspect.signature(Session.__init__) == inspect.signature(AsyncSession.__init__)


def test_aliases_stay_aliases_in_both() -> None:
    assert Session.create_agent is Session.Agent
    assert AsyncSession.create_agent is AsyncSession.Agent


# -- AsyncSession on the caller's loop -----------------------------------------------------


@pytest.fixture(params=CONFORMANCE_BACKENDS)
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionBase:
    if request.param in SERVERS:
        request.getfixturevalue(SERVERS[request.param])
    store = make_store(request.param, tmp_path)
    yield store
    runtime.run(store.close())


def test_async_with_on_the_users_own_loop(shared_store: SessionBase) -> None:
    async def main() -> dict:
        async with AsyncSession("chat", "ada", store=shared_store) as session:
            await session.set_state("score", 10)
            assert await session.increment_state("score", increment=5) == 15
            await session.save_state({"profile": {"name": "Ada"}})
            assert (await session.get_info()).version == 3
            return await session.restore_state()

    assert asyncio.run(main()) == {"score": 15, "profile": {"name": "Ada"}}
    # the sync shell reads what the async core wrote, on the same store
    assert Session("chat", "ada", store=shared_store).get_state("score") == 15


def test_constructing_does_no_io_and_the_first_operation_opens(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    session = AsyncSession("lazy", store=url, session_ttl=60)
    assert not (tmp_path / "s.db").exists()

    async def main() -> float | None:
        await session.set_state("a", 1)
        return await session.time_to_expiry()

    assert 59 < asyncio.run(main()) <= 60


def test_fifty_sessions_at_once_with_gather(shared_store: SessionBase) -> None:
    async def one(n: int) -> int:
        session = AsyncSession(f"s{n}", "u", store=shared_store)
        for _ in range(20):
            await session.increment_state("hits")
        await session.increment_state("shared-by-none", n)
        return await session.get_state("hits")

    async def main() -> list[int]:
        return await asyncio.gather(*(one(n) for n in range(50)))

    assert asyncio.run(main()) == [20] * 50
    listed = runtime.run(shared_store.list_sessions("u", limit=100))
    assert [info.session_id for info in listed] == sorted(f"s{n}" for n in range(50))


def test_fifty_tasks_on_one_session_count_exactly(shared_store: SessionBase) -> None:
    session = AsyncSession("one", "u", store=shared_store)

    async def main() -> list[int | float]:
        return await asyncio.gather(*(session.increment_state("n") for _ in range(50)))

    assert sorted(asyncio.run(main())) == list(range(1, 51))


def test_the_sync_session_from_eight_threads(shared_store: SessionBase) -> None:
    session = Session("threads", "u", store=shared_store)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(50):
                session.increment_state("n")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert session.get_state("n") == 400


def test_the_sync_session_inside_a_running_loop_as_in_jupyter(shared_store: SessionBase) -> None:
    async def cell() -> int:
        session = Session("notebook", store=shared_store)
        session.set_state("a", 1)
        return session.increment_state("a")

    assert asyncio.run(cell()) == 2


def test_modules_round_trip_through_the_async_core(shared_store: SessionBase) -> None:
    class Notes(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.log = MessageLog()
            self.title = "notes"
            self.register_state("title")

    async def main() -> list[dict]:
        session = AsyncSession("m", store=shared_store)
        notes = Notes()
        notes.log.append({"role": "user", "content": "hi"})
        notes.title = "mine"
        await session.save_modules(notes=notes)
        await session.append_messages("side", [{"role": "user", "content": "side"}])
        fresh = Notes()
        await AsyncSession("m", store=shared_store).load_modules(notes=fresh)
        assert fresh.title == "mine"
        assert await session.message_count("side") == 1
        return fresh.log.to_list()

    assert asyncio.run(main()) == [{"role": "user", "content": "hi"}]


def test_bad_arguments_fail_before_any_io(tmp_path: Path) -> None:
    session = AsyncSession("s", store=f"sqlite://{tmp_path}/s.db")

    async def main() -> None:
        with pytest.raises(InvalidValueError):
            await session.save_state(["not", "a", "dict"])
        with pytest.raises(InvalidValueError):
            await session.search_memory("")

    asyncio.run(main())
    assert not (tmp_path / "s.db").exists()


def test_a_gone_session_raises_the_same_error_in_both(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    sync = Session("s", store=url)
    core = AsyncSession("s", store=url)
    asyncio.run(core.open())
    sync.expire()
    with pytest.raises(PraisonSessionError) as from_sync:
        sync.get_state("a")
    with pytest.raises(type(from_sync.value)):
        asyncio.run(core.get_state("a"))


def test_repr_names_the_class_and_html_shows_state(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    assert repr(AsyncSession("r", "u", store=url)).startswith("AsyncSession(id='r', user='u'")
    session = Session("r", "u", store=url)
    session.set_state("k", "v")
    assert repr(session).startswith("Session(id='r', user='u'")
    assert "k=&#x27;v&#x27;" in session._repr_html_()
    assert "<table>" in AsyncSession("r", "u", store=url)._repr_html_()
