"""AgentScope's session API document and its SQLite example, with the import swapped.

    from sqlite_session import SqliteSession          (the example's own class)
    from agentscope.session import JSONSession        ->  from praisonsession import ...

The example resumes an agent, "friday_of_user", in a later run of the program. It uses
AgentScope's ReActAgent with a DashScope model: that is AgentScope's agent framework, not its
session layer, so praisonsession's session.Agent stands in for it, on a local scripted model
server (no key, no network). The sessions are the document's: SqliteSession(sqlite_path=...)
and JSONSession(save_dir=...), saved and loaded with save/load_session_state.
"""

import asyncio
import os
import sys
import tempfile

from praisonsession import JSONSession, Session, SqliteSession
from praisonsession.llm import ScriptedChatServer

workdir = tempfile.TemporaryDirectory(prefix="agentscope-002-")  # removed at the end
SQLITE_PATH = os.path.join(workdir.name, "session.db")


async def run_once(server: ScriptedChatServer, message: str) -> None:
    """One run of the program: load the agent's state, chat once, save it again."""
    app = Session("friday_app", store="memory://")  # the agent's working session
    friday = app.Agent("Friday", memory=False, llm={"model": "qwen-max", "base_url": server.url})
    session = SqliteSession(sqlite_path=SQLITE_PATH)
    await session.load_session_state(session_id="user_session", friday_of_user=friday)
    reply = await friday.achat(message)
    print(f"user: {message}\nFriday: {reply}")
    await session.save_session_state(session_id="user_session", friday_of_user=friday)
    await session.close()
    app.close()


async def main() -> None:
    answers = iter(["Nice to meet you, Ada.", "Your name is Ada."])
    with ScriptedChatServer(lambda request: next(answers)) as server:
        await run_once(server, "My name is Ada.")
        await run_once(server, "What is my name?")  # a later run: the state comes back
        sent = server.requests[-1].body["messages"]
        history = [m["content"] for m in sent[:-1] if m["role"] != "system"]
        print("the second request carried the first turn:", history)

    json_store = JSONSession(save_dir=os.path.join(workdir.name, "sessions"))
    resumed = Session("friday_app", store="memory://").Agent("Friday", memory=False)
    sqlite_store = SqliteSession(sqlite_path=SQLITE_PATH)
    await sqlite_store.load_session_state("user_session", friday_of_user=resumed)
    await json_store.save_session_state("user_session", friday_of_user=resumed)
    print("copied to JSONSession, turns:", resumed.turns)


asyncio.run(main())
workdir.cleanup()
sys.exit(0)
