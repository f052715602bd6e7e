"""AgentScope's "State/Session Management" tutorial, with the import swapped.

    from agentscope.module import StateModule    ->  from praisonsession import StateModule
    from agentscope.session import JSONSession   ->  from praisonsession import JSONSession

The tutorial's agent is AgentScope's ReActAgent on DashScope (qwen-max) with a Toolkit and Msg:
that is AgentScope's agent framework, not its session layer, so here praisonsession's
session.Agent stands in for it, talking to a local scripted model server (no key, no network).
Everything about state and sessions is the tutorial's own code.
"""

import asyncio
import json
import os
import tempfile

from praisonsession import JSONSession, Session, StateModule
from praisonsession.llm import ScriptedChatServer

started_in = os.getcwd()
workdir = tempfile.TemporaryDirectory(prefix="agentscope-tutorial-")  # removed at the end
os.chdir(workdir.name)  # keep ./user-bob/ out of the way

# -- State Module ----------------------------------------------------------------------------


class ClassA(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.cnt = 123
        # register cnt attribute as state
        self.register_state("cnt")


class ClassB(StateModule):
    def __init__(self) -> None:
        super().__init__()

        # attribute "a" inherits from StateModule
        self.a = ClassA()

        # register attribute "c" as state manually
        self.c = "Hello, world!"
        self.register_state("c")


obj_b = ClassB()

print("State of obj_b.a:")
print(obj_b.a.state_dict())

print("\nState of obj_b:")
print(json.dumps(obj_b.state_dict(), indent=4))

# -- An agent (praisonsession's session.Agent in place of AgentScope's ReActAgent) -----------

server = ScriptedChatServer(lambda request: "Hello! How can I assist you today?").start()
app = Session("tutorial", store="memory://")
agent = app.Agent(
    name="Friday",
    instructions="You're a assistant named Friday.",
    memory=False,
    llm={"model": "qwen-max", "base_url": server.url},
)

initial_state = agent.state_dict()

print("Initial state of the agent:")
print(json.dumps(initial_state, indent=4))


async def example_agent_state() -> None:
    """Example of agent state management"""
    reply = await agent.achat("Hello, agent!")
    print(f"Friday: {reply}")

    print("State of the agent after generating a reply:")
    print(json.dumps(agent.state_dict(), indent=4))


asyncio.run(example_agent_state())

agent.load_state_dict(initial_state)

print("State after loading the initial state:")
print(json.dumps(agent.state_dict(), indent=4))

# -- Session Management ----------------------------------------------------------------------

asyncio.run(example_agent_state())

session = JSONSession(
    session_id="session_2025-08-08",  # Use the time as session id
    save_dir="./user-bob/",  # Use the username as the save directory
)


async def example_session() -> None:
    """Example of session management."""
    await session.save_session_state(
        agent=agent,
    )

    print("The saved state:")
    with open(session.save_path, encoding="utf-8") as f:
        print(json.dumps(json.load(f), indent=4))


asyncio.run(example_session())


async def example_load_session() -> None:
    """Example of loading session state."""

    # we first clear the memory of the agent
    agent.history.clear()  # AgentScope: await agent.memory.clear()

    print("Current state of the agent:")
    print(json.dumps(agent.state_dict(), indent=4))

    # then we load the session state
    await session.load_session_state(
        # The keyword argument must be the same as the one used in `save_session_state`
        agent=agent,
    )
    print("After loading the session state:")
    print(json.dumps(agent.state_dict(), indent=4))


asyncio.run(example_load_session())
app.close()
server.stop()
os.chdir(started_in)
workdir.cleanup()
