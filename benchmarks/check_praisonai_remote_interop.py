"""PraisonAI 1.7.17's remote ``Session`` against ``praisonsession serve``, and our client
against PraisonAI's own ``Agent.launch`` server, run against the real PraisonAI.

    .venv/bin/python benchmarks/check_praisonai_remote_interop.py

Needs PraisonAI: the ``interop`` extra installs it beside praisonsession (``make test``);
else its own virtualenv (``/tmp/praison`` or ``$PRAISONAI_PYTHON``, with fastapi and uvicorn
for its server; see ``benchmarks/README.md``). The LLM is the scripted
server on 127.0.0.1; it answers with every user message it was sent, so a reply shows which
conversation the agent saw. Conversation: alice says her name, bob says his, alice asks hers.

1. Their client, our server: alice's last request must hold alice's messages only, and the
   store must hold one history per session_id.
2. Our client, their server: chat works; their server keeps one conversation for everyone
   (alice's last request holds bob's message too) and no state, which our client reports.

Prints what each side saw and exits non-zero if (1) or (2) does not hold.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the server helper of the test suite

import requests  # noqa: E402

from praisonsession import RemoteRequestError, Session  # noqa: E402
from praisonsession.agents.agent import module_key  # noqa: E402
from praisonsession.llm.local_server import ScriptedChatServer  # noqa: E402
from remote_server import SessionServer, free_port  # noqa: E402

PEER = HERE / "peers" / "praisonai_remote.py"
# the interop extra installs it here; otherwise its own virtualenv
PYTHON = os.environ.get("PRAISONAI_PYTHON") or (
    sys.executable if importlib.util.find_spec("praisonaiagents") else "/tmp/praison/bin/python"
)
TURNS = [
    ["alice", "My name is Ada"],
    ["bob", "My name is Bob"],
    ["alice", "What is my name?"],
]


def seen(request: dict[str, Any]) -> str:
    """The reply: every user message of the request, in order."""
    users = [m["content"] for m in request["messages"] if m.get("role") == "user"]
    return "seen: " + " | ".join(users)


def peer(*args: str) -> dict[str, Any]:
    done = subprocess.run([PYTHON, str(PEER), *args], capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        sys.exit(f"PraisonAI failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout)


def their_client_our_server(llm: ScriptedChatServer) -> bool:
    with (
        tempfile.TemporaryDirectory(prefix="interop-") as folder,
        SessionServer(f"sqlite:///{folder}/sessions.db", llm_url=llm.url) as server,
    ):
        result = peer("client", server.agent_url, json.dumps(TURNS))
        replies = result["replies"]
        print(f"PraisonAI {result['version']} client -> praisonsession serve:")
        for (session_id, message), reply in zip(TURNS, replies, strict=True):
            print(f"  {session_id:>5}: {message!r:24} -> {reply!r}")
        histories = {
            session_id: Session(
                agent_url=server.agent_url, session_id=session_id, user_id="interop"
            ).read_messages(module_key("Assistant") + ".history")
            for session_id in ("alice", "bob")
        }
    users = {sid: [m["content"] for m in h if m["role"] == "user"] for sid, h in histories.items()}
    print(f"  stored user messages per session: {users}")
    ok = replies[2] == "seen: My name is Ada | What is my name?" and users == {
        "alice": ["My name is Ada", "What is my name?"],
        "bob": ["My name is Bob"],
    }
    print(f"  one history per session_id: {ok}")
    return ok


def our_client_their_server(llm: ScriptedChatServer) -> bool:
    port = free_port()
    with tempfile.TemporaryFile() as log:
        return _against_their_server(llm, port, log)


def _against_their_server(llm: ScriptedChatServer, port: int, log: Any) -> bool:
    process = subprocess.Popen(
        [PYTHON, str(PEER), "server", llm.url, str(port)], stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=1).ok:
                    break
            except requests.RequestException:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                sys.exit(f"PraisonAI's server did not start:\n{log.read().decode()[-3000:]}")
            time.sleep(0.2)
        url = f"127.0.0.1:{port}/agent"
        sessions = {sid: Session(agent_url=url, session_id=sid) for sid in ("alice", "bob")}
        replies = [sessions[sid].chat(message) for sid, message in TURNS]
        print("praisonsession client -> PraisonAI Agent.launch:")
        for (session_id, message), reply in zip(TURNS, replies, strict=True):
            print(f"  {session_id:>5}: {message!r:24} -> {reply!r}")
        try:
            sessions["alice"].get_state("anything")
            state = "answered (unexpected)"
        except RemoteRequestError as exc:
            state = f"RemoteRequestError: {str(exc)[:80]}..."
        print(f"  state call: {state}")
    finally:
        process.kill()
        process.wait(timeout=30)
    shared = replies[2] == "seen: My name is Ada | My name is Bob | What is my name?"
    print(
        f"  chat works: {all(r.startswith('seen: ') for r in replies)}; "
        f"one conversation shared by every session_id (what is lost): {shared}"
    )
    return shared and state.startswith("RemoteRequestError")


def main() -> int:
    if not Path(PYTHON).exists():
        print(f"PraisonAI is not installed at {PYTHON}; see benchmarks/README.md.")
        return 2
    with (
        ScriptedChatServer(seen) as llm,
        tempfile.TemporaryDirectory(prefix="praison-remote-") as home,
    ):
        os.environ["PRAISON_PEER_HOME"] = home  # the peers' (a killed one removes nothing)
        first = their_client_our_server(llm)
        second = our_client_their_server(llm)
    return 0 if first and second else 1


if __name__ == "__main__":
    sys.exit(main())
