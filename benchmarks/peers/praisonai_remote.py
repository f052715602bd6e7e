"""Peer: PraisonAI 1.7.17's own remote session client and agent server, fully offline.

Runs in PraisonAI's virtualenv, never in the project's (``benchmarks/README.md``)::

    /tmp/praison/bin/python benchmarks/peers/praisonai_remote.py client AGENT_URL TURNS_JSON
    /tmp/praison/bin/python benchmarks/peers/praisonai_remote.py server LLM_BASE_URL PORT

``client`` chats through ``praisonaiagents.Session(agent_url=..., session_id=...)``, one new
``Session`` object per turn (as separate programs would), for each ``[session_id, message]``
pair of TURNS_JSON, and prints ``{"version", "replies"}`` as JSON. ``server`` runs
``Agent(...).launch(path="/agent", port=PORT)`` (needs fastapi and uvicorn in that
virtualenv) with its LLM at LLM_BASE_URL, until killed. Network beyond loopback is refused;
PraisonAI's home directory is a temporary one: ``$PRAISON_PEER_HOME`` if the caller gives one
(and removes it: a killed server removes nothing), else one of its own, removed as it exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import tempfile
import time
from importlib.metadata import version
from typing import Any

LOOPBACK = ("127.", "::1", "localhost")


def _offline() -> tempfile.TemporaryDirectory[str] | None:
    """Telemetry off, a throw-away home, and no connection beyond this machine. Returns the
    home it made, if the caller gave none: to keep until the process exits."""
    made = None
    home = os.environ.get("PRAISON_PEER_HOME")
    if not home:
        made = tempfile.TemporaryDirectory(prefix="praison-remote-")
        home = made.name
    os.environ["HOME"] = home
    os.environ.update(
        DO_NOT_TRACK="true",
        PRAISONAI_TELEMETRY_DISABLED="true",
        PRAISONAI_DISABLE_TELEMETRY="true",
    )
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = str(address[0]) if isinstance(address, tuple) else str(address)
        if self.family != socket.AF_UNIX and not host.startswith(LOOPBACK):
            raise OSError(f"network disabled by the interop check: {host}")
        return real_connect(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]
    return made


def client(agent_url: str, turns_json: str) -> None:
    with contextlib.redirect_stdout(sys.stderr):  # PraisonAI prints its connection message
        from praisonaiagents import Session

        replies = []
        for session_id, message in json.loads(turns_json):
            session = Session(agent_url=agent_url, session_id=session_id, user_id="interop")
            replies.append(session.chat(message))
    print(json.dumps({"version": version("praisonaiagents"), "replies": replies}))


def server(llm_base_url: str, port: str) -> None:
    os.environ.update(OPENAI_BASE_URL=llm_base_url, OPENAI_API_KEY="sk-local-scripted")
    from praisonaiagents import Agent

    agent = Agent(name="Echo", instructions="Answer briefly.", llm="gpt-4o-mini")
    agent.launch(path="/agent", port=int(port), host="127.0.0.1")
    while True:  # launch() serves from a daemon thread
        time.sleep(1)


if __name__ == "__main__":
    home = _offline()
    mode, *arguments = sys.argv[1:]
    {"client": client, "server": server}[mode](*arguments)
