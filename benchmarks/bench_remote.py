"""Load benchmark for ``praisonsession serve``: many remote clients at once, every turn kept.

Run from the repository root::

    .venv/bin/python benchmarks/bench_remote.py [--clients 50] [--turns 20] [--json out.json]

For each store behind the server (``sqlite://`` and ``redis://``) it starts, on 127.0.0.1:

- a scripted chat-completions server whose every answer takes ``--llm-ms`` (20 ms), in a
  process of its own;
- ``python -m praisonsession serve`` (one process) hosting an agent over that store;
- ``--clients`` clients (threads spread over ``--processes`` processes, all released
  together), each a ``Session(agent_url=...)`` with a session of its own, chatting
  ``--turns`` turns.

It reports turns/s (all turns / (last end - first start)) and the p50 / p99 of the server's
own overhead per turn: the latency a client saw minus the LLM's fixed latency. Under load that
includes waiting for a CPU; the overhead of one client alone (``--baseline-turns`` turns, run
first) is printed too. Then it reads
every session back through the server and checks that all turns are there, in the order each
client sent them, each with its reply: a fast server that loses a turn is not a result.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the server helpers of the test suite

from praisonsession import Session  # noqa: E402
from praisonsession.agents.agent import module_key  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from remote_server import SessionServer  # noqa: E402

HISTORY = module_key("Assistant") + ".history"
LLM_SCRIPT = """
import sys, time
from praisonsession.llm.local_server import Reply, ScriptedChatServer
delay = float(sys.argv[1])
def answer(request):
    text = [m for m in request["messages"] if m.get("role") == "user"][-1]["content"]
    return Reply.text("You said: " + text, delay=delay)
