"""AgentScope 2.0's app storage on our stores (``praisonsession.integrations.agentscope``).

Every test runs on every backend where it says ``store``; AgentScope's own storage tests
(its repository's ``tests/storage_*_test.py``) are run against ``PraisonStorage`` outside the
project, with only the storage class swapped. These are ours: an ``AgentState`` back equal, the
hot path one conditional write, message pages whose cost is the page's, cascades, leases, a
session resumed and written by other processes, encryption, erasure and typed refusals.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Coroutine
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from adapter_packaging import assert_benchmark_prints, assert_not_imported
from agentscope.agent import ContextConfig, ReActConfig
from agentscope.app.storage import (
    AgentData,
    AgentRecord,
    ChannelRecord,
    ChatModelConfig,
    KnowledgeDocumentData,
    KnowledgeDocumentRecord,
    ScheduleData,
    ScheduleOrigin,
    ScheduleRecord,
    SessionConfig,
    StorageBase,
    TeamData,
    TeamMember,
    TeamRecord,
)
from agentscope.app.storage._model._channel import (
    ChannelBinding,
    RoutingConfig,
    SessionSettings,
)
from agentscope.credential import OpenAICredential
from agentscope.message import AssistantMsg, TextBlock, UserMsg
from agentscope.state import AgentState
from pydantic import SecretStr

import praisonsession
from backends import ENCRYPTION_KEY, store_url
from praisonsession import Session
from praisonsession.errors import InvalidIdError, InvalidValueError, KeyRequiredError
from praisonsession.integrations.agentscope import PraisonStorage, record_id

T = TypeVar("T")


def run(work: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(work)


def config() -> SessionConfig:
    model = ChatModelConfig(type="openai", credential_id="c", model="gpt-4o", parameters={})
    return SessionConfig(workspace_id="ws", chat_model_config=model)


def agent(user_id: str, source: str = "user") -> AgentRecord:
    data = AgentData(name="Friday", context_config=ContextConfig(), react_config=ReActConfig())
    return AgentRecord(user_id=user_id, data=data, source=source)


def state_of(*texts: str) -> AgentState:
    context = [
        UserMsg(name="ada", content=t)
        if i % 2 == 0
        else AssistantMsg(name="Friday", content=[TextBlock(text=t)])
        for i, t in enumerate(texts)
    ]
    return AgentState(summary="so far: " + ",".join(texts), context=context)


# -- the protocol -------------------------------------------------------------------------


def test_it_is_agentscopes_storage_with_every_method_and_takes_a_store(store: Any) -> None:
    storage = PraisonStorage(store)
    assert isinstance(storage, StorageBase)
    assert not PraisonStorage.__abstractmethods__
    assert repr(storage).startswith("PraisonStorage(store=")
    assert storage.store.url == (store.url if not isinstance(store, str) else storage.store.url)


def test_an_agent_state_round_trips_equal_and_sessions_list_newest_first(store: Any) -> None:
    async def work() -> None:
        async with PraisonStorage(store) as storage:
            state, cfg = state_of("hi", "hello"), config()
            first = await storage.upsert_session("ada", "a1", cfg, state)
            second = await storage.upsert_session("ada", "a1", config())
            await storage.upsert_session("ada", "a2", config())
            got = await storage.get_session("ada", "a1", first.id)
            assert got is not None and got.state == state and got.state is not state
            assert got.config == cfg and got.agent_id == "a1"
            later = state_of("hi", "hello", "what is 2+2?", "4")
            await storage.update_session_state("ada", "a1", first.id, later)
            again = await storage.get_session("ada", "a1", first.id)
            assert again is not None and again.state == later
            assert again.created_at == got.created_at and again.updated_at > got.updated_at
            listed = await storage.list_sessions("ada", "a1")
            assert [s.id for s in listed] == [second.id, first.id]
            assert await storage.list_sessions("bob", "a1") == []
            assert await storage.get_session("bob", "a1", first.id) is None
            assert await storage.delete_session("ada", "a1", first.id) is True
            assert await storage.delete_session("ada", "a1", first.id) is False
            with pytest.raises(KeyError):
                await storage.update_session_state("ada", "a1", first.id, later)

    run(work())


def test_update_session_state_is_one_conditional_write_and_creates_nothing(
    tmp_path: Path,
) -> None:
    async def work() -> None:
        storage = PraisonStorage(store_url("sqlite", tmp_path))
        session = await storage.upsert_session("ada", "a1", config())
        calls: list[tuple[str, Any]] = []
        backend = storage._backend
        for name in ("read_record", "read_record_state", "patch_record_state", "write_modules"):
            method = getattr(backend, name)

            def spy(*args: Any, _name: str = name, _method: Any = method, **kw: Any) -> Any:
                calls.append((_name, kw.get("must_exist")))
                return _method(*args, **kw)

            setattr(backend, name, spy)
        await storage.update_session_state("ada", "a1", session.id, state_of("x"))
        assert calls == [("patch_record_state", True)]  # must exist: the write's condition
        with pytest.raises(KeyError):
            await storage.update_session_state("ada", "a1", "nope", state_of("x"))
        assert not await storage.store.exists(record_id("session", "nope"), "ada")
        await storage.aclose()

    run(work())


# -- messages --------------------------------------------------------------------------------


def test_messages_page_by_cursor_replace_in_place_and_delete(store: Any) -> None:
    async def work() -> None:
        storage = PraisonStorage(store)
        msgs = [UserMsg(name="ada", content=f"m{i}") for i in range(120)]
        for msg in msgs:
            await storage.upsert_message("ada", "s", msg)
        assert await storage.list_messages("ada", "s", limit=500) == (msgs, False)
        page, more = await storage.list_messages("ada", "s")
        assert [m.get_text_content() for m in page] == [f"m{i}" for i in range(70, 120)] and more
        page, more = await storage.list_messages("ada", "s", limit=50, before=msgs[70].id)
        assert [m.get_text_content() for m in page] == [f"m{i}" for i in range(20, 70)] and more
        page, more = await storage.list_messages("ada", "s", limit=50, before=msgs[20].id)
        assert [m.get_text_content() for m in page] == [f"m{i}" for i in range(20)] and not more
        assert await storage.list_messages("ada", "s", before="unknown") == ([], False)
        assert await storage.list_messages("bob", "s") == ([], False)

        msgs[5] = msgs[5].model_copy(update={"content": [TextBlock(text="m5 (edited)")]})
        await storage.upsert_message("ada", "s", msgs[5])
        got = await storage.get_message("ada", "s", msgs[5].id)
        assert got is not None and got.get_text_content() == "m5 (edited)" and got == msgs[5]
        assert await storage.delete_message("ada", "s", msgs[6].id) is True
        assert await storage.delete_message("ada", "s", msgs[6].id) is False
        assert await storage.get_message("ada", "s", msgs[6].id) is None
        page, more = await storage.list_messages("ada", "s", limit=6, before=msgs[8].id)
        assert [m.get_text_content() for m in page] == ["m1", "m2", "m3", "m4", "m5 (edited)", "m7"]
        assert more
        with pytest.warns(DeprecationWarning):
            await storage.list_messages("ada", "s", offset=3)
        await storage.aclose()

    run(work())


def test_a_page_costs_the_same_whatever_the_history(tmp_path: Path) -> None:
    async def names_read(history: int) -> int:
        storage = PraisonStorage(store_url("sqlite", tmp_path / str(history)))
        for i in range(history):
            await storage.upsert_message("ada", "s", UserMsg(name="ada", content=str(i)))
        read: list[int] = []
        backend = storage._backend
        method = backend.read_record_state

        def spy(key: Any, *, names: Any, must_exist: bool) -> Any:
            read.append(len(names))
            return method(key, names=names, must_exist=must_exist)

        backend.read_record_state = spy
        page, more = await storage.list_messages("ada", "s", limit=20)
        cursor = page[0].id
        page, more = await storage.list_messages("ada", "s", limit=20, before=cursor)
        assert len(page) == 20 and more
        await storage.aclose()
        return sum(read)

    assert run(names_read(60)) == run(names_read(600)) == 2 * (1 + 21)


# -- cascades, leases and channels ---------------------------------------------------------


def test_deleting_an_agent_takes_its_sessions_schedules_messages_and_team_places(
    store: Any,
) -> None:
    async def work() -> None:
        storage = PraisonStorage(store)
        leader, worker = agent("ada"), agent("ada", source="team")
        for record in (leader, worker):
            await storage.upsert_agent("ada", record)
        lead = await storage.upsert_session("ada", leader.id, config())
        work_session = await storage.upsert_session("ada", worker.id, config())
        await storage.upsert_message("ada", work_session.id, UserMsg(name="ada", content="x"))
        schedule = ScheduleRecord(
            user_id="ada",
            agent_id=worker.id,
            data=ScheduleData(
                name="d", cron_expression="0 9 * * *", chat_model_config=config().chat_model_config
            ),
        )
        await storage.upsert_schedule("ada", schedule)
        run_session = await storage.upsert_session(
            "ada", worker.id, config(), origin=ScheduleOrigin(schedule_id=schedule.id)
        )
        assert [s.id for s in await storage.list_sessions_by_schedule("ada", schedule.id)] == [
            run_session.id
        ]
        team = TeamRecord(
            user_id="ada",
            session_id=lead.id,
            data=TeamData(
                name="t",
                members=[
                    TeamMember(
                        owner_id="ada",
                        agent_id=worker.id,
                        session_id=work_session.id,
                        role="created",
                    )
                ],
            ),
        )
        await storage.upsert_team("ada", team)
        await storage.set_session_team_id("ada", lead.id, team.id)
        assert [a.id for a in await storage.list_agents("ada")] == [leader.id]  # workers unlisted

        assert await storage.delete_agent("ada", worker.id) is True
        assert await storage.get_agent("ada", worker.id) is None
        assert await storage.list_sessions("ada", worker.id) == []
        assert await storage.get_schedule("ada", schedule.id) is None
        assert await storage.list_messages("ada", work_session.id) == ([], False)
        left = await storage.get_team("ada", team.id)
        assert left is not None and left.data.members == []

        assert await storage.delete_session("ada", leader.id, lead.id) is True  # leads the team
        assert await storage.get_team("ada", team.id) is None
        assert await storage.delete_team("ada", team.id) is False

    run(work())


def test_deleting_a_team_removes_created_members_and_only_invited_members_team_sessions(
    store: Any,
) -> None:
    async def work() -> None:
        storage = PraisonStorage(store)
        leader, created, invited = agent("ada"), agent("ada", "team"), agent("ada")
        for record in (leader, created, invited):
            await storage.upsert_agent("ada", record)
        lead = await storage.upsert_session("ada", leader.id, config())
        made = await storage.upsert_session("ada", created.id, config())
        borrowed = await storage.upsert_session("ada", invited.id, config())
        own = await storage.upsert_session("ada", invited.id, config())
        members = [
            TeamMember(owner_id="ada", agent_id=created.id, session_id=made.id, role="created"),
            TeamMember(owner_id="ada", agent_id=invited.id, session_id=borrowed.id, role="invited"),
        ]
        team = TeamRecord(
            user_id="ada", session_id=lead.id, data=TeamData(name="t", members=members)
        )
        await storage.upsert_team("ada", team)
        for session in (lead, made, borrowed):
            await storage.set_session_team_id("ada", session.id, team.id)
        stamped = await storage.get_session("ada", leader.id, lead.id)
        assert stamped is not None and stamped.team_id == team.id

        assert await storage.delete_team("ada", team.id) is True
        assert await storage.get_agent("ada", created.id) is None
        assert await storage.get_session("ada", created.id, made.id) is None
        assert await storage.get_agent("ada", invited.id) is not None
        assert [s.id for s in await storage.list_sessions("ada", invited.id)] == [own.id]
        detached = await storage.get_session("ada", leader.id, lead.id)
        assert detached is not None and detached.team_id is None
        assert await storage.list_teams("ada") == []

    run(work())


def test_a_legacy_roster_of_member_ids_is_kept_up_without_a_deprecation_warning(
    tmp_path: Path,
) -> None:
    """Teams written before AgentScope's ``members`` hold ``member_ids`` only: deleting an agent
    drops it from them, deleting the team takes their members, and neither reads the deprecated
    attribute (which warns in the caller's output)."""

    async def work() -> None:
        storage = PraisonStorage(store_url("sqlite", tmp_path / "legacy"))
        leader, gone, kept = agent("ada"), agent("ada", "team"), agent("ada", "team")
        for record in (leader, gone, kept):
            await storage.upsert_agent("ada", record)
        lead = await storage.upsert_session("ada", leader.id, config())
        await storage.upsert_session("ada", kept.id, config())
        legacy = TeamData.model_validate({"name": "t", "member_ids": [gone.id, kept.id]})
        team = TeamRecord(user_id="ada", session_id=lead.id, data=legacy)
        await storage.upsert_team("ada", team)

        assert await storage.delete_agent("ada", gone.id) is True
        left = await storage.get_team("ada", team.id)
        assert left is not None
        assert left.data.model_dump(include={"member_ids"}) == {"member_ids": [kept.id]}
        assert await storage.delete_team("ada", team.id) is True
        assert await storage.get_agent("ada", kept.id) is None  # a legacy member was created
        assert await storage.get_agent("ada", leader.id) is not None
        await storage.aclose()

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        run(work())


def test_a_document_lease_goes_to_one_worker_until_it_expires(store: Any) -> None:
    async def work() -> None:
        storage = PraisonStorage(store)
        doc = KnowledgeDocumentRecord(
            user_id="ada",
            knowledge_base_id="kb",
            data=KnowledgeDocumentData(filename="f.txt", size=3, blob_uri="local://f.txt"),
        )
        await storage.upsert_knowledge_document("ada", doc)
        now = datetime(2026, 1, 1, 12, 0)
        ttl = timedelta(minutes=5)
        args = ("ada", "kb", doc.id)
        assert await storage.acquire_knowledge_document_lease(*args, "n1", ttl, now) is True
        assert await storage.acquire_knowledge_document_lease(*args, "n2", ttl, now) is False
        assert await storage.renew_knowledge_document_lease(*args, "n2", ttl, now) is False
        assert await storage.list_knowledge_documents_with_expired_lease(now) == []
        later = now + timedelta(minutes=6)
        expired = await storage.list_knowledge_documents_with_expired_lease(later)
        assert [d.id for d in expired] == [doc.id]
        assert await storage.acquire_knowledge_document_lease(*args, "n2", ttl, later) is True
        await storage.release_knowledge_document_lease(*args, "n1")  # stolen: left alone
        held = await storage.get_knowledge_document(*args)
        assert held is not None and held.processing_node == "n2"
        await storage.update_knowledge_document_status(*args, "ready", chunk_count=7)
        done = await storage.get_knowledge_document(*args)
        assert done is not None and done.status == "ready" and done.data.chunk_count == 7
        assert await storage.get_knowledge_document("ada", "other-kb", doc.id) is None

    run(work())


def test_a_channel_is_found_by_id_and_by_bot_across_users(store: Any) -> None:
    async def work() -> None:
        storage = PraisonStorage(store)

        def channel(user_id: str) -> ChannelRecord:
            return ChannelRecord(
                channel_type="discord",
                user_id=user_id,
                routing=RoutingConfig(bindings=[ChannelBinding(agent_id="a1")]),
                session=SessionSettings(chat_model_config={"model": "m"}),
            )

        ada, bob = channel("ada"), channel("bob")
        await storage.upsert_channel(ada, "bot-1")
        await storage.upsert_channel(bob, "bot-2")
        with pytest.raises(ValueError, match="already drives"):
            await storage.upsert_channel(channel("bob"), "bot-1")
        got = await storage.get_channel(ada.id)
        assert got is not None and got.user_id == "ada"
        assert await storage.get_channel_id_by_platform_bot_id("bot-2") == bob.id
        assert sorted(c.id for c in await storage.list_all_channels()) == sorted([ada.id, bob.id])
        assert [c.id for c in await storage.list_channels("bob")] == [bob.id]
        await storage.upsert_channel(ada, "bot-3")  # a new bot frees the old one
        assert await storage.get_channel_id_by_platform_bot_id("bot-1") is None
        assert await storage.delete_channel(ada.id, "bot-3") is True
        assert await storage.get_channel(ada.id) is None
        assert await storage.get_channel_id_by_platform_bot_id("bot-3") is None

    run(work())


# -- processes ---------------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from agentscope.message import UserMsg
    from praisonsession.integrations.agentscope import PraisonStorage

    async def main(url, who, count):
        storage = PraisonStorage(url)
        for i in range(count):
            await storage.upsert_message("ada", "shared", UserMsg(name=who, content=f"{who}-{i}"))
        await storage.aclose()

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


@pytest.mark.slow
def test_a_session_resumes_in_a_new_process(url: str) -> None:
    state = state_of("hi", "hello")

    async def write() -> str:
        storage = PraisonStorage(url)
        session = await storage.upsert_session("ada", "a1", config(), state)
        await storage.upsert_message("ada", session.id, UserMsg(name="ada", content="hi"))
        await storage.aclose()
        return str(session.id)

    session_id = run(write())
    code = (
        "import asyncio, sys\n"
        "from praisonsession.integrations.agentscope import PraisonStorage\n"
        "async def main():\n"
        "    s = PraisonStorage(sys.argv[1])\n"
        "    got = await s.get_session('ada', 'a1', sys.argv[2])\n"
        "    page, _ = await s.list_messages('ada', sys.argv[2])\n"
        "    print(got.state.model_dump_json(), page[0].get_text_content())\n"
        "    await s.aclose()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, url, session_id], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    state_json, text = done.stdout.rsplit(" ", 1)
    assert AgentState.model_validate_json(state_json) == state
    assert text.strip() == "hi"


@pytest.mark.slow
def test_concurrent_writers_on_one_session_lose_no_message(url: str) -> None:
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, url, f"w{n}", "10"]) for n in range(3)
    ]
    assert [w.wait(timeout=300) for w in workers] == [0, 0, 0]

    async def read() -> list[str]:
        storage = PraisonStorage(url)
        page, more = await storage.list_messages("ada", "shared", limit=100)
        await storage.aclose()
        assert not more
        return [str(m.get_text_content()) for m in page]

    texts = run(read())
    assert sorted(texts) == sorted(f"w{n}-{i}" for n in range(3) for i in range(10))
    for n in range(3):  # each writer's messages in the order it wrote them
        mine = [t for t in texts if t.startswith(f"w{n}-")]
        assert mine == [f"w{n}-{i}" for i in range(10)]


