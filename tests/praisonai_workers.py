"""A PraisonAI agent on PraisonDb for one turn, in a process of its own, with a scripted local
model (``ScriptedChatServer`` on 127.0.0.1): what the tests of ``test_praisonai_db.py`` run to
see an agent resume in a new process.

    python praisonai_workers.py '{"store": URL, "user": "alice", "session": "s1",
                                  "prompt": "hi", "replies": [...], "tool": true}'

``replies`` are the scripted answers: a string is a text reply, ``{"add": {...}}`` asks for the
tool ``add`` with those arguments. With ``tool`` the agent has the ``add`` tool and streams its
turn (PraisonAI persists tool turns on that path). Prints one JSON line: the answer and the
messages of every request the model got.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

#: No telemetry, no key or endpoint from the environment: the model is the scripted server.
QUIET = {
    "DO_NOT_TRACK": "true",
    "PRAISONAI_TELEMETRY_DISABLED": "true",
    "PRAISONAI_DISABLE_TELEMETRY": "true",
    "OPENAI_API_KEY": "scripted",
}


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def agent_for(db: Any, user: str | None, session: str, tool: bool) -> Any:
    """A PraisonAI agent remembering through ``db`` (the scripted server's URL must be in
    ``OPENAI_BASE_URL``)."""
    from praisonaiagents import Agent, MemoryConfig

    return Agent(
        name="Helper",
        instructions="Answer briefly.",
        model="scripted-model",
        tools=[add] if tool else None,
        memory=MemoryConfig(db=db, session_id=session, user_id=user),
        output="silent",
    )


def replies_of(spec: list[Any]) -> list[Any]:
    from praisonsession.llm.local_server import Reply

    made = []
    for reply in spec:
        if isinstance(reply, str):
            made.append(Reply.text(reply))
        else:
            made.append(Reply.tool_calls(*reply.items()))
    return made


def turn(agent: Any, prompt: str, tool: bool) -> str:
    """One turn: streamed when the agent has tools (where PraisonAI keeps tool turns)."""
    if tool:
        return "".join(agent.start(prompt, stream=True))
    return str(agent.chat(prompt, stream=False))


def main(spec: dict[str, Any]) -> None:
    os.environ.update(QUIET)
    from praisonsession.integrations.praisonai import PraisonDb
    from praisonsession.llm.local_server import ScriptedChatServer

    with ScriptedChatServer() as server:
        os.environ["OPENAI_BASE_URL"] = server.url
        server.queue(*replies_of(spec["replies"]))
        with PraisonDb(spec["store"], settings=spec.get("settings")) as db:
            agent = agent_for(db, spec.get("user"), spec["session"], spec.get("tool", False))
            answer = turn(agent, spec["prompt"], spec.get("tool", False))
        sent = [request.body["messages"] for request in server.chat_requests]
    print(json.dumps({"answer": answer, "sent": sent, "pending": server.pending}))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
