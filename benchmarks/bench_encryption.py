"""What encryption at rest costs: a saved chat turn, encrypted and not, beside the raw engine.

Run from the repository root::

    .venv/bin/python benchmarks/bench_encryption.py [--turns 2000] [--quick] [--json out.json]

A "turn" is what an agent saves after each chat: a ``MessageLog`` inside a ``StateModule`` that
grew by a user and an assistant message (about 300 bytes of text each), saved with
``save_modules`` (an append of the two messages and a rewrite of the small module document).
It is timed on a SQLite and a JSON store, each plainly and through ``EncryptedStore`` (the
``encryption_key`` setting), in one process run, and beside the raw engine: the same two
JSON messages inserted with a bare ``sqlite3`` transaction (WAL, synchronous=NORMAL, the
store's own pragmas). ``increment_state``, a read-add-compare-and-set loop when encrypted, is
measured the same way.

Target: an encrypted saved turn costs at most 2x the same turn unencrypted.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from praisonsession import EncryptedStore, JSONSession, Session, SqliteSession, StateModule
from praisonsession.state import MessageLog

TARGET_RATIO = 2.0
KEY = base64.urlsafe_b64encode(os.urandom(32)).decode()
TEXT = "The quick brown fox jumps over the lazy dog; " * 7  # ~300 bytes per message


class Chat(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.register_state("turns")
        self.history = MessageLog()


def turn(i: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"{i}: {TEXT}"},
        {"role": "assistant", "content": f"{i}: {TEXT}"},
    ]


def time_turns(stores: list[Any], turns: int) -> list[float]:
    """Median seconds of one saved turn on each store, the stores taking turns (so that a
    change in the machine's load weighs on each alike); checks every message was kept."""
    sessions = [Session("bench", "u", store=store) for store in stores]
    chats = [Chat() for _ in stores]
    times: list[list[float]] = [[] for _ in stores]
    for i in range(turns):
        for session, chat, spent in zip(sessions, chats, times, strict=True):
            for message in turn(i):
                chat.history.append(message)
            chat.turns += 1
            started = time.perf_counter()
            session.save_modules(chat=chat)
            spent.append(time.perf_counter() - started)
    for store in stores:
        check = Chat()
        Session("bench", "u", store=store).load_modules(chat=check)
        if len(check.history) != 2 * turns or check.turns != turns:
            raise SystemExit(f"lost a turn: {len(check.history)} messages, {check.turns} turns")
    return [statistics.median(spent) for spent in times]


def time_increments(store: Any, count: int) -> float:
    session = Session("counter", "u", store=store)
    started = time.perf_counter()
    for _ in range(count):
        session.increment_state("n")
    elapsed = time.perf_counter() - started
    if session.get_state("n") != count:
        raise SystemExit(f"lost an increment: {session.get_state('n')} of {count}")
    return elapsed / count


def time_raw_sqlite(path: Path, turns: int) -> float:
    """The raw engine: two JSON messages inserted in one transaction, nothing else."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE log (seq INTEGER PRIMARY KEY, message TEXT NOT NULL)")
    times = []
    for i in range(turns):
        rows = [(json.dumps(m),) for m in turn(i)]
        started = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO log (message) VALUES (?)", rows)
        conn.execute("COMMIT")
        times.append(time.perf_counter() - started)
    if conn.execute("SELECT count(*) FROM log").fetchone()[0] != 2 * turns:
        raise SystemExit("raw SQLite lost a row")
    conn.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--quick", action="store_true", help="200 turns, 200 increments")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    turns = 200 if args.quick else args.turns
    root = Path(tempfile.mkdtemp(prefix="bench-encryption-"))
    figures: dict[str, Any] = {}
    try:
        raw = time_raw_sqlite(root / "raw.db", turns)
        rows = []
        for name, make in (
            ("SQLite", lambda d: SqliteSession(d / "s.db")),
            ("JSON", lambda d: JSONSession(d / "j")),
        ):
            plain, sealed = time_turns(
                [make(root / f"{name}-plain"), EncryptedStore(make(root / f"{name}-sealed"), KEY)],
                turns,
            )
            inc_plain = time_increments(make(root / f"{name}-inc-plain"), turns)
            inc_sealed = time_increments(
                EncryptedStore(make(root / f"{name}-inc-sealed"), KEY), turns
            )
            rows.append((name, plain, sealed, inc_plain, inc_sealed))
            figures[name] = {
                "turn_ms": plain * 1000,
                "encrypted_turn_ms": sealed * 1000,
                "turn_ratio": sealed / plain,
                "increment_ms": inc_plain * 1000,
                "encrypted_increment_ms": inc_sealed * 1000,
            }
        figures["raw_sqlite_turn_ms"] = raw * 1000
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"Saved turns: {turns} per store (median ms); Python {sys.version.split()[0]}")
    print()
    print("| store | saved turn | encrypted | ratio (target <= 2x) | raw SQLite insert |")
    print("|---|---|---|---|---|")
    for name, plain, sealed, _, _ in rows:
        print(
            f"| {name} | {plain * 1000:.3f} | {sealed * 1000:.3f} | {sealed / plain:.2f}x "
            f"{'ok' if sealed / plain <= TARGET_RATIO else 'OVER'} | {raw * 1000:.3f} |"
        )
    print()
    print("| store | increment_state | encrypted (compare-and-set) | ratio |")
    print("|---|---|---|---|")
    for name, _, _, inc_plain, inc_sealed in rows:
        print(
            f"| {name} | {inc_plain * 1000:.3f} | {inc_sealed * 1000:.3f} | "
            f"{inc_sealed / inc_plain:.2f}x |"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
