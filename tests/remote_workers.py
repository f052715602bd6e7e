"""Client processes for ``test_remote.py``: ``python remote_workers.py chat AGENT_URL TOKEN NAME
TURNS SESSION...``.

Each is a separate program chatting with the same server at once. Turn ``t`` goes to session
``SESSION[t % len]`` with the text ``NAME-<t % len>-<t>``; the worker checks every reply and
prints how many turns were acknowledged.
"""

from __future__ import annotations

import json
import sys

from praisonsession import Session


def chat(agent_url: str, token: str, name: str, turns: str, *session_ids: str) -> None:
    sessions = [
        Session(agent_url=agent_url, session_id=sid, api_key=token, timeout=60)
        for sid in session_ids
    ]
    acknowledged = 0
    for turn in range(int(turns)):
        index = turn % len(sessions)
        text = f"{name}-{index}-{turn}"
        reply = sessions[index].chat(text)
        if reply != f"You said: {text}":
            raise SystemExit(f"{text!r} got {reply!r}")
        acknowledged += 1
    print(json.dumps(acknowledged))


if __name__ == "__main__":
    job, *arguments = sys.argv[1:]
    {"chat": chat}[job](*arguments)
