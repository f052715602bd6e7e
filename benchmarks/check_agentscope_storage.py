"""AgentScope 2.0's own storage tests, run against PraisonStorage with only the storage swapped.

    .venv-frameworks/bin/python benchmarks/check_agentscope_storage.py CHECKOUT [--stores ...]

Not a benchmark: a checker. ``CHECKOUT`` is a clone of github.com/agentscope-ai/agentscope (a
work tree, or a bare git directory whose HEAD is read). Its ``tests/storage_sql_test.py``,
``storage_redis_test.py`` and ``storage_redis_knowledge_base_test.py`` are copied to a
temporary folder (nothing of them enters this repository) beside a ``conftest.py`` that swaps
the storage: the SQL tests' ``AsyncSQLAlchemyStorage(...)`` and the Redis tests'
``make_storage()`` return a ``PraisonStorage`` on a fresh store of the chosen kind. Everything
else runs as AgentScope wrote it. ``--native`` runs them unswapped first, on AgentScope's own
storages, to prove the harness. Prints the count per store and the tests that failed; the tests
that read a backend's internals (a Redis key, SQLAlchemy's ``IntegrityError``) are expected
among them, and the exit status is non-zero if any other fails.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

FILES = ["storage_sql_test.py", "storage_redis_test.py", "storage_redis_knowledge_base_test.py"]
TESTS = Path(__file__).resolve().parents[1] / "tests"
#: The tests that read a backend's internals, so cannot pass on another storage.
INTERNALS = {
    "storage_sql_test.py::AsyncSQLAlchemyStorageTest::test_document_kb_foreign_key_is_enforced",
    "storage_sql_test.py::AsyncSQLAlchemyStorageTest::test_upsert_credential_is_owner_scoped",
    "storage_redis_test.py::TestMessage::test_find_message_index_across_chunks",
    "storage_redis_test.py::TestMessage::test_replace_refreshes_message_list_ttl",
    "storage_redis_test.py::TestMessage::test_upsert_refreshes_message_list_ttl",
    "storage_redis_test.py::TestAgentSource::test_legacy_record_without_source_deserializes",
    "storage_redis_test.py::TestSessionTeamId::test_legacy_session_without_team_id_deserializes",
    *(
        f"storage_redis_test.py::TestTeamCascade::{name}"
        for name in (
            "test_delete_leader_agent_dissolves_all_its_teams",
            "test_delete_leader_session_dissolves_team",
            "test_delete_team_cascades_workers_and_clears_leader",
            "test_delete_team_idempotent_on_nonexistent",
            "test_direct_delete_worker_agent_scrubs_member_ids",
            "test_direct_delete_worker_session_does_not_dissolve_team",
        )
    ),
}

CONFTEST = """
import atexit, itertools, os, sys, tempfile
import pytest

sys.path.insert(0, os.environ["PS_TESTS"])
_count = itertools.count()
_server = []
KEY = "bXktdGVzdC1rZXktb2YtMzItYnl0ZXMtZXhhY3RseSE="


def _server_url(kind):
    if not _server:
        if kind == "redis":
            from redis_server import RedisServer as Server
        else:
            from postgres_server import PostgresServer as Server
        _server.append(Server().start())
        atexit.register(_server[0].stop)
    return _server[0].url


def _ours():
    from praisonsession.integrations.agentscope import PraisonStorage

    kind, n = os.environ["AS2_STORE"], next(_count)
    folder = tempfile.mkdtemp(prefix="as2-", dir=os.environ["AS2_FOLDERS"])
    settings = None
    if kind == "memory":
        url = "memory://"
    elif kind in ("sqlite", "encrypted"):
        url = f"sqlite://{folder}/s.db"
        settings = {"encryption_key": KEY} if kind == "encrypted" else None
    elif kind == "json":
        url = f"json://{folder}"
    elif kind == "redis":
        url = f"{_server_url(kind)}?key_prefix=c{os.getpid()}x{n}:"
    else:
        url = f"{_server_url(kind)}?schema=c{os.getpid()}x{n}"
    return PraisonStorage(url, settings=settings)


class _Factory:
    def __new__(cls, *args, **kwargs):
        return _ours()


@pytest.fixture(autouse=True)
def _swap(request, monkeypatch):
    if os.environ["AS2_STORE"] == "native":
        return
    if hasattr(request.module, "make_storage"):
        monkeypatch.setattr(request.module, "make_storage", _ours)
    if hasattr(request.module, "AsyncSQLAlchemyStorage"):
        monkeypatch.setattr(request.module, "AsyncSQLAlchemyStorage", _Factory)
"""


def read_tests(checkout: Path, folder: Path) -> None:
    for name in FILES:
        work_tree = checkout / "tests" / name
        if work_tree.is_file():
            text = work_tree.read_text("utf-8")
        else:
            text = subprocess.run(
                ["git", "--git-dir", str(checkout), "show", f"HEAD:tests/{name}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        (folder / name).write_text(text, "utf-8")
    (folder / "conftest.py").write_text(CONFTEST, "utf-8")


def run(folder: Path, store: str) -> tuple[int, int, set[str]]:
    # the stores' folders go in the suite's folder, removed with it (not TMPDIR: a PostgreSQL
    # server, run as nobody when we are root, needs its directory where nobody reaches it)
    stores = folder / f"stores-{store}"
    stores.mkdir(exist_ok=True)
    env = {**os.environ, "AS2_STORE": store, "PS_TESTS": str(TESTS), "AS2_FOLDERS": str(stores)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", *FILES],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    failed = set(re.findall(r"^FAILED (\S+)", done.stdout, re.M))
    passed = int((re.search(r"(\d+) passed", done.stdout) or [0, 0])[1])
    total = passed + len(failed)
    return passed, total, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", type=Path, help="a clone of agentscope-ai/agentscope")
    parser.add_argument(
        "--stores", default="memory,json,sqlite,encrypted,redis,postgres", help="comma-separated"
    )
    parser.add_argument("--native", action="store_true", help="first on AgentScope's storages")
    args = parser.parse_args()
    stores = args.stores.split(",")
    if args.native:
        stores.insert(0, "native")
    ok = True
    with tempfile.TemporaryDirectory(prefix="as2-suite-") as tmp:
        folder = Path(tmp)
        read_tests(args.checkout, folder)
        for store in stores:
            passed, total, failed = run(folder, store)
            unexpected = failed - INTERNALS if store != "native" else failed
            ok &= not unexpected and total > 0
            print(f"{store}: {passed} of {total} passed", end="")
            if store != "native":
                print(f" ({len(failed & INTERNALS)} read a backend's internals)", end="")
            print()
            for name in sorted(unexpected):
                print(f"  FAILED {name}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
