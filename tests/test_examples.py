"""The seeds' own examples (examples/), run as a new user would, checked on what they print."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from own_tmpdir import left_in, own_tmpdir

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(relative: str, tmp_path: Path, **env: str) -> str:
    """Run an example in ``tmp_path``, with a temporary directory of its own: what the example
    makes there, it removes (a reader who runs it a hundred times finds nothing left)."""
    temp = own_tmpdir(tmp_path)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / relative)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temp), **env},
    )
    assert done.returncode == 0, done.stderr
    assert left_in(temp) == []
    return done.stdout


def test_every_example_is_run_here() -> None:
    scripts = sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("*/*.py"))
    assert scripts == sorted(RUN), "an example without a test"
    assert len({script.split("/")[0] for script in scripts}) == 5  # a folder per seed


RUN = [
    "agentscope_000_api_reference/bound_session_api.py",
    "agentscope_001_api_reference/session_api.py",
    "agentscope_002_sqlite_session/sqlite_session.py",
    "agentscope_003_state_tutorial/state_and_session.py",
    "praisonai_004_session/session_docs.py",
    "agentscope_003_state_tutorial/state_and_session_agentscope.py",  # in test_interop.py
]


def test_seed_000_the_bound_agentscope_api(tmp_path: Path) -> None:
    out = run_example(RUN[0], tmp_path)
    assert out.splitlines() == [
        "is a SessionBase: True",
        "session_id: session_2025-08-08",
        "save_path: session_2025-08-08.json",
        "saved: {'counter': {'turns': 3}}",
        "loaded turns: 3",
        "after loading a session never saved: 3",
    ]


def test_seed_001_agentscope_1_0_on_json_and_redis(tmp_path: Path, redis_url: str) -> None:
    out = run_example(RUN[1], tmp_path, REDIS_URL=redis_url)
    assert out.splitlines() == [
        "JSONSession, alice: ['first page'] bob: []",
        "allow_not_exist=False: SessionNotFoundError",
        "RedisSession, alice: ['kept in Redis']",
        "get_client() answers PING: True",
    ]


def test_seed_002_an_agent_resumed_from_sqlite_in_a_later_run(tmp_path: Path) -> None:
    out = run_example(RUN[2], tmp_path)
    assert out.splitlines() == [
        "user: My name is Ada.",
        "Friday: Nice to meet you, Ada.",
        "user: What is my name?",
        "Friday: Your name is Ada.",
        "the second request carried the first turn: ['My name is Ada.', 'Nice to meet you, Ada.']",
        "copied to JSONSession, turns: 2",
    ]


SEED_003_OPENING = """State of obj_b.a:
{'cnt': 123}

State of obj_b:
{
    "a": {
        "cnt": 123
    },
    "c": "Hello, world!"
}
"""


def test_seed_003_the_state_and_session_tutorial(tmp_path: Path) -> None:
    out = run_example(RUN[3], tmp_path)
    assert out.startswith(SEED_003_OPENING)  # the tutorial's own output, to the character
    turn = [
        {"role": "user", "content": "Hello, agent!"},
        {"role": "assistant", "content": "Hello! How can I assist you today?"},
    ]
    saved = out.split("The saved state:\n", 1)[1].split("Current state of the agent:", 1)[0]
    # the user's message keeps when it was said (metadata.said_at, by the clock)
    said_at = json.loads(saved)["agent"]["history"]["messages"][0]["metadata"]["said_at"]
    assert isinstance(said_at, float) and said_at > 0
    turn[0]["metadata"] = {"said_at": said_at}
    # besides the history, an agent keeps its summary records and the LLM's usage per turn
    (usage,) = json.loads(saved)["agent"]["usage"]["messages"]
    assert usage["role"] == "usage" and usage["turn"] == 0 and usage["requests"] == 1
    logs = {"summaries": {"messages": []}, "usage": {"messages": [usage]}}
    assert json.loads(saved) == {"agent": {"history": {"messages": turn}, **logs}}
    assert out.count("Friday: Hello! How can I assist you today?") == 2
    cleared, loaded = out.split("Current state of the agent:\n", 1)[1].split(
        "After loading the session state:\n"
    )
    assert json.loads(cleared) == {"history": {"messages": []}, **logs}
    assert json.loads(loaded) == {"history": {"messages": turn}, **logs}


def test_seed_004_praisonais_session_docs(tmp_path: Path) -> None:
    out = run_example(RUN[4], tmp_path)
    lines = out.splitlines()
    assert lines[:4] == [
        "Noted: you prefer Python.",
        "score: 15",
        "memory: User prefers concise answers",
        "context mentions concise answers: True",
    ]
    assert "Sessions expire after their TTL; activity extends it." in out
    assert lines[-1] == "expires within the hour: True"
