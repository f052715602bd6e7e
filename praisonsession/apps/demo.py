"""``python -m praisonsession.apps.demo``: what a Session remembers, across processes.

Runs on the embedded default (SQLite under ./.praisonsession/): no server, no network, no key.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from typing import Any

from ..llm import ScriptedChatServer
from ..session.sync import Session

SECOND_PROCESS = textwrap.dedent(
    """
    from praisonsession import Session

    session = Session(session_id="demo_chat", user_id="ada")
    print("  [process 2] restored state:", session.restore_state())
    print("  [process 2] increment_state('turns') ->", session.increment_state("turns"))
    """
)


def main() -> None:
    print("1. A session with state, in this process")
    session = Session(session_id="demo_chat", user_id="ada")
    session.delete()  # start the demo afresh each run
    session = Session(session_id="demo_chat", user_id="ada")
    session.set_state("score", 10)
    print(
        "   set score=10, increment_state('score', increment=5) ->",
        session.increment_state("score", increment=5),
    )
    session.save_state({"profile": {"name": "Ada", "likes": ["tea", "maths"]}, "turns": 1})
    print("   restore_state() ->", session.restore_state())

    print("2. The same session opened by a second, separate process")
    subprocess.run([sys.executable, "-c", SECOND_PROCESS], check=True)
    print("   back in process 1, turns =", session.get_state("turns"))

    print("3. TTL: a session that lives for 1 second")
    short = Session(session_id="demo_short", user_id="ada", session_ttl=1)
    short.set_state("note", "gone soon")
    print(
        f"   time_to_expiry() -> {short.time_to_expiry():.2f} s, is_expired() ->",
        short.is_expired(),
    )
    time.sleep(1.2)
    print("   after 1.2 s: is_expired() ->", short.is_expired())

    print("4. Listing ada's live sessions")
    for info in session.list_sessions():
        print(f"   - {info.session_id} (version {info.version})")

    print("5. Memory and knowledge, offline (the embedding model loads on first use)")
    session.clear_memory()
    session.add_memory("I would like a refund for the broken blender")
    session.add_memory("My daughter Mia starts primary school in September")
    session.add_knowledge("Refunds are paid within 14 days of the item reaching our warehouse.")
    best = session.search_memory("getting my money back", limit=1)[0]
    print(f"   search_memory('getting my money back') -> {best['text']!r} ({best['score']:.2f})")
    print("   get_context('refund') ->")
    for line in session.get_context("refund").splitlines():
        print("     " + line)

    print("6. An agent whose conversation is kept in the session")
    print("   (a local stand-in model on 127.0.0.1; with a real one, only llm= changes)")
    with ScriptedChatServer(_stand_in_model) as model:
        llm = {"model": "stand-in", "base_url": model.url}
        agent = session.Agent("Assistant", instructions="Be brief.", llm=llm, memory=False)
        print("   chat('My name is Ada.') ->", repr(agent.chat("My name is Ada.")))
        reopened = Session(session_id="demo_chat", user_id="ada").Agent("Assistant", llm=llm)
        print(
            "   in a new Session: chat('What is my name?') ->",
            repr(reopened.chat("What is my name?")),
        )
    print(f"Stored in {session.store.url}")
    session.close()
    short.close()


def _stand_in_model(request: dict[str, Any]) -> str:
    """Answers from the conversation it is sent, so it only knows what the history holds."""
    said = " ".join(m["content"] for m in request["messages"] if m["role"] == "user")
    if request["messages"][-1]["content"].endswith("?"):
        return "Your name is Ada." if "name is Ada" in said else "I don't know yet."
    return "Nice to meet you."


if __name__ == "__main__":
    main()