# -- our stores' extras: erasure, encryption, typed refusals ------------------------------------


def test_a_users_records_are_one_of_ours_until_erase_user_removes_them(url: str) -> None:
    async def work() -> str:
        storage = PraisonStorage(url)
        await storage.upsert_agent("ada", agent("ada"))
        await storage.upsert_credential("ada", OpenAICredential(api_key=SecretStr("sk-ada")))
        session = await storage.upsert_session("ada", "a1", config(), state_of("secret"))
        await storage.upsert_message("ada", session.id, UserMsg(name="ada", content="secret"))
        await storage.upsert_agent("bob", agent("bob"))
        await storage.aclose()
        return str(session.id)

    session_id = run(work())
    with Session(record_id("session", session_id), "ada", store=url) as ours:
        assert ours.get_state("s")["summary"] == "so far: secret"
        assert len(ours.list_sessions()) == 4  # agent, credential, session, its messages
    report = praisonsession.erase_user("ada", store=url)
    assert report.sessions == 4

    async def after() -> None:
        storage = PraisonStorage(url)
        assert await storage.list_agents("ada") == []
        assert await storage.list_credentials("ada") == []
        assert await storage.get_session("ada", "a1", session_id) is None
        assert len(await storage.list_agents("bob")) == 1
        await storage.aclose()

    run(after())


