"""Every backend by name, and raw access under a store's API to damage or age its data."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from praisonsession import InMemorySession, JSONSession, SessionBase, SqliteSession
from praisonsession.identifiers import filename_for

BACKENDS = ["memory", "json", "sqlite"]
PERSISTENT = ["json", "sqlite"]


class RawAccess:
    """Reaches under a store's API to damage or age what it stored, as the world might."""

    def __init__(self, store: SessionBase) -> None:
        self.store = store

    def corrupt_state(self, session_id: str, user_id: str) -> None:
        if isinstance(self.store, JSONSession):
            self._doc_path(session_id, user_id).write_bytes(b'{"format": 1, "state": {"a": ')
        elif isinstance(self.store, SqliteSession):
            with self._db() as db:
                db.execute(
                    "UPDATE ps_state SET value='{broken' WHERE user_id=? AND session_id=?",
                    (user_id, session_id),
                )
        else:
            raise AssertionError("an in-memory store holds objects, not bytes")

    def set_format(self, session_id: str, user_id: str, found: int) -> None:
        if isinstance(self.store, JSONSession):
            path = self._doc_path(session_id, user_id)
            data = json.loads(path.read_text("utf-8"))
            data["format"] = found
            path.write_text(json.dumps(data), "utf-8")
        else:
            with self._db() as db:
                db.execute(
                    "UPDATE ps_sessions SET format=? WHERE user_id=? AND session_id=?",
                    (found, user_id, session_id),
                )

    def write_agentscope(self, session_id: str, modules: dict[str, Any]) -> None:
        """Leave a session where AgentScope 1.0 kept it, in its format (no envelope, no user)."""
        if isinstance(self.store, JSONSession):
            path = self.store.save_dir / f"{session_id}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps(modules, ensure_ascii=False)
            path.write_bytes(text.encode("utf-8", "surrogatepass"))  # as AgentScope wrote it
            return
        with self._db() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS as_session (session_id TEXT, session_data JSON, "
                "created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, "
                "updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (session_id))"
            )
            db.execute(
                "INSERT INTO as_session (session_id, session_data) VALUES (?, json(?))",
                (session_id, json.dumps(modules)),
            )

    def raw_bytes(self, session_id: str, user_id: str) -> bytes:
        if isinstance(self.store, JSONSession):
            return self._doc_path(session_id, user_id).read_bytes()
        with self._db() as db:
            rows = db.execute(
                "SELECT name, value FROM ps_state WHERE user_id=? AND session_id=? ORDER BY name",
                (user_id, session_id),
            ).fetchall()
        return repr(rows).encode()

    def all_files(self) -> list[Path]:
        root = (
            self.store.save_dir if isinstance(self.store, JSONSession) else self.store.path.parent
        )
        return [p for p in root.parent.rglob("*") if p.is_file()]

    def _doc_path(self, session_id: str, user_id: str) -> Path:
        assert isinstance(self.store, JSONSession)
        return self.store.save_dir / filename_for(user_id) / f"{filename_for(session_id)}.json"

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        assert isinstance(self.store, SqliteSession)
        self.store.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.store.path, isolation_level=None)
        try:
            yield db
        finally:
            db.close()


def make_store(kind: str, root: Path, **options: Any) -> SessionBase:
    if kind == "memory":
        return InMemorySession(**options)
    if kind == "json":
        return JSONSession(root / "json-store", **options)
    return SqliteSession(root / "sqlite-store" / "sessions.db", **options)


def kind_of(store: SessionBase) -> str:
    return {"InMemorySession": "memory", "JSONSession": "json", "SqliteSession": "sqlite"}[
        type(store).__name__
    ]
