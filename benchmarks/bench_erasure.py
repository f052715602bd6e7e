"""What an erasure that leaves no bytes costs on PostgreSQL, and what it costs other sessions.

Run from the repository root::

    .venv/bin/python benchmarks/bench_erasure.py [--quick]

It starts its own PostgreSQL on 127.0.0.1 (``tests/postgres_server.py``, with
``wal_recycle=off`` as docs/pages/hierarchy.md asks). For each size (10,000 and 100,000
messages of other users; ``--quick``: 2,000) it fills one schema with them and with one user
of 300 messages, then, in one run:

1. ``erase_user`` of that user: the deletes, then the scrub (``VACUUM FULL`` of the schema's
   tables, ``pg_switch_wal()``, ``CHECKPOINT``), beside the raw engine doing the scrub's part
   bare on the same tables right after (psycopg: the same ``VACUUM FULL`` statements, switch
   and checkpoint), and the ratio.
2. What another user's reads see meanwhile: a thread reads the last 10 messages of another
   user's session in a loop; its p50 before the erasure and its worst read during it (the
   ``ACCESS EXCLUSIVE`` lock of each table's rewrite makes reads wait).
3. The check that counts: every file of the server's directory is scanned afterwards, and no
   byte of the erased user's marker may be left (the run stops otherwise), while the other
   users' messages are all there.

No timing is asserted anywhere (``tests/test_benchmarks.py`` runs ``--quick``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the server helpers of the test suite

from postgres_server import SERVER_WAL, PostgresServer  # noqa: E402
from praisonsession import Session, erase_user, open_store  # noqa: E402
from praisonsession._internal import runtime  # noqa: E402
from praisonsession.stores.backends.postgres.schema import TABLES  # noqa: E402  (the tables the store has today)

MARK = "zq8x1"  # in every message of the erased user, in none of the others'


def fill(url: str, others: int) -> None:
    """``others`` messages across 100 other users (one session each), and the user to erase."""
    per_user = max(1, others // 100)
    for user in range(100):
        with Session("chat", f"user-{user}", store=url) as session:
            body = [{"content": f"message {i} of user {user} " + "x" * 80} for i in range(per_user)]
            session.append_messages("chat", body)
    with Session("chat", f"erin-{MARK}", store=url) as session:
        session.append_messages("chat", [{"content": f"msg {i} {MARK}"} for i in range(300)])


def server_bytes(server: PostgresServer) -> bytes:
    found = []
    for path in server.dir.rglob("*"):
        try:
            found.append(path.read_bytes() if path.is_file() else b"")
        except FileNotFoundError:  # the server removed it while we looked
            continue
    return b"".join(found)


def bare_scrub(url: str, schema: str) -> float:
    """The scrub's statements, bare, on the same tables: seconds."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        start = time.perf_counter()
        for table in TABLES:
            conn.execute(f'VACUUM FULL "{schema}".{table}')
        conn.execute("SELECT pg_switch_wal()")
        conn.execute("CHECKPOINT")
        return time.perf_counter() - start


def measure(server: PostgresServer, others: int) -> dict[str, float]:
    schema = f"erase_{others}"
    url = f"{server.url}?schema={schema}"
    fill(url, others)
    store = open_store(url)
    reader = Session("chat", "user-7", store=store)
    idle = []
    for _ in range(50):
        start = time.perf_counter()
        reader.read_messages("chat", 0, 10)
        idle.append(time.perf_counter() - start)
    during: list[float] = []
    stop = threading.Event()

    def read_meanwhile() -> None:
        mine = Session("chat", "user-8", store=url)
        while not stop.is_set():
            start = time.perf_counter()
            assert len(mine.read_messages("chat", 0, 10)) == min(10, max(1, others // 100))
            during.append(time.perf_counter() - start)
        mine.close()

    thread = threading.Thread(target=read_meanwhile)
    thread.start()
    time.sleep(0.2)
    start = time.perf_counter()
    report = erase_user(f"erin-{MARK}", store=store)
    erased = time.perf_counter() - start
    stop.set()
    thread.join()
    if report.sessions != 1 or report.leftovers:
        raise SystemExit(f"the erasure did not go as it should: {report}")
    bare = bare_scrub(server.url, schema)
    left = server_bytes(server)
    if MARK.encode() in left:
        at = left.find(MARK.encode())
        raise SystemExit(f"bytes of the erased user are left: {left[at - 60 : at + 60]!r}")
    kept = sum(
        len(Session("chat", f"user-{user}", store=store).read_messages("chat"))
        for user in range(100)
    )
    if kept != 100 * max(1, others // 100):
        raise SystemExit(f"other users' messages were lost: {kept} of {others}")
    reader.close()
    runtime.run(store.close())
    return {
        "erase": erased,
        "bare": bare,
        "idle_p50": statistics.median(idle),
        "worst_during": max(during, default=0.0),
        "reads_during": len(during),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small size, correctness only")
    quick = parser.parse_args().quick
    sizes = [2_000] if quick else [10_000, 100_000]
    with PostgresServer(max_wal_size=SERVER_WAL) as server:
        import psycopg

        with psycopg.connect(server.url) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
        print(f"PostgreSQL {version} on 127.0.0.1, wal_recycle=off, fsync off (tests' server)")
        print()
        print(
            "| other users' messages | erase_user (ms) | bare VACUUM FULL + switch + "
            "checkpoint (ms) | ratio | another user's read: p50 idle / worst during (ms) |"
        )
        print("|---|---|---|---|---|")
        for size in sizes:
            got = measure(server, size)
            print(
                f"| {size:,} | {got['erase'] * 1000:.0f} | {got['bare'] * 1000:.0f} | "
                f"{got['erase'] / got['bare']:.2f}x | {got['idle_p50'] * 1000:.1f} / "
                f"{got['worst_during'] * 1000:.0f} ({got['reads_during']:.0f} reads) |"
            )
        print()
        print("No byte of the erased user left in the server's directory (data, WAL, log).")


if __name__ == "__main__":
    main()