with ScriptedChatServer(answer) as server:
    print(server.url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
"""


@contextmanager
def scripted_llm(delay: float) -> Iterator[str]:
    """The LLM stand-in in a process of its own, so it competes with nobody for our GIL."""
    process = subprocess.Popen(
        [sys.executable, "-c", LLM_SCRIPT, str(delay)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)


@contextmanager
def store_url(backend: str) -> Iterator[str]:
    if backend == "redis":
        server = RedisServer().start()
        try:
            yield server.url
        finally:
            server.stop()
    else:
        with tempfile.TemporaryDirectory(prefix="bench-remote-") as folder:
            yield f"sqlite:///{folder}/sessions.db"


def client_process(
    agent_url: str, go_file: str, first: int, count: int, turns: int, prefix: str
) -> None:
    """``count`` clients in threads; prints, per client, its (start, end) of each turn."""
    sessions = [
        Session(agent_url=agent_url, session_id=f"{prefix}-{first + i}", timeout=120)
        for i in range(count)
    ]
    results: dict[int, list[tuple[float, float]]] = {}
    failures: list[str] = []

    def run(index: int) -> None:
        session, spans = sessions[index], []
        try:
            for turn in range(turns):
                text = f"{prefix}-{first + index} turn {turn}"
                began = time.time()
                reply = session.chat(text)
                spans.append((began, time.time()))
                if reply != f"You said: {text}":
                    failures.append(f"{text!r} got {reply!r}")
        except Exception as exc:  # reported to the parent, which fails the run
            failures.append(f"{type(exc).__name__}: {exc}")
        results[first + index] = spans

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    print("ready", flush=True)
    while not os.path.exists(go_file):
        time.sleep(0.001)
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({"spans": results, "failures": failures}), flush=True)


def run_load(
    agent_url: str, clients: int, processes: int, turns: int, prefix: str
) -> dict[str, Any]:
    go_file = tempfile.mktemp(prefix="bench-remote-go-")
    per = [clients // processes + (1 if p < clients % processes else 0) for p in range(processes)]
    workers, first = [], 0
    for count in per:
        command = [sys.executable, __file__, "--worker", agent_url, go_file, str(first)]
        workers.append(
            subprocess.Popen(
                [*command, str(count), str(turns), prefix], stdout=subprocess.PIPE, text=True
            )
        )
        first += count
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    Path(go_file).touch()
    spans: dict[int, list[tuple[float, float]]] = {}
    failures: list[str] = []
    for worker in workers:
        out, _ = worker.communicate(timeout=900)
        data = json.loads(out.strip().splitlines()[-1])
        spans.update({int(k): v for k, v in data["spans"].items()})
        failures += data["failures"]
    os.unlink(go_file)
    return {"spans": spans, "failures": failures}


def check_histories(agent_url: str, clients: int, turns: int, prefix: str) -> tuple[int, list[str]]:
    """All turns of every client, in order, each answered: (turns found, problems)."""
    found, problems = 0, []
    for client in range(clients):
        session = Session(agent_url=agent_url, session_id=f"{prefix}-{client}")
        history = session.read_messages(HISTORY)
        users = [m["content"] for m in history if m["role"] == "user"]
        expected = [f"{prefix}-{client} turn {t}" for t in range(turns)]
        found += len(users)
        if users != expected:
            problems.append(f"client-{client}: {len(users)} turns, in order: {users == expected}")
        for user, reply in zip(history[::2], history[1::2], strict=False):
            if reply.get("content") != f"You said: {user.get('content')}":
                problems.append(f"client-{client}: {user.get('content')!r} has no reply")
    return found, problems


def bench(backend: str, args: argparse.Namespace) -> dict[str, Any]:
    llm_seconds = args.llm_ms / 1000
    with (
        scripted_llm(llm_seconds) as llm_url,
        store_url(backend) as url,
        SessionServer(url, llm_url=llm_url, args=("--log-level", "warning")) as server,
    ):
        alone = run_load(server.agent_url, 1, 1, args.baseline_turns, "alone")
        load = run_load(server.agent_url, args.clients, args.processes, args.turns, "client")
        found, problems = check_histories(server.agent_url, args.clients, args.turns, "client")
    spans = [span for client in load["spans"].values() for span in client]
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    overhead_ms = _overheads(spans, llm_seconds)
    alone_ms = _overheads([s for c in alone["spans"].values() for s in c], llm_seconds)
    return {
        "store": backend,
        "clients": args.clients,
        "turns_per_client": args.turns,
        "turns_acknowledged": len(spans),
        "turns_persisted_in_order": found if not problems else f"{found} (problems)",
        "problems": (load["failures"] + problems)[:10],
        "turns_per_s": round(len(spans) / wall, 1),
        "overhead_p50_ms": round(statistics.median(overhead_ms), 1),
        "overhead_p99_ms": round(overhead_ms[int(0.99 * (len(overhead_ms) - 1))], 1),
        "one_client_overhead_p50_ms": round(statistics.median(alone_ms), 1),
        "llm_ms": args.llm_ms,
        "ideal_turns_per_s": round(args.clients / llm_seconds, 1),
    }


def _overheads(spans: list[tuple[float, float]], llm_seconds: float) -> list[float]:
    return sorted((end - start - llm_seconds) * 1000 for start, end in spans)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--processes", type=int, default=5, help="client processes")
    parser.add_argument("--llm-ms", type=float, default=20.0, help="the LLM's fixed latency")
    parser.add_argument("--stores", default="sqlite,redis")
    parser.add_argument("--json", metavar="PATH", help="also write every figure here")
    parser.add_argument(
        "--baseline-turns", type=int, default=50, help="turns of one client alone, first"
    )
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        agent_url, go_file, first, count, turns, prefix = args.worker
        client_process(agent_url, go_file, int(first), int(count), int(turns), prefix)
        return 0

    print(
        f"praisonsession serve under load: {args.clients} clients x {args.turns} turns, "
        f"LLM {args.llm_ms:g} ms per answer, {os.cpu_count()} CPUs"
    )
    results, ok = [], True
    for backend in args.stores.split(","):
        result = bench(backend, args)
        results.append(result)
        total = args.clients * args.turns
        kept = result["turns_persisted_in_order"] == total and not result["problems"]
        ok = ok and kept
        print(
            f"  {backend:>6}: {result['turns_per_s']:7.1f} turns/s  "
            f"overhead p50 {result['overhead_p50_ms']:6.1f} ms  "
            f"p99 {result['overhead_p99_ms']:6.1f} ms  "
            f"persisted in order: {result['turns_persisted_in_order']}/{total} "
            f"{'PASS' if kept else 'MISS'}"
        )
        for problem in result["problems"]:
            print(f"          {problem}")
    alone = ", ".join(f"{r['store']} {r['one_client_overhead_p50_ms']:g} ms" for r in results)
    print(
        f"  (overhead = a client's latency minus the LLM's {args.llm_ms:g} ms; the ideal with "
        f"no overhead is {results[0]['ideal_turns_per_s']:g} turns/s; one client alone: "
        f"overhead p50 {alone})"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
