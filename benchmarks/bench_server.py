"""``praisonsession serve`` beside the bare stack it runs on, in one run: store operations, chat
turns, growth with history, and the client side.

Run from the repository root::

    .venv/bin/python benchmarks/bench_server.py [--seconds 3] [--rounds 3] [--quick]

It starts, each in a process of its own on 127.0.0.1:

- an OpenAI-compatible chat-completions stand-in that answers at once (asyncio, uvloop);
- ``python -m praisonsession serve`` over SQLite (one uvicorn worker with uvloop and httptools,
  as ``serve`` runs), hosting an agent with ``memory=False`` at ``/agent``, one with memory on
  at ``/memory`` (its users have no memories), and the same at ``/full`` for a user holding
  1,000 memories and 100 knowledge chunks;
- a bare Starlette app under the same uvicorn: ``/incr`` (the same SQLite increment in one
  statement, WAL, synchronous=NORMAL as our store), ``/json`` (reads the body, answers JSON:
  the HTTP limit) and ``/chat`` (the same LLM call in a thread, nothing stored).

A raw-socket keep-alive client drives each route with 16 concurrent connections for
``--seconds``, the routes interleaved, ``--rounds`` times; the median is reported with the
server's CPU per request (from /proc) and the ratios. Every acknowledged increment must be in
the store (both servers), every reply must be the LLM's answer, every turn must be in the
history: a fast wrong answer stops the benchmark. Then, one client at a time: the per-turn
cost of the server and of ``Agent.chat`` at 10, 1,000 and 10,000 turns of history; the stages
of a turn with 1,000 memories and 100 knowledge chunks; our remote client beside a plain
keep-alive ``requests.Session`` on the same store route.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from praisonsession import Session  # noqa: E402
from praisonsession.agents.agent import module_key  # noqa: E402
from praisonsession.agents.spec import AgentSpec  # noqa: E402

HISTORY = module_key("Assistant") + ".history"
CLIENTS = 16
#: The agents' history_window (AgentSpec's default): the bare chat route sends as many turns.
WINDOW_TURNS = AgentSpec("Assistant").history_window or 20

LLM_SCRIPT = r"""
import asyncio, json, sys
try:
    import uvloop
    uvloop.install()
except ImportError:
    pass

