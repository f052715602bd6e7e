"""PraisonAI's Session docs, with the import swapped.

    from praisonaiagents import Session  ->  from praisonsession import Session

The agent talks to a local scripted model server instead of OpenAI (no key, no network): that
is the only change besides the import. Remote sessions (agent_url=...) are in docs/remote.md.
"""

import os
import tempfile

from praisonsession import Session
from praisonsession.llm import ScriptedChatServer

started_in = os.getcwd()
workdir = tempfile.TemporaryDirectory(prefix="praisonai-004-")  # removed at the end
os.chdir(workdir.name)  # the session keeps its files here
server = ScriptedChatServer(lambda request: "Noted: you prefer Python.").start()
os.environ["OPENAI_BASE_URL"] = server.url  # where PraisonAI's default model would be

# -- Quick Start -----------------------------------------------------------------------------

session = Session(session_id="chat_123", user_id="user_456")

agent = session.Agent(
    name="Assistant",
    instructions="Remember our conversation history",
)

response = agent.chat("Hello! I prefer Python.")
print(response)

session.save_state({"user_preference": "Python"})

# -- State & Memory --------------------------------------------------------------------------

session.set_state("score", 10)
session.increment_state("score", increment=5)
print("score:", session.get_state("score"))

session.add_memory("User prefers concise answers", memory_type="long")
results = session.search_memory("preferences")
print("memory:", results[0]["text"])
context = session.get_context("What does the user prefer?")
print("context mentions concise answers:", "concise answers" in context)

with open("guide.md", "w", encoding="utf-8") as guide:
    guide.write("# Guide\n\nSessions expire after their TTL; activity extends it.\n")
session.add_knowledge("guide.md")
print("knowledge:", session.search_knowledge("when do sessions expire?")[0]["text"])

# -- Session Lifecycle -----------------------------------------------------------------------

session = Session(session_id="ttl-demo", session_ttl=3600)

if session.is_expired():
    print("Session expired")

remaining = session.time_to_expiry()  # seconds, or None
print("expires within the hour:", 3590 < remaining <= 3600)

session.close()  # saves agent histories and releases resources
server.stop()
os.chdir(started_in)
workdir.cleanup()
