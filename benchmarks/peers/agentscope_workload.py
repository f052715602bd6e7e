"""Peer benchmark: AgentScope 1.0.21 session save/load cost versus history size.

Runs in its own virtualenv, never in the project's:

    python3 -m venv /tmp/as1
    /tmp/as1/bin/pip install "agentscope==1.0.21" "mcp==1.16.0" "pydantic<2.12" \
        greenlet tqdm redis
    /tmp/as1/bin/python benchmarks/peers/agentscope_workload.py --sizes 10,1000,10000
    /tmp/as1/bin/python benchmarks/peers/agentscope_workload.py --backend redis \
        --redis-url redis://127.0.0.1:PORT/0

Workload, per history size N: an agent-like StateModule holds an InMemoryMemory pre-filled
with N messages; it is saved once (warm-up), then each turn adds one Msg and saves the whole
session again (only the save is timed: mean and median per turn). Finally the session is
loaded into a fresh agent (mean of 3 loads). Prints one JSON object on stdout; everything
else goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from importlib.metadata import version
from typing import Any
from urllib.parse import urlparse

with contextlib.redirect_stdout(sys.stderr):
    from agentscope.memory import InMemoryMemory
    from agentscope.message import Msg
    from agentscope.module import StateModule
    from agentscope.session import JSONSession, RedisSession, SessionBase

logging.getLogger("as").setLevel(logging.CRITICAL)

USER_ID = "bench"
LOAD_REPEATS = 3
BIG_SIZE = 10_000
BIG_SIZE_TURNS = 5


class BenchAgent(StateModule):
    """Minimal agent stand-in: its only state is its conversation memory."""

    def __init__(self) -> None:
        super().__init__()
        self.memory = InMemoryMemory()


def make_msg(i: int) -> Msg:
    role = "user" if i % 2 == 0 else "assistant"
    return Msg(name=role, content=f"message {i} about topic {i % 7}", role=role)


async def bench_size(session: SessionBase, size: int, turns: int) -> dict[str, Any]:
    session_id = f"size-{size}"
    agent = BenchAgent()
    await agent.memory.add([make_msg(i) for i in range(size)])
    await session.save_session_state(session_id=session_id, user_id=USER_ID, agent=agent)

    saves: list[float] = []
    for turn in range(turns):
        await agent.memory.add(make_msg(size + turn))
        start = time.perf_counter()
        await session.save_session_state(session_id=session_id, user_id=USER_ID, agent=agent)
        saves.append(time.perf_counter() - start)
    save_s = sum(saves)

    load_s = 0.0
    for _ in range(LOAD_REPEATS):
        fresh = BenchAgent()
        start = time.perf_counter()
        await session.load_session_state(session_id=session_id, user_id=USER_ID, agent=fresh)
        load_s += time.perf_counter() - start
        loaded = await fresh.memory.size()
        if loaded != size + turns:
            raise RuntimeError(f"loaded {loaded} messages, expected {size + turns}")

    return {
        "save_ms_per_turn": round(save_s * 1000 / turns, 3),
        "save_ms_median": round(statistics.median(saves) * 1000, 3),
        "load_ms": round(load_s * 1000 / LOAD_REPEATS, 3),
        "turns": turns,
    }


async def run_backend(backend: str, sizes: list[int], turns: int, redis_url: str) -> dict:
    results: dict[str, Any] = {}
    if backend == "json":
        save_dir = tempfile.mkdtemp(prefix="as-bench-")
        try:
            session = JSONSession(save_dir=save_dir)
            for size in sizes:
                n_turns = min(turns, BIG_SIZE_TURNS) if size >= BIG_SIZE else turns
                results[str(size)] = await bench_size(session, size, n_turns)
        finally:
            shutil.rmtree(save_dir, ignore_errors=True)
        return results

    url = urlparse(redis_url)
    prefix = f"as-bench-{uuid.uuid4().hex}:"
    redis_session = RedisSession(
        host=url.hostname or "127.0.0.1",
        port=url.port or 6379,
        db=int(url.path.lstrip("/") or 0),
        key_prefix=prefix,
    )
    client = redis_session.get_client()
    try:
        for size in sizes:
            n_turns = min(turns, BIG_SIZE_TURNS) if size >= BIG_SIZE else turns
            results[str(size)] = await bench_size(redis_session, size, n_turns)
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["json", "redis", "both"], default="json")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    backends = ["json", "redis"] if args.backend == "both" else [args.backend]

    with contextlib.redirect_stdout(sys.stderr):
        per_backend = {
            name: asyncio.run(run_backend(name, sizes, args.turns, args.redis_url))
            for name in backends
        }

    out: dict[str, Any] = {"peer": "agentscope", "version": version("agentscope")}
    if len(backends) == 1:
        out |= {"backend": backends[0], "results": per_backend[backends[0]]}
    else:
        out["backends"] = per_backend
    print(json.dumps(out))


if __name__ == "__main__":
    main()
