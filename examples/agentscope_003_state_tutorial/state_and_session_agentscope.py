"""AgentScope's "State/Session Management" tutorial on AgentScope's own classes, with only the
session import swapped:

    from agentscope.session import JSONSession   ->  from praisonsession import JSONSession

Everything else is AgentScope 1.0.21 (``pip install ".[interop]"`` in a clone,
``pip install "praisonsession[interop]"`` once published): its
StateModule, ReActAgent, InMemoryMemory, Toolkit, Msg, and a DashScope model object. The model
is constructed but never called (no key, no network): where the tutorial lets the agent reply
(``await agent(Msg(...))``), this example puts the same turn into the agent's memory itself.
"""

import asyncio
import json
import os
import tempfile

from agentscope.agent import ReActAgent
from agentscope.formatter import DashScopeChatFormatter
from agentscope.memory import InMemoryMemory
from agentscope.message import Msg
from agentscope.model import DashScopeChatModel
from agentscope.module import StateModule
from agentscope.tool import Toolkit

from praisonsession import JSONSession

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

# -- Creating an agent -----------------------------------------------------------------------

agent = ReActAgent(
    name="Friday",
    sys_prompt="You're a assistant named Friday.",
    model=DashScopeChatModel(
        model_name="qwen-max",
        api_key=os.environ.get("DASHSCOPE_API_KEY", "constructed-never-called"),
    ),
    formatter=DashScopeChatFormatter(),
    memory=InMemoryMemory(),
    toolkit=Toolkit(),
)

initial_state = json.loads(json.dumps(agent.state_dict()))  # AgentScope's is live: copy it

print("Initial state of the agent:")
print(json.dumps(initial_state, indent=4))


async def example_agent_state() -> None:
    """Example of agent state management (the turn a reply would have added)."""
    await agent.memory.add(Msg("user", "Hello, agent!", "user"))
    await agent.memory.add(Msg("Friday", "Hello! How can I assist you today?", "assistant"))
    print("Friday: Hello! How can I assist you today?")

    print("State of the agent after generating a reply:")
    print(json.dumps(agent.state_dict(), indent=4))


asyncio.run(example_agent_state())

agent.load_state_dict(initial_state)

print("State after loading the initial state:")
print(json.dumps(agent.state_dict(), indent=4))

# -- Session Management ----------------------------------------------------------------------

asyncio.run(example_agent_state())

print("\nState of agent:")
print(json.dumps(agent.state_dict(), indent=4))

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
    await agent.memory.clear()

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
os.chdir(started_in)
workdir.cleanup()
