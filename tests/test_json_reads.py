"""A read of the JSON store creates no file: not a user's directory, not a session's lock file,
not the lock of the encrypted store's mark that a store without a key reads before its first
write. A read-only pass over a store leaves every file and directory as it was."""

from __future__ import annotations

import asyncio
from pathlib import Path

from praisonsession import Session, StateModule
from praisonsession.stores import JSONSession


class Notes(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.title = ""
        self.register_state("title")


def contents(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder``, with its bytes (None for a directory)."""
    return {
        str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
    }


def test_a_plain_write_reads_the_encrypted_mark_and_leaves_no_file_of_it(tmp_path: Path) -> None:
    folder = tmp_path / "j"
    with Session("s1", "bob", store=JSONSession(folder)) as session:
        session.set_state("a", 1)
    assert sorted(path.name for path in folder.iterdir()) == ["bob"]  # no "%1Esnapshots"


def test_a_read_only_pass_leaves_the_directory_unchanged(tmp_path: Path) -> None:
    folder = tmp_path / "j"
    with Session("s1", "bob", store=JSONSession(folder)) as session:
        session.set_state("a", 1)
        session.save_modules(notes=Notes())
    before = contents(folder)

    async def reads() -> None:
        store = JSONSession(folder)
        assert (await store.get_info("s1", "bob")) is not None
        assert not await store.exists("s2", "bob")
        assert not await store.exists("s1", "carol")  # a user with no directory
        assert [info.session_id for info in await store.list_sessions("bob")] == ["s1"]
        assert await store.list_sessions("carol") == []
        assert await store.get_state("s1", "bob") == {"a": 1}
        assert await store.get_state("s9", "dan") == {}
        assert await store.read_messages("s9", "dan", "notes.log") == []
        await store.load_session_state("s1", "bob", notes=Notes())
        await store.load_session_state("s9", "dan", notes=Notes())
        await store.close()
        # AgentScope's layout asks the key guard, which reads the encrypted store's mark
        agentscope = JSONSession(folder, layout="agentscope")
        await agentscope.load_session_state("s9", "dan", notes=Notes())
        await agentscope.close()

    asyncio.run(reads())
    assert contents(folder) == before
