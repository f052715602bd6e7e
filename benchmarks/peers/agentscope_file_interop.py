"""AgentScope 1.0.21's own JSONSession on files praisonsession wrote, and the reverse.

Run with AgentScope's interpreter (see benchmarks/README.md, "Setting up the peers"):

    /tmp/as1/bin/python benchmarks/peers/agentscope_file_interop.py read DIR SESSION_ID
    /tmp/as1/bin/python benchmarks/peers/agentscope_file_interop.py write DIR SESSION_ID

``read`` loads the session into AgentScope StateModules shaped like the writer's (a name and a
memory holding messages) and prints their state as JSON; ``write`` saves one such module. The
driver, ``benchmarks/check_agentscope_interop.py``, runs both against praisonsession.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

with contextlib.redirect_stdout(sys.stderr):
    from agentscope.module import StateModule
    from agentscope.session import JSONSession


class Memory(StateModule):
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


async def main(action: str, save_dir: str, session_id: str) -> None:
    session = JSONSession(save_dir=save_dir)
    agent = Agent()
    if action == "read":
        await session.load_session_state(session_id, allow_not_exist=False, agent=agent)
        print(json.dumps(agent.state_dict(), ensure_ascii=True))
    else:
        agent.name = "Written by AgentScope"
        agent.memory.messages = [{"role": "user", "content": "from AgentScope \ud800 日本"}]
        await session.save_session_state(session_id, agent=agent)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
