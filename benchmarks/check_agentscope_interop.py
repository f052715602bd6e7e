"""AgentScope 1.0.21 reads the session files praisonsession writes, and the reverse.

    .venv/bin/python benchmarks/check_agentscope_interop.py

Needs AgentScope: the ``interop`` extra installs it beside praisonsession (``make test``);
else its own virtualenv (``/tmp/as1`` or ``$AGENTSCOPE_PYTHON``; see
``benchmarks/README.md``). Both directions use the bound API of AgentScope's tutorial on our
side (``JSONSession(session_id, save_dir)``, ``save_path``) and AgentScope 1.0's own
``JSONSession(save_dir)`` on theirs. Prints what each side read and exits non-zero on a
mismatch.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from praisonsession import JSONSession, StateModule

PEER = Path(__file__).resolve().parent / "peers" / "agentscope_file_interop.py"
# the interop extra installs it here; otherwise its own virtualenv
PYTHON = os.environ.get("AGENTSCOPE_PYTHON") or (
    sys.executable if importlib.util.find_spec("agentscope") else "/tmp/as1/bin/python"
)


class Memory(StateModule):
    """The same state as the peer's module: a registered list of messages."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list = []
        self.register_state("messages")


class Agent(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.memory = Memory()
        self.name = ""
        self.register_state("name")


def peer(*args: str) -> str:
    done = subprocess.run([PYTHON, str(PEER), *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"AgentScope failed:\n{done.stderr}")
    return done.stdout


def main() -> int:
    if not Path(PYTHON).exists():
        print(f"AgentScope is not installed at {PYTHON}; see benchmarks/README.md.")
        return 2
    with tempfile.TemporaryDirectory(prefix="interop-") as save_dir:
        return both_ways(save_dir)


def both_ways(save_dir: str) -> int:
    """Each side writes a file in ``save_dir`` and reads the other's."""
    ours = Agent()
    ours.name = "Written by praisonsession"
    ours.memory.messages = [{"role": "user", "content": "from praisonsession \ud800 日本"}]
    asyncio.run(JSONSession("ours", save_dir).save_session_state(agent=ours))
    theirs_read = json.loads(peer("read", save_dir, "ours"))
    expected = json.loads(json.dumps(ours.state_dict(), ensure_ascii=True))
    print("AgentScope read our file:", theirs_read == expected, theirs_read)

    peer("write", save_dir, "theirs")
    loaded = Agent()
    asyncio.run(JSONSession("theirs", save_dir).load_session_state(agent=loaded))
    state = loaded.state_dict()
    ok = state["name"] == "Written by AgentScope" and state["memory"]["messages"] == [
        {"role": "user", "content": "from AgentScope \ud800 日本"}
    ]
    print("we read AgentScope's file:", ok, ascii(state))
    return 0 if theirs_read == expected and ok else 1


if __name__ == "__main__":
    sys.exit(main())