class Chat(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""

    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = 0
            for line in self.buffer[:end].split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            request = json.loads(body)
            said = [m for m in request["messages"] if m.get("role") == "user"][-1]["content"]
            answer = json.dumps({
                "id": "c", "object": "chat.completion", "created": 0, "model": request["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "You said: " + said}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()
            self.transport.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                % (len(answer), answer)
            )

async def main():
    server = await asyncio.get_running_loop().create_server(Chat, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""

BARE_SCRIPT = r"""
import asyncio, json, sqlite3, sys, threading
import requests, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

port, path, llm = int(sys.argv[1]), sys.argv[2], sys.argv[3]
WINDOW = int(sys.argv[4])  # messages of history sent with each turn, as the agent's window
db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE TABLE IF NOT EXISTS kv (user_id TEXT, session_id TEXT, name TEXT, "
           "value INTEGER, PRIMARY KEY (user_id, session_id, name))")
db.execute("CREATE TABLE IF NOT EXISTS messages (user_id TEXT, session_id TEXT, seq INTEGER, "
           "role TEXT, content TEXT, PRIMARY KEY (user_id, session_id, seq))")
INCREMENT = ("INSERT INTO kv VALUES (?,?,?,?) ON CONFLICT DO UPDATE SET "
             "value=value+excluded.value RETURNING value")
RECENT = ("SELECT seq, role, content FROM messages WHERE user_id=? AND session_id=? "
          "ORDER BY seq DESC LIMIT ?")

async def incr(request):
    body = json.loads(await request.body())
    row = (body["user_id"], body["session_id"], body["name"], body["amount"])
    return JSONResponse({"result": db.execute(INCREMENT, row).fetchone()[0]})

async def plain(request):
    json.loads(await request.body())
    return JSONResponse({"result": 1})

local = threading.local()

def complete(messages):
    http = getattr(local, "http", None)
    if http is None:
        http = local.http = requests.Session()
    body = {"model": "bench", "messages": messages}
    answer = http.post(llm + "/chat/completions", json=body, timeout=30)
    return answer.json()["choices"][0]["message"]["content"]

async def chat(request):
    body = json.loads(await request.body())
    user, session, query = body["user_id"], body["session_id"], body["query"]
    recent = db.execute(RECENT, (user, session, WINDOW)).fetchall()[::-1]
    messages = [{"role": "system", "content": "You are Assistant."}]
    messages += [{"role": role, "content": content} for _, role, content in recent]
    messages.append({"role": "user", "content": query})
    reply = await asyncio.to_thread(complete, messages)
    seq = recent[-1][0] + 1 if recent else 0
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT INTO messages VALUES (?,?,?,?,?)",
                   [(user, session, seq, "user", query),
                    (user, session, seq + 1, "assistant", reply)])
    db.execute("COMMIT")
    return JSONResponse({"response": reply, "session_id": session, "user_id": user})

app = Starlette(routes=[Route("/incr", incr, methods=["POST"]),
                        Route("/json", plain, methods=["POST"]),
                        Route("/chat", chat, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", loop="uvloop",
            http="httptools")
"""

AGENTS_MODULE = """
import os

def _llm():
    return {"base_url": os.environ["BENCH_LLM_URL"], "model": "bench"}

def memory_off(session):
    return session.Agent(name="Assistant", memory=False, llm=_llm())

def memory_on(session):
    return session.Agent(name="Assistant", llm=_llm())
"""


# -- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen[Any], log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"a server exited: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise SystemExit(f"a server did not start: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def process(command: list[str], port: int, workdir: Path, env: dict[str, str], name: str):
    log = workdir / f"{name}.log"
    with open(log, "wb") as out:
        child = subprocess.Popen(command, cwd=workdir, env=env, stdout=out, stderr=out)
    try:
        wait_for_port(port, child, log)
        yield child
    finally:
        child.terminate()
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@contextlib.contextmanager
def llm_stand_in() -> Iterator[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", LLM_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        yield f"http://127.0.0.1:{child.stdout.readline().strip()}/v1"
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=20)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the raw-socket client ------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection that sends prepared requests."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def request(self, data: bytes) -> tuple[int, bytes]:
        self.sock.sendall(data)
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(rest) < length:
            self.buffer = rest
            self._more()
            rest = self.buffer
        self.buffer = rest[length:]
        return status, rest[:length]

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def post(path: str, body: dict[str, Any], token: str | None = None) -> bytes:
    data = json.dumps(body).encode()
    auth = f"authorization: Bearer {token}\r\n".encode() if token else b""
    return (
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\n".encode()
        + auth
        + b"\r\n"
        + data
    )


Check = Callable[[int, dict[str, Any]], None]


def load(
    port: int,
    pid: int,
    requests_for: Callable[[int], bytes | Callable[[int], bytes]],
    check: Check,
    seconds: float,
    clients: int = CLIENTS,
) -> tuple[float, float, list[int]]:
    """(requests/s, server CPU µs per request, acknowledged per client) for ``clients``
    connections sending as fast as they are answered."""
    counts = [0] * clients
    failures: list[str] = []
    start = threading.Barrier(clients + 1)
    stop = threading.Event()

    def run(index: int) -> None:
        connection = Connection(port)
        data = requests_for(index)
        try:
            start.wait()
            while not stop.is_set():
                sent = data(counts[index]) if callable(data) else data
                status, body = connection.request(sent)
                check(status, json.loads(body))
                counts[index] += 1
        except Exception as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
            stop.set()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    cpu, began = cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    took, used = time.perf_counter() - began, cpu_seconds(pid) - cpu
    if failures:
        raise SystemExit(f"a request failed: {failures[0]}")
    done = sum(counts)
    return done / took, used / max(done, 1) * 1e6, counts


def expect(key: str, value: Any) -> Check:
    def check(status: int, body: dict[str, Any]) -> None:
        if status != 200 or (value is not None and body.get(key) != value):
            raise AssertionError(f"HTTP {status}: {body}")

    return check


def counted() -> tuple[Check, list[int]]:
    """A check for increments: each answer must be a number (the totals are checked after)."""
    seen = [0]

    def check(status: int, body: dict[str, Any]) -> None:
        if status != 200 or not isinstance(body.get("result"), int):
            raise AssertionError(f"HTTP {status}: {body}")
        seen[0] += 1

    return check, seen


# -- the measures ---------------------------------------------------------------------------


def fill_memories(store_url: str, data_dir: Path, memories: int, chunks: int) -> None:
    """The user ``full``: ``memories`` long-term memories and ``chunks`` knowledge chunks."""
    os.environ["PRAISONSESSION_DATA_DIR"] = str(data_dir)
    with Session("setup", "full", store=store_url, memory_config={"progress": False}) as s:
        s.add_memories(
            [
                f"Fact {i}: the user's item number {i} is a {['red', 'blue'][i % 2]} box."
                for i in range(memories)
            ]
        )
        for i in range(chunks):
            s.add_knowledge(
                f"Handbook section {i}. Boxes of kind {i} ship within {i % 7 + 1} days."
            )


def fill_history(store_url: str, user: str, session_id: str, turns: int) -> None:
    with Session(session_id, user, store=store_url) as s:
        messages: list[dict[str, Any]] = []
        for turn in range(turns):
            messages += [
                {"role": "user", "content": f"old question {turn}"},
                {"role": "assistant", "content": f"You said: old question {turn}"},
            ]
        for start in range(0, len(messages), 5000):
            s.append_messages(HISTORY, messages[start : start + 5000])


def per_request_us(port: int, requests: list[bytes], check: Check) -> float:
    """Median latency (µs) of ``requests`` sent one after another on one connection."""
    connection = Connection(port)
    try:
        times = []
        for data in requests:
            began = time.perf_counter()
            status, body = connection.request(data)
            times.append(time.perf_counter() - began)
            check(status, json.loads(body))
        return statistics.median(times) * 1e6
    finally:
        connection.close()


def chat_body(query: str, session_id: str, user: str) -> dict[str, Any]:
    return {"query": query, "session_id": session_id, "user_id": user}


def reply_to(query: str) -> Check:
    return expect("response", "You said: " + query)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small and short: checks only")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 0.4, 1
    memories, chunks = (40, 5) if args.quick else (1000, 100)
    history_sizes = (10, 100, 300) if args.quick else (10, 1000, 10000)
    growth_turns = 20 if args.quick else 200

    with tempfile.TemporaryDirectory(prefix="bench-server-") as folder:  # removed at the end
        workdir = Path(folder)
        (workdir / "bench_server_agents.py").write_text(AGENTS_MODULE)
        (workdir / "bare.py").write_text(BARE_SCRIPT)
        ours_url = f"sqlite:///{workdir / 'ours.db'}"
        data_dir = workdir / "data"
        fill_memories(ours_url, data_dir, memories, chunks)
        for size in history_sizes:
            fill_history(ours_url, "growth", f"h{size}", size)

        with llm_stand_in() as llm_url:
            env = dict(os.environ)
            env.update(
                BENCH_LLM_URL=llm_url,
                NO_PROXY="127.0.0.1",
                PRAISONSESSION_DATA_DIR=str(data_dir),
                PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]),
            )
            env.pop("PRAISONSESSION_REMOTE_TOKEN", None)
            ours_port, bare_port = free_port(), free_port()
            serve = [sys.executable, "-m", "praisonsession", "serve", "--store", ours_url]
            serve += ["--agent", "/agent=bench_server_agents:memory_off"]
            serve += ["--agent", "/memory=bench_server_agents:memory_on"]
            serve += ["--agent", "/full=bench_server_agents:memory_on"]
            serve += ["--port", str(ours_port), "--log-level", "warning"]
            bare = [sys.executable, "bare.py", str(bare_port), str(workdir / "bare.db"), llm_url]
            bare.append(str(2 * WINDOW_TURNS))
            with (
                process(serve, ours_port, workdir, env, "ours") as ours,
                process(bare, bare_port, workdir, env, "bare") as plain,
            ):
                results = measure(args, ours_port, ours.pid, bare_port, plain.pid, workdir)
                results["growth_server"] = server_growth(ours_port, history_sizes, growth_turns)
                results["full_one_client_us"] = per_request_us(
                    ours_port,
                    [post("/full", chat_body("what colour is box 7?", "one", "full"))]
                    * growth_turns,
                    expect("session_id", "one"),
                )
                results["client"] = client_side(ours_port, 100 if not args.quick else 20)
            results["growth_agent"] = agent_growth(workdir, llm_url, history_sizes, growth_turns)
            results["stages"] = stages(ours_url, data_dir, llm_url, 5 if args.quick else 50)
    report(results, args, memories, chunks)


def measure(
    args: argparse.Namespace,
    ours_port: int,
    ours_pid: int,
    bare_port: int,
    bare_pid: int,
    workdir: Path,
) -> dict[str, Any]:
    inc_ours, seen_ours = counted()
    inc_bare, seen_bare = counted()
    acknowledged: dict[str, list[int]] = {"ours": [0] * CLIENTS, "bare": [0] * CLIENTS}
    targets: dict[str, tuple[int, int, Callable[[int], Any], Check]] = {
        "increment, ours": (
            ours_port,
            ours_pid,
            lambda i: post(
                "/agent/store/increment",
                {"user_id": "bench", "session_id": f"s{i}", "name": "n", "amount": 1},
            ),
            inc_ours,
        ),
        "increment, bare Starlette": (
            bare_port,
            bare_pid,
            lambda i: post(
                "/incr", {"user_id": "bench", "session_id": f"s{i}", "name": "n", "amount": 1}
            ),
            inc_bare,
        ),
        "JSON route, bare Starlette": (
            bare_port,
            bare_pid,
            lambda i: post("/json", {"user_id": "bench", "session_id": f"s{i}"}),
            expect("result", 1),
        ),
        "chat, memory=False, ours": (
            ours_port,
            ours_pid,
            lambda i: post("/agent", chat_body("hi", f"c{i}", "bench")),
            reply_to("hi"),
        ),
        "chat, memory on and empty, ours": (
            ours_port,
            ours_pid,
            lambda i: post("/memory", chat_body("hi", f"m{i}", "empty")),
            reply_to("hi"),
        ),
        "chat, memory on and empty, 10-turn sessions, ours": (
            ours_port,
            ours_pid,
            lambda i: lambda n: post("/memory", chat_body("hi", f"n{i}-{n // 10}", "empty")),
            reply_to("hi"),
        ),
        "chat, bare Starlette": (
            bare_port,
            bare_pid,
            lambda i: post("/chat", chat_body("hi", f"c{i}", "bench")),
            reply_to("hi"),
        ),
        "chat, 1,000 memories + 100 chunks, ours": (
            ours_port,
            ours_pid,
            lambda i: post("/full", chat_body("what colour is box 7?", f"f{i}", "full")),
            reply_to("what colour is box 7?"),
        ),
    }
    # warm up: agents made, memory opened, connections pooled
    for _name, (port, pid, make, check) in targets.items():
        load(port, pid, make, check, 0.3)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in targets}
    for _ in range(args.rounds):
        for name, (port, pid, make, check) in targets.items():
            rate, cpu, counts = load(port, pid, make, check, args.seconds)
            runs[name].append((rate, cpu))
            if name.startswith("increment"):
                side = "ours" if name.endswith("ours") else "bare"
                acknowledged[side] = [
                    a + b for a, b in zip(acknowledged[side], counts, strict=True)
                ]
    check_counts(ours_port, workdir, acknowledged, seen_ours[0], seen_bare[0])
    check_turns(ours_port)
    check_bare_turns(workdir)
    return {"runs": runs}


def check_counts(
    ours_port: int, workdir: Path, acknowledged: dict[str, list[int]], ours: int, bare: int
) -> None:
    """Every acknowledged increment is in the store (warm-up ones included), on both sides."""
    import sqlite3

    connection = Connection(ours_port)
    stored_ours = 0
    for i in range(CLIENTS):
        body = {"user_id": "bench", "session_id": f"s{i}", "names": ["n"]}
        status, answer = connection.request(post("/agent/store/get_state", body))
        assert status == 200, answer
        stored_ours += json.loads(answer)["result"].get("n", 0)
    connection.close()
    with contextlib.closing(sqlite3.connect(workdir / "bare.db")) as db:
        stored_bare = db.execute("SELECT COALESCE(SUM(value), 0) FROM kv").fetchone()[0]
    if stored_ours != ours or stored_bare != bare:
        raise SystemExit(
            f"increments lost or doubled: ours {stored_ours} stored of {ours} acknowledged, "
            f"bare {stored_bare} of {bare}"
        )


def check_turns(ours_port: int) -> None:
    """Each session's history holds whole turns, each answered."""
    connection = Connection(ours_port)
    try:
        for prefix, user in (("c", "bench"), ("m", "empty")):
            for i in range(CLIENTS):
                body = {"user_id": user, "session_id": f"{prefix}{i}", "path": HISTORY}
                status, answer = connection.request(post("/agent/store/read_log", body))
                history = json.loads(answer)["result"]
                if status != 200 or not history or len(history) % 2:
                    raise SystemExit(f"session {prefix}{i}: a broken history ({len(history)})")
                for asked, said in zip(history[::2], history[1::2], strict=True):
                    if said["content"] != "You said: " + asked["content"]:
                        raise SystemExit(f"session {prefix}{i}: a turn without its answer")
    finally:
        connection.close()


def check_bare_turns(workdir: Path) -> None:
    """The bare route stored whole turns too, each answered, with no gap in a session."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(workdir / "bare.db")) as db:
        for i in range(CLIENTS):
            rows = db.execute(
                "SELECT seq, role, content FROM messages WHERE user_id='bench' AND "
                "session_id=? ORDER BY seq",
                (f"c{i}",),
            ).fetchall()
            if not rows or len(rows) % 2 or [r[0] for r in rows] != list(range(len(rows))):
                raise SystemExit(f"bare session c{i}: a broken history ({len(rows)})")
            for asked, said in zip(rows[::2], rows[1::2], strict=True):
                if asked[1] != "user" or said[2] != "You said: " + asked[2]:
                    raise SystemExit(f"bare session c{i}: a turn without its answer")


def client_side(port: int, calls: int, rounds: int = 5) -> dict[str, float]:
    """Per-call µs (median latency, then the median over ``rounds`` interleaved rounds) and
    client CPU µs: our remote client, then a plain keep-alive requests.Session, same route."""
    import requests

    url = f"http://127.0.0.1:{port}/agent"
    ours = Session(agent_url=url, session_id="client", user_id="bench")
    http = requests.Session()
    body = {"user_id": "bench", "session_id": "client", "name": "n", "amount": 1, "default": 0}

    def with_ours() -> None:
        ours.increment_state("n")

    def with_requests() -> None:
        answer = http.post(url + "/store/increment", json=body)
        if answer.status_code != 200 or not isinstance(answer.json()["result"], int):
            raise SystemExit(f"plain client: {answer.text}")

    found: dict[str, list[float]] = {}
    with_ours()  # connected and warm
    with_requests()
    for _ in range(rounds):
        for name, call in (("ours", with_ours), ("plain", with_requests)):
            times = []
            cpu = time.process_time()
            for _ in range(calls):
                began = time.perf_counter()
                call()
                times.append(time.perf_counter() - began)
            found.setdefault(f"{name}_wall", []).append(statistics.median(times))
            found.setdefault(f"{name}_cpu", []).append((time.process_time() - cpu) / calls)
    ours.close()
    http.close()
    final = Session(agent_url=url, session_id="client", user_id="bench").get_state("n")
    if final != 2 * (rounds * calls + 1):
        raise SystemExit(f"client increments: {final} stored of {2 * (rounds * calls + 1)}")
    return {name: statistics.median(values) * 1e6 for name, values in found.items()}


def server_growth(port: int, sizes: tuple[int, ...], turns: int) -> dict[int, float]:
    """Median µs of a turn through the server at each history size, one client; the sizes
    take turns (one request each, round after round), so the machine's load moves them alike."""
    connections = {size: Connection(port) for size in sizes}
    times: dict[int, list[float]] = {size: [] for size in sizes}
    try:
        for i in range(-1, turns):  # -1: the first turn of each (loads the history) untimed
            for size in sizes:
                query = f"q{i}"
                began = time.perf_counter()
                status, body = connections[size].request(
                    post("/agent", chat_body(query, f"h{size}", "growth"))
                )
                took = time.perf_counter() - began
                reply_to(query)(status, json.loads(body))
                if i >= 0:
                    times[size].append(took)
    finally:
        for connection in connections.values():
            connection.close()
    return {size: statistics.median(values) * 1e6 for size, values in times.items()}


def agent_growth(
    workdir: Path, llm_url: str, sizes: tuple[int, ...], turns: int
) -> dict[int, float]:
    """Median µs of ``Agent.chat`` at each history size (memory=False, a local SQLite store),
    the sizes taking turns as in ``server_growth``."""
    url = f"sqlite:///{workdir / 'agent.db'}"
    times: dict[int, list[float]] = {size: [] for size in sizes}
    with contextlib.ExitStack() as stack:
        agents = {}
        for size in sizes:
            fill_history(url, "growth", f"a{size}", size)
            s = stack.enter_context(Session(f"a{size}", "growth", store=url))
            agents[size] = s.Agent(
                name="Assistant", memory=False, llm={"base_url": llm_url, "model": "bench"}
            )
            agents[size].chat("warm up")
        for i in range(turns):
            for size, agent in agents.items():
                began = time.perf_counter()
                reply = agent.chat(f"q{i}")
                times[size].append(time.perf_counter() - began)
                if reply != f"You said: q{i}":
                    raise SystemExit(f"Agent.chat answered {reply!r}")
        for size, agent in agents.items():
            if len(agent.history) != 2 * (size + turns + 1):
                raise SystemExit(f"history {len(agent.history)}, not {2 * (size + turns + 1)}")
    return {size: statistics.median(values) * 1e6 for size, values in times.items()}


def stages(store_url: str, data_dir: Path, llm_url: str, repeat: int) -> dict[str, float]:
    """Median µs of the stages of a turn of the user with memories and knowledge."""
    from praisonsession.recall import default_embedder

    os.environ["PRAISONSESSION_DATA_DIR"] = str(data_dir)
    query = "what colour is box 7?"
    found: dict[str, list[float]] = {}

    def timed(name: str, call: Callable[[], Any]) -> Any:
        began = time.perf_counter()
        result = call()
        found.setdefault(name, []).append(time.perf_counter() - began)
        return result

    embedder = default_embedder("minilm")
    with Session("stages", "full", store=store_url) as s:
        agent = s.Agent(name="Assistant", llm={"base_url": llm_url, "model": "bench"})
        agent.chat("warm up")
        s.get_context(query)
        for _ in range(repeat):
            timed("embed the query (ONNX)", lambda: embedder.embed_query(query))
            hits = timed("search memory (embed + Chroma)", lambda: s.search_memory(query, limit=3))
            timed("search knowledge (embed + Chroma)", lambda: s.search_knowledge(query, limit=3))
            context = timed("get_context (embed once, 3 searches)", lambda: s.get_context(query))
            timed("whole turn, Agent.chat", lambda: agent.chat(query))
        if not hits or "box" not in context:
            raise SystemExit(f"memory search found nothing: {hits!r} {context!r}")
    return {name: statistics.median(times) * 1e6 for name, times in found.items()}


# -- the report -----------------------------------------------------------------------------


def report(results: dict[str, Any], args: argparse.Namespace, memories: int, chunks: int) -> None:
    runs = results["runs"]
    median = {name: statistics.median(r for r, _ in values) for name, values in runs.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in runs.items()}
    print(
        f"bench_server: {CLIENTS} keep-alive raw-socket clients, 1 uvicorn worker (uvloop, "
        f"httptools), {args.rounds} interleaved rounds of {args.seconds:g} s, median\n"
    )
    print(SIDES)
    print("| route | requests/s | spread over rounds | server CPU µs/request | ratio | target |")
    print("|---|---|---|---|---|---|")
    rows = [
        ("increment, ours", "increment, bare Starlette", 0.8),
        ("increment, bare Starlette", None, None),
        ("JSON route, bare Starlette", None, None),
        ("chat, memory=False, ours", "chat, bare Starlette", 0.8),
        ("chat, memory on and empty, ours", "chat, bare Starlette", 0.6),
        (
            "chat, memory on and empty, 10-turn sessions, ours",
            "chat, bare Starlette",
            0.6,
        ),
        ("chat, 1,000 memories + 100 chunks, ours", "chat, bare Starlette", None),
        ("chat, bare Starlette", None, None),
    ]
    for name, versus, target in rows:
        shown = name.replace("1,000", f"{memories:,}").replace("100 chunks", f"{chunks} chunks")
        ratio = f"{median[name] / median[versus]:.2f} of {versus}" if versus else ""
        goal = f">= {target} {verdict(median[name] / median[versus] >= target)}" if target else ""
        rates = [r for r, _ in runs[name]]
        spread = f"{min(rates):,.0f}-{max(rates):,.0f} (±{spread_of(rates):.0%})"
        print(f"| {shown} | {median[name]:,.0f} | {spread} | {cpu[name]:,.0f} | {ratio} | {goal} |")
    json_ratio = median["increment, ours"] / median["JSON route, bare Starlette"]
    print(f"\nincrement through serve / bare JSON route: {json_ratio:.2f}")

    print("\n| history (turns) | server, µs/turn (1 client) | Agent.chat, µs/turn |")
    print("|---|---|---|")
    for size in results["growth_server"]:
        print(
            f"| {size:,} | {results['growth_server'][size]:,.0f} | "
            f"{results['growth_agent'][size]:,.0f} |"
        )
    for label, key in (("server", "growth_server"), ("Agent.chat", "growth_agent")):
        values = list(results[key].values())
        growth = values[-1] / values[0]
        print(
            f"{label}: largest / smallest history = {growth:.2f} (target <= 1.5 "
            f"{verdict(growth <= 1.5)})"
        )

    print(f"\nA turn of the user with {memories:,} memories and {chunks} knowledge chunks:")
    print(f"- through the server, one client: {results['full_one_client_us']:,.0f} µs/turn")
    for name, value in results["stages"].items():
        print(f"- {name}: {value:,.0f} µs")

    client = results["client"]
    print(
        "\n| client, one increment_state on the same route | µs/call (median) "
        "| client CPU µs/call |"
    )
    print("|---|---|---|")
    print(f"| Session(agent_url=...) | {client['ours_wall']:,.0f} | {client['ours_cpu']:,.0f} |")
    print(f"| requests.Session | {client['plain_wall']:,.0f} | {client['plain_cpu']:,.0f} |")
    wall = client["ours_wall"] / client["plain_wall"]
    print(
        f"ours / requests: wall {wall:.2f}, client CPU "
        f"{client['ours_cpu'] / client['plain_cpu']:.2f} (target <= 1.3 {verdict(wall <= 1.3)})"
    )


def spread_of(values: list[float]) -> float:
    """Half the range over the median: how far a round strays from the figure shown."""
    return (max(values) - min(values)) / 2 / statistics.median(values)


SIDES = f"""Each chat turn: the LLM stand-in answers at once, so the server is the bottleneck.
- ours: serve's agent loads the session's new messages, assembles the request within its
  context budget (the last {WINDOW_TURNS} turns; then a running summary, compacted by one LLM
  call every 8 turns that leave the window), calls the LLM, appends the user and assistant
  messages to the session's SQLite store. memory=False: nothing else. Memory on: the user's
  long-term memories and knowledge are looked up (skipped while the user has none), and turns
  that left the window are recalled by meaning (the query and each turn embedded once, the
  turns in batches). Each client keeps one session all run long, so its sessions outgrow the
  window and recall runs; with 10-turn sessions (a new one every 10 turns, opened by the
  server on its first turn) nothing has left the window and nothing is embedded.
- bare: a Starlette route reads the session's last {2 * WINDOW_TURNS} messages from SQLite (one
  SELECT), calls the LLM with them in a thread (requests), and inserts the user and assistant
  messages (one transaction). No budget, no summary, no memory.
Increments: serve's store route against one SQLite UPSERT in a bare route.
"""


def verdict(met: bool) -> str:
    return "PASS" if met else "MISS"


if __name__ == "__main__":
    main()
