"""Worker processes for ``test_openai_agents.py``: ``python openai_agents_workers.py <job> ...``.

Each job is a separate OS process that imports the SDK and praisonsession afresh, as another
program sharing the store would. Jobs:

``add URL BARRIER NAME COUNT``
    ``PraisonSession("shared", user_id="u")``; at the barrier, COUNT ``add_items`` of one item
    ``{"role": "user", "content": "NAME-i"}`` each; prints ``"done"``.
``pop URL BARRIER NAME``
    At the barrier, ``pop_item`` until it returns None; prints the contents popped (JSON).
``crash-adder URL SESSION_ID ACK_FILE``
    Prints ``ready``, waits for a line on stdin, then adds turns forever (until killed): turn
    ``i`` is :func:`turn_items` in one ``add_items``, acknowledged by the line ``i`` in
    ACK_FILE once it returned.
``runner-turn URL SESSION_ID MESSAGE REPLY``
    One ``Runner.run(agent, MESSAGE, session=...)`` with an offline scripted model answering
    REPLY; prints the input the model received (JSON).

The barrier is a directory: each worker creates ``ready-NAME`` once set up, then waits for
the parent to create ``go``, so that all of them start together.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from praisonsession.integrations.openai_agents import PraisonSession
from released_together import wait_for_go


def worker_command(*args: str) -> list[str]:
    """The command line running one job of this file in a new Python process."""
    return [sys.executable, str(Path(__file__).resolve()), *args]


def turn_items(i: int) -> list[dict[str, Any]]:
    """Turn ``i`` of the crash job: a question, a tool call and its output, an answer."""
    return [
        {"role": "user", "content": f"question {i}"},
        {"type": "function_call", "call_id": f"call_{i}", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": f"call_{i}", "output": f"result {i}"},
        {"role": "assistant", "content": f"answer {i}"},
    ]


async def add(url: str, barrier: str, name: str, count: str) -> None:
    session = PraisonSession("shared", user_id="u", store=url)
    await session.get_items(limit=1)  # connected before the start
    wait_for_go(Path(barrier), name)
    for i in range(int(count)):
        await session.add_items([{"role": "user", "content": f"{name}-{i}"}])
    session.close()
    print(json.dumps("done"))


async def pop(url: str, barrier: str, name: str) -> None:
    session = PraisonSession("shared", user_id="u", store=url)
    await session.get_items(limit=1)
    wait_for_go(Path(barrier), name)
    popped = []
    while (item := await session.pop_item()) is not None:
        popped.append(item["content"])
    session.close()
    print(json.dumps(popped))


async def crash_adder(url: str, session_id: str, ack_file: str) -> None:
    session = PraisonSession(session_id, user_id="crash", store=url)
    await session.get_items(limit=1)
    print("ready", flush=True)
    sys.stdin.readline()
    with open(ack_file, "a") as acks:
        for i in itertools.count():
            await session.add_items(turn_items(i))
            acks.write(f"{i}\n")
            acks.flush()


async def runner_turn(url: str, session_id: str, message: str, reply: str) -> None:
    from agents import Agent, Runner, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message

    set_tracing_disabled(True)
    model = ScriptedModel([[assistant_message(reply)]])
    agent = Agent(name="Assistant", model=model)
    session = PraisonSession(session_id, user_id="u", store=url)
    result = await Runner.run(agent, message, session=session)
    assert result.final_output == reply
    session.close()
    print(json.dumps(model.calls[-1].input))


JOBS = {"add": add, "pop": pop, "crash-adder": crash_adder, "runner-turn": runner_turn}

if __name__ == "__main__":
    asyncio.run(JOBS[sys.argv[1]](*sys.argv[2:]))
