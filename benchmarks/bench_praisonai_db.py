"""PraisonAI's agent persistence: PraisonDb next to PraisonAI's own session stores, in one run.

Run from the repository root, in the dev environment (it has praisonaiagents 1.7.17)::

    .venv/bin/python benchmarks/bench_praisonai_db.py [--json results.json] [--quick]

What a PraisonAI ``Agent`` asks of its persistence, on one session per store, at 10, 1,000 and
10,000 messages of history:

1. **turn**: the two writes of a turn, the user's message and the agent's answer
   (``on_user_message`` + ``on_agent_message``; PraisonAI's stores: ``add_user_message`` +
   ``add_assistant_message``, what the Agent calls on them); median µs per turn.
2. **resume**: what an Agent does when it starts on a stored session: ours
   ``on_agent_start`` (opens the session and returns every message); PraisonAI's stores
   ``get_working_history`` then ``set_agent_info``, as ``Agent._init_session_store`` does;
   median µs.

PraisonAI's stores keep every message here (``retention="keep_all"``), as PraisonDb does: by
default they fold all but the last 100 into a summary, and a resumed agent sees the summary.

Same durability, stated in the output:

- ``process`` (an acknowledged write survives a crash of the process, not a power loss):
  PraisonDb on ``sqlite://`` (WAL, synchronous=NORMAL) and on ``json://`` (no fsync), against
  PraisonAI's default ``DefaultSessionStore`` (one JSON file per session, written to a
  temporary file and renamed, never fsynced).
- ``power`` (it survives a power loss too): PraisonDb on ``sqlite://`` at durability
  ``"power"`` (WAL, synchronous=FULL) against PraisonAI's ``SqliteTranscriptStore`` (its
  journal mode and ``synchronous`` are read from its own connection and printed).

PraisonAI's ``SQLiteDB`` (its database ``DbAdapter``) is in the ``praisonai`` package, which
does not install beside praisonaiagents 1.7.17 here (it needs mcp >= 1.20, the dev
environment pins 1.16 for AgentScope 1.0.21): its row is left out when it cannot be imported.

The stores take turns call by call (ours, theirs, ours ...), so that a change in the machine's
state touches them alike, with the garbage collector off during the timed calls (as
``timeit`` has it); ratio = their median / ours, at least 1.0 where ours is at least as
fast. Flat: ours at 10,000 messages within 1.2x of ours at 10, for the turn, timed in a pass of
our stores alone before the interleaved one (beside PraisonAI's stores, which rewrite up to
megabytes per message, an fsync, ours included, also waits for their writes to reach the disk);
a resume returns every message, so it grows with the history for everyone. Every store's
messages are read back at the end and checked equal to what was written: a lost or reordered
one stops the run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _name, _value in (
    ("DO_NOT_TRACK", "true"),
    ("PRAISONAI_TELEMETRY_DISABLED", "true"),
    ("PRAISONAI_DISABLE_TELEMETRY", "true"),
):
    os.environ.setdefault(_name, _value)

from praisonsession.integrations.praisonai import PraisonDb  # noqa: E402

RATIO_TARGET = 1.0
FLAT_TARGET = 1.2
SESSION = "bench"


def message(n: int) -> tuple[str, str]:
    """Message ``n`` of a conversation: the user's on even ``n``, the agent's on odd."""
    if n % 2 == 0:
        return "user", f"Question {n // 2}: what is the weather in city {n // 2}? ☀"
    return "assistant", f"It is sunny in city {n // 2}, {n % 30} °C."


# -- the stores -------------------------------------------------------------------------------


class Ours:
    """PraisonDb over one of our stores."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.db = PraisonDb(url)

    def seed(self, session: str, size: int) -> None:
        from praisonsession import Session

        with Session(session, "bench-user", store=self.db.store) as ours:
            entries = [{"role": r, "content": c} for r, c in map(message, range(size))]
            for at in range(0, size, 1000):
                ours.append_messages("praisonai.messages", entries[at : at + 1000])
        self.db.on_agent_start("Helper", session, "bench-user")

    def turn(self, session: str, n: int) -> None:
        self.db.on_user_message(session, message(n)[1])
        self.db.on_agent_message(session, message(n + 1)[1])

    def resume(self, session: str) -> int:
        return len(self.db.on_agent_start("Helper", session, "bench-user"))

    def contents(self, session: str) -> list[str]:
        return [m.content for m in self.db.on_agent_start("Helper", session, "bench-user")]

    def close(self) -> None:
        self.db.close()


class Theirs:
    """One of PraisonAI's session stores, used as its Agent uses it."""

    def __init__(self, name: str, store: Any) -> None:
        self.name = name
        self.store = store

    def seed(self, session: str, size: int) -> None:
        history = [{"role": r, "content": c} for r, c in map(message, range(size))]
        self.store.set_chat_history(session, history)

    def turn(self, session: str, n: int) -> None:
        self.store.add_user_message(session, message(n)[1])
        self.store.add_assistant_message(session, message(n + 1)[1])

    def resume(self, session: str) -> int:
        history = self.store.get_working_history(session)
        self.store.set_agent_info(session, agent_name="Helper", user_id="bench-user")
        return len(history)

    def contents(self, session: str) -> list[str]:
        return [m["content"] for m in self.store.get_chat_history(session)]

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if callable(close):
            close()


