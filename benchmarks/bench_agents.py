"""Per-turn overhead that praisonsession's agents add on top of the LLM call.

Run from the repository root::

    .venv/bin/python benchmarks/bench_agents.py [--timed 200] [--sizes 10,1000] [--json out.json]

Setup: a local ``ScriptedChatServer`` on 127.0.0.1 that answers instantly, a ``Session`` on a
SQLite store in a temporary directory, and one agent driven through the sync API
(``agent.chat``), the way a notebook uses it. For each history size the agent is first grown
to that many turns by real chats, then ``--timed`` more turns are timed one by one. Right after
each timed turn, the exact request body the agent sent is posted again with a bare
``requests.Session.post`` to the same server (same connection reuse, same server work): that is
the LLM call as a user without praisonsession would pay it. The overhead is the median of
the paired differences ``chat - bare post``: prompt building, JSON encoding, response parsing, the
retry wrapper and the store append of the turn.

``memory=False`` is used for those figures so that they measure the agent itself; the cost of
``memory=True`` (the session's real ``get_context``: an offline embedding plus a Chroma query)
is measured separately, as is loading a 1,000-turn agent in a new Session object.

Targets: under 5 ms per turn, and flat in history length (the 1,000-turn figure within 2x, or
within 1 ms, of the 10-turn one).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

from praisonsession import Session
from praisonsession.llm import ScriptedChatServer

TARGET_MS = 5.0
DURABILITY = "process"  # the default: a crash of the process loses no acknowledged turn


def ms(seconds: float) -> float:
    return seconds * 1000.0


def grow(agent: Any, turns: int) -> None:
    while agent.turns < turns:
        agent.chat(f"filler turn {agent.turns}")


def time_turns(agent: Any, server: ScriptedChatServer, timed: int) -> dict[str, float]:
    """Time ``timed`` turns and, after each, a bare post of the same request body."""
    bare = requests.Session()
    bare.headers.update({"Content-Type": "application/json"})
    chats: list[float] = []
    posts: list[float] = []
    handling: list[float] = []
    for i in range(timed):
        started = time.perf_counter()
        agent.chat(f"timed turn {i}")
        chats.append(time.perf_counter() - started)
        request = server.chat_requests[-1]
        handling.append(request.handling_seconds)
        body = json.dumps(request.body).encode()
        started = time.perf_counter()
        response = bare.post(f"{server.url}/chat/completions", data=body, timeout=30)
        response.json()
        posts.append(time.perf_counter() - started)
    bare.close()
    chat_ms = ms(statistics.median(chats))
    post_ms = ms(statistics.median(posts))
    return {
        "chat_ms": chat_ms,
        "chat_p90_ms": ms(sorted(chats)[int(0.9 * len(chats))]),
        "bare_post_ms": post_ms,
        "server_handling_ms": ms(statistics.median(handling)),
        # paired: each turn against the bare post right after it, so that load drifts cancel
        "overhead_ms": ms(statistics.median(c - p for c, p in zip(chats, posts, strict=True))),
        "messages_sent": len(server.chat_requests[-1].body["messages"]),
    }


def bench(sizes: list[int], timed: int, workdir: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": {}}
    store_url = f"sqlite://{workdir / 'sessions.db'}?durability={DURABILITY}"
    settings = {"data_dir": str(workdir / "data")}
    with ScriptedChatServer(lambda request: "ok") as server:
        llm = {"base_url": server.url, "model": "bench"}
        session = Session("bench", store=store_url, settings=settings)
        for size in sizes:  # one agent per size, grown to exactly that many turns
            agent = session.Agent(f"Bench {size}", memory=False, llm=llm)
            grow(agent, size)
            figures = time_turns(agent, server, timed)
            figures["history_turns"] = [size, agent.turns]
            results["sizes"][str(size)] = figures
            server.reset()

        started = time.perf_counter()
        reopened = Session("bench", store=store_url, settings=settings)
        loaded = reopened.Agent(f"Bench {sizes[-1]}", memory=False, llm=llm)
        results["load_ms"] = ms(time.perf_counter() - started)
        results["load_turns"] = loaded.turns

        remembering = session.Agent("Remembering", memory=True, llm=llm)
        session.add_memory("The user's cat is called Miso.")
        remembering.chat("warm up")  # loads the embedding model once per process
        started = time.perf_counter()
        for i in range(20):
            remembering.chat(f"What is my cat called? ({i})")
        results["memory_turn_ms"] = ms((time.perf_counter() - started) / 20)
        for s in (session, reopened):
            s.close()  # closes the agents' HTTP connections too
    return results


def report(results: dict[str, Any], timed: int) -> bool:
    print("praisonsession agents: per-turn overhead on top of the LLM call")
    print(
        f"(sync agent.chat, SQLite store at durability {DURABILITY!r} (synchronous=NORMAL), "
        f"local server answering instantly, {timed} turns each)"
    )
    print()
    header = (
        f"{'history (turns)':>17} {'msgs sent':>9} {'chat()':>9} {'p90':>8} {'bare post':>10} "
        f"{'server':>8} {'overhead':>9}"
    )
    print(header)
    for f in results["sizes"].values():
        start, end = f["history_turns"]
        print(
            f"{f'{start:,} -> {end:,}':>17} {f['messages_sent']:>9} {f['chat_ms']:>7.2f}ms "
            f"{f['chat_p90_ms']:>6.2f}ms {f['bare_post_ms']:>8.2f}ms "
            f"{f['server_handling_ms']:>6.2f}ms {f['overhead_ms']:>7.2f}ms"
        )
    print()
    print(
        f"load an agent with {results['load_turns']:,} turns in a new Session: "
        f"{results['load_ms']:.1f} ms"
    )
    print(
        "one turn with memory=True (real get_context: offline embedding + Chroma): "
        f"{results['memory_turn_ms']:.1f} ms"
    )
    overheads = [f["overhead_ms"] for f in results["sizes"].values()]
    small, large = overheads[0], overheads[-1]
    under = all(o < TARGET_MS for o in overheads)
    flat = large <= max(2 * small, small + 1.0)
    print()
    print(f"target overhead < {TARGET_MS:g} ms per turn: {'PASS' if under else 'MISS'}")
    print(
        f"target flat in history length ({large:.2f} ms vs {small:.2f} ms): "
        f"{'PASS' if flat else 'MISS'}"
    )
    return under and flat


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timed", type=int, default=200, help="turns timed per history size")
    parser.add_argument("--sizes", default="10,1000", help="history sizes, in turns")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="bench-agents-"))
    try:
        results = bench(sizes, args.timed, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ok = report(results, args.timed)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
