"""Small LangGraph graphs the LangGraph tests run on every saver: an approval flow that stops
at an interrupt, a chat that appends one message per step (plain or as a DeltaChannel), a
chat turn of two nodes per run (``turn_graph``) and a map step of tasks run at once
(``fan_out_graph``).

A module of its own so that a second process (``python -m lg_graphs ...``) builds the same
graph over the same store and carries on where the first one stopped."""

from __future__ import annotations

import functools
import json
import operator
import sys
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt


class Approval(TypedDict):
    steps: Annotated[list[str], operator.add]
    answer: str


def _plan(state: Approval) -> dict[str, Any]:
    return {"steps": ["plan"]}


def _ask(state: Approval) -> dict[str, Any]:
    answer = interrupt({"question": "go ahead?"})
    return {"steps": ["ask"], "answer": answer}


def _act(state: Approval) -> dict[str, Any]:
    return {"steps": [f"act:{state['answer']}"]}


def approval_graph(saver: Any) -> Any:
    """plan -> ask (interrupts for an answer) -> act."""
    builder = StateGraph(Approval)
    builder.add_node("plan", _plan)
    builder.add_node("ask", _ask)
    builder.add_node("act", _act)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", "act")
    builder.add_edge("act", END)
    return builder.compile(checkpointer=saver)


def _batched(state: list[Any], writes: list[Any]) -> list[Any]:
    return functools.reduce(add_messages, writes, state)


class Chat(TypedDict):
    messages: Annotated[list[Any], add_messages]


class DeltaChat(TypedDict):
    messages: Annotated[list[Any], DeltaChannel(_batched, snapshot_frequency=7)]


def chat_graph(saver: Any, steps: int, *, delta: bool = False) -> Any:
    """Appends one AI message per step until the conversation holds ``steps`` messages."""

    def talk(state: dict[str, Any]) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=f"reply {n}", id=f"m{n}")]}

    def route(state: dict[str, Any]) -> str:
        return END if len(state["messages"]) >= steps else "talk"

    builder = StateGraph(DeltaChat if delta else Chat)
    builder.add_node("talk", talk)
    builder.add_edge(START, "talk")
    builder.add_conditional_edges("talk", route)
    return builder.compile(checkpointer=saver)


def chat_input() -> dict[str, Any]:
    return {"messages": [HumanMessage(content="hi", id="h0")]}


class Turn(TypedDict):
    messages: Annotated[list[Any], add_messages]
    notes: Annotated[list[str], operator.add]


def turn_graph(saver: Any) -> Any:
    """One turn of a chat per run: the person's message in (:func:`turn_input`), a node that
    notes what it looked up, then one that replies. LangGraph saves each step's checkpoint
    and each task's writes in the background while the next step runs, so the saves of one
    thread overlap."""

    def look_up(state: dict[str, Any]) -> dict[str, Any]:
        return {"notes": [f"looked up {len(state['messages'])}"]}

    def reply(state: dict[str, Any]) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=f"reply {n}", id=f"a{n}")]}

    builder = StateGraph(Turn)
    builder.add_node("look_up", look_up)
    builder.add_node("reply", reply)
    builder.add_edge(START, "look_up")
    builder.add_edge("look_up", "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def turn_input(n: int) -> dict[str, Any]:
    """The person's ``n``-th message."""
    return {"messages": [HumanMessage(content=f"question {n}", id=f"q{n}")]}


class Fanned(TypedDict):
    results: Annotated[list[str], operator.add]
    part: int


def fan_out_graph(saver: Any, parts: int) -> Any:
    """A map step: ``parts`` tasks (``Send``) run at once, each adding its result; their
    writes reach the saver together."""

    def fan(state: dict[str, Any]) -> list[Send]:
        return [Send("work", {"results": [], "part": n}) for n in range(parts)]

    def work(state: dict[str, Any]) -> dict[str, Any]:
        return {"results": [f"part {state['part']}"]}

    builder = StateGraph(Fanned)
    builder.add_node("work", work)
    builder.add_conditional_edges(START, fan)
    builder.add_edge("work", END)
    return builder.compile(checkpointer=saver)


def summary(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """What a thread looks like from outside: its values, what runs next, its history."""
    state = graph.get_state(config)
    history = list(graph.get_state_history(config))
    return {
        "values": state.values,
        "next": list(state.next),
        "history": len(history),
        "history_next": [list(snapshot.next) for snapshot in history],
    }


def _main(store_url: str, thread_id: str, answer: str) -> None:
    """A second process: resume the thread stopped at its interrupt, then report it."""
    from praisonsession.integrations.langgraph import PraisonSaver

    saver = PraisonSaver(store_url)
    graph = approval_graph(saver)
    config = {"configurable": {"thread_id": thread_id}}
    graph.invoke(Command(resume=answer), config)
    print(json.dumps(summary(graph, config)))
    saver.close()


if __name__ == "__main__":
    _main(*sys.argv[1:4])