def process_pair(folder: Path) -> tuple[list[Any], list[Any], dict[str, str]]:
    from praisonaiagents.session.store import DefaultSessionStore

    ours = [
        Ours("PraisonDb sqlite", f"sqlite://{folder}/ours.db?durability=process"),
        Ours("PraisonDb json", f"json://{folder}/ours-json?durability=process"),
    ]
    store = DefaultSessionStore(session_dir=str(folder / "praisonai-json"), retention="keep_all")
    theirs = [Theirs("DefaultSessionStore", store)]
    durability = {
        "PraisonDb sqlite": "WAL, synchronous=NORMAL (durability 'process')",
        "PraisonDb json": "temporary file renamed, no fsync (durability 'process')",
        "DefaultSessionStore": "temporary file renamed (os.replace), no fsync",
    }
    return ours, theirs, durability


def power_pair(folder: Path) -> tuple[list[Any], list[Any], dict[str, str]]:
    from praisonaiagents.session.sqlite_transcript_store import SqliteTranscriptStore

    ours = [Ours("PraisonDb sqlite", f"sqlite://{folder}/ours-power.db?durability=power")]
    store = SqliteTranscriptStore(
        session_dir=str(folder / "praisonai-sqlite"),
        db_path=str(folder / "praisonai-sqlite" / "sessions.db"),
        retention="keep_all",
    )
    conn = store._connect()  # its own connection: what it commits with
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[
        conn.execute("PRAGMA synchronous").fetchone()[0]
    ]
    theirs = [Theirs("SqliteTranscriptStore", store)]
    durability = {
        "PraisonDb sqlite": "WAL, synchronous=FULL (durability 'power')",
        "SqliteTranscriptStore": f"{mode.upper()}, synchronous={sync}",
    }
    sqlitedb = _praisonai_sqlitedb(folder)
    if sqlitedb is not None:
        theirs.append(sqlitedb)
        durability[sqlitedb.name] = "SQLite defaults"
    return ours, theirs, durability


def _praisonai_sqlitedb(folder: Path) -> Any:
    """PraisonAI's SQLiteDB adapter, as a DbAdapter like ours, when its package imports."""
    try:
        from praisonai.db.adapter import SQLiteDB  # type: ignore[import-not-found]
    except ImportError:
        return None

    class AsAdapter(Ours):
        def __init__(self) -> None:
            self.name = "SQLiteDB (praisonai)"
            self.db = SQLiteDB(path=str(folder / "praisonai-sqlitedb.db"))

        def seed(self, session: str, size: int) -> None:
            self.db.on_agent_start("Helper", session, "bench-user")
            for n in range(size):
                role, content = message(n)
                hook = self.db.on_user_message if role == "user" else self.db.on_agent_message
                hook(session, content)

    return AsAdapter()


# -- timing -----------------------------------------------------------------------------------


def interleaved(calls: dict[str, Callable[[], Any]], times: dict[str, list[float]], n: int) -> None:
    """``n`` calls of each, taking turns call by call, with the garbage collector off as
    ``timeit`` has it (collected after the batch): the stores share one process, and a
    collection walking one store's cached conversations would land in another's call."""
    gc.collect()
    gc.disable()
    try:
        for _ in range(n):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
    finally:
        gc.enable()


