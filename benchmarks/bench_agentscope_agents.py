"""AgentScope's own ReActAgent saved per turn: AgentScope's sessions beside ours, one process.

Run from the repository root (AgentScope 1.0.21 comes with the ``interop`` extra)::

    .venv/bin/python benchmarks/bench_agentscope_agents.py [--quick]

A ReActAgent (its model constructed, never called) with an InMemoryMemory holding N messages
takes one turn at a time: one message added, the session saved; then a fresh agent loads it.
Timed, median of the turns, for the same agent and the same arguments on:

- AgentScope's ``JSONSession(save_dir)`` and ``RedisSession`` (the reference: ratio 1.00);
- ours with ``layout="agentscope"`` (AgentScope's own files and keys);
- ours in the native layout (JSON, SQLite, Redis), where such a module is one document.

Ratios are ours / AgentScope's on the same medium (JSON files or one Redis server), so below 1
is faster. Every load is checked against what was saved (a mismatch stops the run). Redis is
the test suite's ``redis-server`` on 127.0.0.1 (``tests/redis_server.py``), started and
stopped here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the redis-server helper of the test suite

from agentscope.agent import ReActAgent  # noqa: E402
from agentscope.formatter import DashScopeChatFormatter  # noqa: E402
from agentscope.memory import InMemoryMemory  # noqa: E402
from agentscope.message import Msg  # noqa: E402
from agentscope.model import DashScopeChatModel  # noqa: E402
from agentscope.session import JSONSession as TheirJSONSession  # noqa: E402
from agentscope.session import RedisSession as TheirRedisSession  # noqa: E402
from agentscope.tool import Toolkit  # noqa: E402

from praisonsession import JSONSession, RedisSession, SqliteSession  # noqa: E402
from redis_server import RedisServer  # noqa: E402


def agent() -> ReActAgent:
    return ReActAgent(
        name="Friday",
        sys_prompt="You're a assistant named Friday.",
        model=DashScopeChatModel(model_name="qwen-max", api_key="never-used"),
        formatter=DashScopeChatFormatter(),
        memory=InMemoryMemory(),
        toolkit=Toolkit(),
    )


def plain(state: Any) -> Any:
    return json.loads(json.dumps(state))


async def workload(make: Callable[[], Any], history: int, turns: int) -> tuple[float, float]:
    """Median seconds of one turn's save and of one load, at ``history`` messages."""
    session = make()
    friday = agent()
    messages = [Msg("user", f"message {i} about a trip to Kyoto", "user") for i in range(history)]
    friday.memory.load_state_dict(  # AgentScope's own format; add() would dedupe in O(n^2)
        {"_compressed_summary": "", "content": [[m.to_dict(), []] for m in messages]}
    )
    await session.save_session_state("s1", user_id="bob", agent=friday)
    saves, loads = [], []
    try:
        for turn in range(turns):
            await friday.memory.add(Msg("user", f"turn {turn}", "user"))
            started = time.perf_counter()
            await session.save_session_state("s1", user_id="bob", agent=friday)
            saves.append(time.perf_counter() - started)
            loaded = agent()
            started = time.perf_counter()
            await session.load_session_state("s1", user_id="bob", agent=loaded)
            loads.append(time.perf_counter() - started)
            if plain(loaded.state_dict()) != plain(friday.state_dict()):
                raise SystemExit(f"{type(session).__name__}: a load differs from the save")
    finally:
        close = getattr(session, "close", None)
        if close is not None:
            await close()
    return statistics.median(saves), statistics.median(loads)


def contenders(root: Path, host: str, port: int) -> list[tuple[str, str, Callable[[], Any]]]:
    """(medium, name, a new session) in table order; the first of each medium is the peer.
    Each has a key prefix of its own on the one Redis server."""
    json_dir = root / "agentscope-json"
    run = root.name
    return [
        ("json", "AgentScope JSONSession", lambda: TheirJSONSession(save_dir=str(json_dir))),
        ("json", "ours, layout=agentscope", lambda: JSONSession(json_dir, layout="agentscope")),
        ("json", "ours, native JSON", lambda: JSONSession(root / "native-json")),
        ("json", "ours, SQLite", lambda: SqliteSession(root / "native.db")),
        (
            "redis",
            "AgentScope RedisSession",
            lambda: TheirRedisSession(host=host, port=port, key_prefix=f"as{run}:"),
        ),
        (
            "redis",
            "ours, layout=agentscope",
            lambda: RedisSession(host=host, port=port, key_prefix=f"ol{run}:", layout="agentscope"),
        ),
        (
            "redis",
            "ours, native Redis",
            lambda: RedisSession(host=host, port=port, key_prefix=f"on{run}:"),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a correctness run")
    args = parser.parse_args()
    sizes, turns = ([10, 100], 3) if args.quick else ([10, 1000, 10000], 15)
    root = Path(tempfile.mkdtemp(prefix="ps-bench-agentscope-"))
    server = RedisServer().start()
    try:
        host, port = "127.0.0.1", int(server.url.rsplit(":", 1)[1].split("/")[0])
        rows = []
        for history in sizes:
            peer: dict[str, tuple[float, float]] = {}
            for medium, name, make in contenders(root / str(history), host, port):
                save, load = asyncio.run(workload(make, history, turns))
                base = peer.setdefault(medium, (save, load))
                rows.append((history, name, save, load, save / base[0], load / base[1]))
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"ReActAgent + InMemoryMemory, one turn saved then loaded; median of {turns} turns")
    print("| messages | session | save (ms) | load (ms) | save ratio | load ratio |")
    print("|---:|---|---:|---:|---:|---:|")
    for history, name, save, load, save_ratio, load_ratio in rows:
        print(
            f"| {history:,} | {name} | {save * 1000:.2f} | {load * 1000:.2f} "
            f"| {save_ratio:.2f} | {load_ratio:.2f} |"
        )


if __name__ == "__main__":
    logging.getLogger("as").setLevel(logging.WARNING)  # AgentScope logs every save and load
    main()
