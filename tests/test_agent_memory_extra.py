"""An agent on the core install, and an agent that has nothing to remember yet.

``pip install .`` is "state and agents": an agent with memory on (the default) must chat there,
with memory off and a notice once. With the memory extra, a turn loads the embedding model only
when there is something to search. Each case runs in a child process of its own: what is
imported and loaded is process-wide, and the core install is simulated by refusing the memory
extra's packages there (``missing_extras``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from missing_extras import MEMORY_EXTRA, run_without
from praisonsession import Session
from praisonsession.errors import install_line

NOTICE = (
    "Agent 'Tutor' runs without memory: the memory extra (ChromaDB and an offline embedding "
    "model) is not installed. Its conversation is still kept in the session; what is off is "
    "semantic memory and the recall of older turns. To turn memory on: "
    f"{install_line('memory')}. To silence this notice: session.Agent(..., memory=False)."
)

CHAT = """
import json, sys
from praisonsession import Session
from praisonsession.llm.local_server import ScriptedChatServer

with ScriptedChatServer(lambda request: "echo: " + request["messages"][-1]["content"]) as server:
    llm = {{"base_url": server.url, "model": "stand-in"}}
    session = Session("chat_1", user_id="ada", store="sqlite://s.db")
    {agents}
    replies = [agent.chat(text) for agent in agents for text in ("Hi", "Still there?")]
print(json.dumps({{"replies": replies}}))
"""


def _chat(tmp_path: Path, agents: str, blocked: tuple[str, ...] = MEMORY_EXTRA):
    done = run_without(blocked, CHAT.format(agents=agents), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])["replies"], done.stderr


def test_an_agent_chats_on_the_core_install_with_memory_off_and_one_notice(
    tmp_path: Path,
) -> None:
    replies, stderr = _chat(
        tmp_path,
        "agents = [session.Agent('Tutor', llm=llm), session.Agent('Coach', llm=llm)]",
    )
    assert replies == ["echo: Hi", "echo: Still there?"] * 2
    assert stderr.strip() == NOTICE  # once per process, for the first agent that found it
    history = Session("chat_1", user_id="ada", store=f"sqlite://{tmp_path}/s.db").read_messages(
        "agent:Tutor.history"
    )
    assert [m["content"] for m in history] == [
        "Hi",
        "echo: Hi",
        "Still there?",
        "echo: Still there?",
    ]


def test_memory_false_on_the_core_install_says_nothing(tmp_path: Path) -> None:
    replies, stderr = _chat(tmp_path, "agents = [session.Agent('Tutor', memory=False, llm=llm)]")
    assert replies == ["echo: Hi", "echo: Still there?"]
    assert stderr == ""


def test_knowledge_asked_for_by_name_on_the_core_install_says_what_to_install(
    tmp_path: Path,
) -> None:
    code = """
from praisonsession import MissingDependencyError, Session
from praisonsession.llm.local_server import ScriptedChatServer

with ScriptedChatServer() as server:
    session = Session("chat_1", user_id="ada", store="sqlite://s.db")
    try:
        agent = session.Agent("Tutor", knowledge=["Paris is in France."],
                              llm={"base_url": server.url, "model": "stand-in"})
        agent.chat("Where is Paris?")
    except MissingDependencyError as error:
        print(error)
"""
    done = run_without(MEMORY_EXTRA, code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert install_line("memory") in done.stdout


LOADS = """
import json, sys
from praisonsession import Session
from praisonsession.llm.local_server import ScriptedChatServer
from praisonsession.recall import core

def loaded():
    return {
        "model": any(embedder.loaded for embedder in core._embedders.values()),
        "encoder": "praisonsession.recall.embeddings._encoder" in sys.modules,
        "onnxruntime": "onnxruntime" in sys.modules,
    }

seen = {}
with ScriptedChatServer(lambda request: "ok") as server:
    session = Session("chat_1", user_id="ada", store="sqlite://s.db")
    agent = session.Agent("Tutor", llm={"base_url": server.url, "model": "stand-in"})
    agent.chat("Hi")
    agent.chat("What did I say?")
    seen["two turns, nothing stored"] = loaded()
    session.add_memory("Ada prefers short answers")
    agent.chat("How should you answer me?")
    seen["a memory to search"] = loaded()
    seen["context"] = server.chat_requests[-1].body["messages"][0]["content"]
print(json.dumps(seen))
"""


@pytest.mark.slow
def test_two_turns_with_nothing_stored_never_load_the_embedding_model(tmp_path: Path) -> None:
    done = run_without((), LOADS, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["two turns, nothing stored"] == {
        "model": False,
        "encoder": False,
        "onnxruntime": False,
    }
    # the same agent, once there is something to find, loads it and uses it
    assert seen["a memory to search"]["model"] is True
    assert "Ada prefers short answers" in seen["context"]