def bench_pair(ours: list[Any], theirs: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    everyone = [*ours, *theirs]
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[str, Any] = {s.name: {} for s in everyone}
    written = {(s.name, size): size for s in everyone for size in sizes}
    try:
        for store in everyone:
            for size in sizes:
                store.seed(f"{SESSION}-{size}", size)
        turns = {size: {s.name: [] for s in everyone} for size in sizes}
        resumes = {size: {s.name: [] for s in everyone} for size in sizes}
        alone = {size: {s.name: [] for s in ours} for size in sizes}

        def turner(store: Any, size: int) -> Callable[[], None]:
            def turn() -> None:
                store.turn(f"{SESSION}-{size}", written[store.name, size])
                written[store.name, size] += 2

            return turn

        def resumer(store: Any, size: int) -> Callable[[], int]:
            return lambda: store.resume(f"{SESSION}-{size}")

        for _ in range(args.rounds):  # ours alone, for flatness: no other store's writes
            for size in sizes:  # in the disk's queue (an fsync waits for them too)
                interleaved({s.name: turner(s, size) for s in ours}, alone[size], args.turns)
        for _ in range(args.rounds):
            for size in sizes:
                calls = {s.name: turner(s, size) for s in everyone}
                interleaved(calls, turns[size], args.turns)
                calls = {s.name: resumer(s, size) for s in everyone}
                interleaved(calls, resumes[size], args.resumes)
        for store in everyone:  # every message back, in order
            for size in sizes:
                expected = [message(n)[1] for n in range(written[store.name, size])]
                if store.contents(f"{SESSION}-{size}") != expected:
                    raise RuntimeError(f"{store.name}: the messages read back differ at {size}")
            figures = results[store.name]
            for size in sizes:
                figures[f"turn_{size}_us"] = statistics.median(turns[size][store.name]) * 1e6
                figures[f"resume_{size}_us"] = statistics.median(resumes[size][store.name]) * 1e6
                if store in ours:
                    figures[f"alone_{size}_us"] = statistics.median(alone[size][store.name]) * 1e6
    finally:
        for store in everyone:
            store.close()
    return results


def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": [int(s) for s in args.sizes.split(",")]}
    folder = Path(tempfile.mkdtemp(prefix="ps-bench-praisonai-"))
    home = os.environ.get("HOME")
    os.environ["HOME"] = str(folder / "home")  # PraisonAI writes ~/.praisonai: keep it here
    try:
        for label, pair in (("process", process_pair), ("power", power_pair)):
            ours, theirs, durability = pair(folder)
            results[label] = {"durability": durability, **bench_pair(ours, theirs, args)}
    finally:
        if home is not None:
            os.environ["HOME"] = home
        shutil.rmtree(folder, ignore_errors=True)
    return results


# -- report -----------------------------------------------------------------------------------


def report(results: dict[str, Any]) -> bool:
    sizes = results["sizes"]
    verdicts: list[tuple[str, str, bool]] = []
    for label in ("process", "power"):
        figures = results[label]
        print(f"\ndurability {label!r}:")
        for name, how in figures["durability"].items():
            print(f"  {name}: {how}")
        names = [n for n in figures if n != "durability"]
        ours = [n for n in names if n.startswith("PraisonDb")]
        theirs = [n for n in names if n not in ours]
        measures = [(f"turn @{size:,}", f"turn_{size}_us") for size in sizes] + [
            (f"resume @{size:,}", f"resume_{size}_us") for size in sizes
        ]
        print(f"  | measure | {' | '.join(f'{n} (µs)' for n in names)} | ratio |")
        print(f"  |---|{'---|' * len(names)}---|")
        for measure, field in measures:
            cells = " | ".join(f"{figures[n][field]:,.0f}" for n in names)
            ratios = [(o, t, figures[t][field] / figures[o][field]) for o in ours for t in theirs]
            shown = ", ".join(f"{r:.2f}x {t} / {o.split()[-1]}" for o, t, r in ratios)
            print(f"  | {measure} | {cells} | {shown} |")
            for o, t, ratio in ratios:
                verdicts.append(
                    (f"{label}: {measure}, {o} vs {t}", f"{ratio:.2f}x", ratio >= RATIO_TARGET)
                )
        for o in ours:
            alone = [figures[o][f"alone_{size}_us"] for size in sizes]
            shown = [f"{us:,.0f} µs @{size:,}" for us, size in zip(alone, sizes, strict=True)]
            print(f"  {o} alone, turn: {', '.join(shown)}")
            flat = alone[-1] / alone[0]
            verdicts.append(
                (f"{label}: {o} turn flat (alone), @{sizes[-1]:,} / @{sizes[0]:,}",
                 f"{flat:.2f}x", flat <= FLAT_TARGET)
            )  # fmt: skip
    print(f"\nTargets (ratio: their median / ours >= {RATIO_TARGET:g}; flat <= {FLAT_TARGET:g})")
    for verdict, value, passed in verdicts:
        print(f"  {verdict:72} {value:>8}  {'PASS' if passed else 'MISS'}")
    return all(passed for _, _, passed in verdicts)


#: Each option: its default, what it is, and its value in a --quick run (for the tests).
OPTIONS: dict[str, tuple[Any, str, Any]] = {
    "rounds": (5, "alternations of the stores", 2),
    "turns": (40, "turns timed per round and history size", 5),
    "resumes": (10, "resumes timed per round and history size", 3),
    "sizes": ("10,1000,10000", "history sizes (first,...,last)", "10,1000"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, (default, what, _) in OPTIONS.items():
        parser.add_argument(f"--{name}", type=type(default), default=default, help=what)
    parser.add_argument("--quick", action="store_true", help="a short run (for the tests)")
    parser.add_argument("--json", help="also write every figure to this file")
    args = parser.parse_args()
    for name, (_, _, quick) in OPTIONS.items() if args.quick else ():
        setattr(args, name, quick)
    print(f"Python {sys.version.split()[0]}, {args.rounds} rounds of {args.turns} turns and "
          f"{args.resumes} resumes per history size, per store")  # fmt: skip
    results = run(args)
    passed = report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print("every target met" if passed else "a target was missed (MISS above)")


if __name__ == "__main__":
    main()