def test_records_are_sealed_at_rest_with_an_encryption_key(tmp_path: Path) -> None:
    url = store_url("sqlite", tmp_path)
    secret = "my card number is 4111 1111 1111 1111"
    key = {"encryption_key": ENCRYPTION_KEY}

    async def work() -> str:
        storage = PraisonStorage(url, settings=key)
        await storage.upsert_credential("ada", OpenAICredential(api_key=SecretStr(secret)))
        state = state_of(secret)
        session = await storage.upsert_session("ada", "a1", config(), state)
        await storage.upsert_message("ada", session.id, UserMsg(name="ada", content=secret))
        got = await storage.get_session("ada", "a1", session.id)
        assert got is not None and got.state == state
        creds = await storage.list_credentials("ada")
        assert creds[0].data["api_key"] == secret
        await storage.aclose()
        return str(session.id)

    session_id = run(work())
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and not any(secret.encode() in p.read_bytes() for p in files)

    async def keyless() -> None:
        storage = PraisonStorage(url)
        with pytest.raises(KeyRequiredError):
            await storage.get_session("ada", "a1", session_id)
        with pytest.raises(KeyRequiredError):
            await storage.update_session_state("ada", "a1", session_id, state_of("x"))
        await storage.aclose()

    run(keyless())


def test_bad_input_is_refused_typed_and_writes_nothing(tmp_path: Path) -> None:
    async def work() -> None:
        storage = PraisonStorage(store_url("sqlite", tmp_path))
        with pytest.raises(InvalidIdError, match="user_id"):
            await storage.upsert_session("", "a1", config())
        with pytest.raises(InvalidIdError):
            await storage.get_session("ada", "a1", "x" * 300)
        with pytest.raises(InvalidIdError):
            await storage.upsert_message("ada", "bad\nid", UserMsg(name="ada", content="x"))
        with pytest.raises(InvalidValueError, match="limit"):
            await storage.list_messages("ada", "s", limit=-1)
        with pytest.raises(InvalidValueError, match="AgentState"):
            await storage.update_session_state("ada", "a1", "s", {"context": []})  # type: ignore[arg-type]
        with pytest.raises(InvalidValueError, match="Msg"):
            await storage.upsert_message("ada", "s", {"content": "x"})  # type: ignore[arg-type]
        refused = {  # a record of another kind, or none: said so, not an AttributeError
            "agent_record must be an agentscope AgentRecord, got dict": lambda: (
                storage.upsert_agent("ada", {"id": "a1"})  # type: ignore[arg-type]
            ),
            "record must be an agentscope ScheduleRecord, got Msg": lambda: storage.upsert_schedule(
                "ada", UserMsg(name="ada", content="x")
            ),  # type: ignore[arg-type]
            "credential_data must be an agentscope CredentialBase, got NoneType": lambda: (
                storage.upsert_credential("ada", None)  # type: ignore[arg-type]
            ),
            "record must be an agentscope TeamRecord, got NoneType": lambda: storage.upsert_team(
                "ada", None
            ),  # type: ignore[arg-type]
            "threshold must be a datetime": lambda: storage.list_knowledge_documents_pending_since(
                "yesterday"
            ),  # type: ignore[arg-type]
        }
        for message, call in refused.items():
            with pytest.raises(InvalidValueError, match=message):
                await call()
        assert await storage.store.list_users() == []
        await storage.aclose()

    run(work())


def test_importing_praisonsession_never_imports_agentscope() -> None:
    assert_not_imported("'agentscope' in sys.modules", "import praisonsession imported agentscope")


@pytest.mark.slow
def test_the_benchmark_runs_quickly_and_prints_every_row(tmp_path: Path) -> None:
    rows = ["update_session_state", "upsert_message", "list_messages (latest)", "get_session"]
    assert_benchmark_prints("bench_agentscope_storage.py", rows, tmp_path, timeout=600)
