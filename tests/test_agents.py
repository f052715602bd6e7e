"""Agents that remember, against a real chat-completions server on 127.0.0.1.

Each test reads as a usage story: what the user calls, what the endpoint received (exact
bodies), and what the session's store holds afterwards.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Optional

import pytest

from llm_server import Reply, ScriptedChatServer
from praisonsession import AsyncSession, InvalidValueError, Session, SessionBase
from praisonsession._internal import runtime
from praisonsession.agents import Agent, AgentSpec, function_schema, module_key
from praisonsession.agents.agent import escaped_module_key
from praisonsession.agents.prompt import recent_turns
from praisonsession.llm import LLMAuthError, LLMUnavailableError

SYSTEM = "You are Tutor. Your role: Assistant."


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def unstamped(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages without when the user said them (each turn stamps its user message's
    ``metadata`` with ``said_at``): what the user and the model said."""
    out = []
    for message in messages:
        metadata = {k: v for k, v in (message.get("metadata") or {}).items() if k != "said_at"}
        message = {k: v for k, v in message.items() if k != "metadata"}
        out.append({**message, "metadata": metadata} if metadata else message)
    return out


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def system(text: str = SYSTEM) -> dict[str, Any]:
    return {"role": "system", "content": text}


class RememberingSession(AsyncSession):
    """A session whose memory and knowledge are a fixed, inspectable stand-in.

    It overrides the real ``add_memory``, ``add_knowledge``, ``search_knowledge`` and
    ``get_context`` (same signatures) so that tests can assert the exact prompt and how the
    agent called them. Agents stand on an ``AsyncSession``, so that is what it extends. The
    real layer is tested end to end in ``test_real_memory_*`` below.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memories: list[str] = []
        self.sources: list[str] = []
        self.context_calls: list[tuple[str, int]] = []

    async def add_memory(self, text: str, memory_type: str = "long", **metadata: Any) -> None:
        self.memories.append(text)

    async def add_knowledge(self, source: str) -> None:
        self.sources.append(source)

    async def search_knowledge(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        return [
            {"id": str(i), "text": s, "score": 1.0, "metadata": {}, "source": s}
            for i, s in enumerate(self.sources[:limit])
        ]

    async def get_context(self, query: str, max_items: int = 3) -> str:
        self.context_calls.append((query, max_items))
        found = self.memories[:max_items] + self.sources[:max_items]
        return "\n".join(f"• {text}" for text in found)


def done(result: Any) -> Any:
    """A sync Session's result as it is, an AsyncSession's coroutine run to its result."""
    return runtime.run(result) if inspect.isawaitable(result) else result


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path}/s.db"


@pytest.fixture
def open_session(store_url: str) -> Iterator[Callable[..., Session]]:
    """Open Session objects on one SQLite store (each call is like another program)."""
    opened: list[Session] = []

    def open_(session_id: str = "chat", cls: type[Session] = Session, **kw: Any) -> Session:
        session = cls(session_id, store=store_url, **kw)
        opened.append(session)
        return session

    yield open_
    for session in opened:
        done(session.close())


def tutor(session: Session, server: ScriptedChatServer, name: str = "Tutor", **kw: Any) -> Agent:
    llm = {"base_url": server.url, "model": "test-model", "retry_backoff": 0.01}
    return done(session.create_agent(name, llm=kw.pop("llm", llm), **kw))


def stored(session: Session, agent: Agent) -> list[dict[str, Any]]:
    """The agent's history as the store holds it."""
    log = f"{agent.key}.history"
    return runtime.run(session.store.read_messages(session.session_id, session.user_id, log))


def test_an_agents_log_name_is_where_the_session_keeps_its_conversation(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = tutor(session, server)
    server.say("Hello.")
    agent.chat("Hi")
    assert agent.log_name == f"{module_key('Tutor')}.history"
    assert unstamped(session.read_messages(agent.log_name)) == [user("Hi"), assistant("Hello.")]
    assert session.message_count(agent.log_name) == 2


# -- one conversation ----------------------------------------------------------------------


def test_a_turn_sends_instructions_and_message_and_saves_both(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = tutor(session, server, instructions="Remember our conversation history")
    server.say("Nice to meet you, Ada.")

    assert agent.chat("My name is Ada") == "Nice to meet you, Ada."

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "test-model",
        "messages": [
            system(f"{SYSTEM}\n\nRemember our conversation history"),
            user("My name is Ada"),
        ],
    }
    assert unstamped(agent.history) == [user("My name is Ada"), assistant("Nice to meet you, Ada.")]
    assert stored(session, agent) == agent.history


def test_the_next_turn_carries_the_conversation(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server)
    server.say("Hello Ada.", "Your name is Ada.")
    agent.chat("My name is Ada")
    agent.chat("What is my name?")
    assert server.last_messages() == [
        system(),
        user("My name is Ada"),
        assistant("Hello Ada."),
        user("What is my name?"),
    ]


CHILD = """
import sys
from praisonsession import Session

store_url, base_url = sys.argv[1:3]
session = Session("chat", store=store_url)
agent = session.Agent("Tutor", llm={"base_url": base_url, "model": "test-model"})
print(agent.turns)
print(agent.chat("What is my name?"))
"""


@pytest.mark.slow
def test_the_conversation_survives_a_new_process_and_continues(
    open_session: Callable[..., Session],
    server: ScriptedChatServer,
    store_url: str,
    tmp_path: Path,
) -> None:
    tutor(open_session(), server).chat("My name is Ada")  # scripted: "You said: ..."
    server.say("Your name is Ada.")

    child = subprocess.run(
        [sys.executable, "-c", CHILD, store_url, server.url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )

    assert child.returncode == 0, child.stderr
    assert child.stdout.splitlines() == ["1", "Your name is Ada."]
    first, second = server.requests
    assert second.body["messages"] == [
        system(),
        user("My name is Ada"),
        assistant("You said: My name is Ada"),
        user("What is my name?"),
    ]
    assert first.client_port != second.client_port  # really another program
    reopened = tutor(open_session(), server)
    assert reopened.turns == 2
    assert reopened.history[-1] == assistant("Your name is Ada.")


def test_history_with_tool_calls_round_trips_through_every_store(
    store: SessionBase, server: ScriptedChatServer
) -> None:
    agent = tutor(Session("chat", store=store), server, tools=[get_weather])
    server.call(("get_weather", {"city": "Oslo"}))
    server.say("7 C in Oslo.")
    agent.chat("Weather in Oslo?")
    agent.chat("Thanks")

    again = tutor(Session("chat", store=store), server, tools=[get_weather])

    assert again is not agent and again.history == agent.history
    assert [m["role"] for m in again.history] == [
        "user", "assistant", "tool", "assistant", "user", "assistant"
    ]  # fmt: skip
    again.chat("More")
    assert server.last_messages() == [system(), *unstamped(agent.history), user("More")]


def test_the_same_name_in_the_same_session_is_the_same_live_agent(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    first = tutor(session, server, instructions="Be brief.")
    first.chat("one")

    again = tutor(session, server, instructions="Be very brief.")

    assert again is first
    assert again.instructions == "Be very brief."  # the latest settings apply
    assert unstamped(again.history) == [
        user("one"),
        assistant("You said: one"),
    ]  # never a stale copy


def test_session_agent_and_create_agent_are_the_factory(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    llm = {"base_url": server.url, "model": "test-model"}
    agent = session.Agent("Tutor", instructions="Be brief.", llm=llm)
    assert session.create_agent("Tutor", llm=llm) is agent
    agent.chat("Hi")
    assert server.last_messages() == [system(), user("Hi")]


def test_two_programs_taking_turns_share_one_conversation(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    here = tutor(open_session(), server)
    there = tutor(open_session(), server)  # another Session object: as another process would
    here.chat("one")
    there.chat("two")
    here.chat("three")

    expected = [
        user("one"),
        assistant("You said: one"),
        user("two"),
        assistant("You said: two"),
        user("three"),
        assistant("You said: three"),
    ]
    assert server.last_messages() == [system(), *expected[:-1]]
    assert unstamped(here.history) == expected
    assert unstamped(stored(here.session, here)) == expected


@pytest.mark.slow
def test_two_programs_chatting_at_the_same_instant_keep_every_turn(
    store: SessionBase, server: ScriptedChatServer
) -> None:
    """Two Session objects on one store (as two processes would be), each with its live agent
    of the same name, chatting from two threads at once: no turn is lost or split."""
    turns = 60

    def converse(name: str) -> None:
        agent = tutor(Session("chat", store=store), server)
        for i in range(turns):
            agent.chat(f"{name}-{i}")

    threads = [threading.Thread(target=converse, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    history = tutor(Session("chat", store=store), server).history.to_list()
    assert len(history) == 4 * turns
    questions = history[0::2]
    assert history[1::2] == [assistant(f"You said: {q['content']}") for q in questions]
    for name in ("a", "b"):
        mine = [q["content"] for q in questions if q["content"].startswith(f"{name}-")]
        assert mine == [f"{name}-{i}" for i in range(turns)]


def test_two_agents_in_one_session_keep_separate_histories(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    lead = tutor(session, server, name="team.lead")
    other = tutor(session, server, name="team lead")
    lead.chat("to lead 1")
    other.chat("to other 1")
    lead.chat("to lead 2")

    assert server.last_messages() == [
        system("You are team.lead. Your role: Assistant."),
        user("to lead 1"),
        assistant("You said: to lead 1"),
        user("to lead 2"),
    ]
    assert (lead.key, other.key) == ("agent:team%2Elead", "agent:team lead")
    assert stored(session, lead) == lead.history and len(lead.history) == 4
    assert unstamped(stored(session, other)) == [
        user("to other 1"),
        assistant("You said: to other 1"),
    ]
    reopened = open_session()
    assert tutor(reopened, server, name="team lead").history == other.history
    assert tutor(reopened, server, name="team.lead").history == lead.history


def test_agent_names_map_to_distinct_store_keys() -> None:
    names = ["a.b", "a b", "a%2Eb", "A.b", "a:b", "a/b", "ü", "a%b"]
    keys = [module_key(n) for n in names]
    assert len(set(keys)) == len(names)
    assert all("." not in key for key in keys)
    assert module_key("Assistant") == "agent:Assistant"
    assert module_key("Team Lead ü") == "agent:Team Lead ü"


def test_an_agent_with_capitals_has_a_readable_log_listed_by_the_session(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = tutor(session, server, name="Assistant")
    server.say("Hello.")
    agent.chat("Hi")
    assert agent.log_name == "agent:Assistant.history"
    logs = session.list_logs()
    assert logs["agent:Assistant.history"] == 2
    assert all(name.startswith("agent:Assistant.") for name in logs)  # its usage log too
    assert done(open_session(cls=AsyncSession).list_logs()) == logs


def test_a_history_saved_under_the_old_escaped_name_keeps_loading(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    old = "agent:%41ssistant.history"  # how "Assistant" was stored before names stayed readable
    before = tutor(open_session(), server, name="Assistant")
    before.key = escaped_module_key("Assistant")  # where versions before readable names saved
    server.say("Hello.")
    before.chat("Hi")
    session = open_session()
    agent = tutor(session, server, name="Assistant")
    assert unstamped(agent.history) == [user("Hi"), assistant("Hello.")]
    assert agent.log_name == old
    server.say("Again.")
    agent.chat("Once more")
    logs = session.list_logs()
    assert logs[old] == 4 and all(name.startswith("agent:%41ssistant.") for name in logs)
    assert server.last_messages()[1:] == [user("Hi"), assistant("Hello."), user("Once more")]


def test_a_failed_llm_call_leaves_no_half_turn(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = tutor(session, server)
    server.fail(401, "Incorrect API key provided.")
    with pytest.raises(LLMAuthError):
        agent.chat("first try")

    assert agent.history == [] and stored(session, agent) == []
    server.say("ok")
    assert agent.chat("second try") == "ok"
    assert server.last_messages() == [system(), user("second try")]


def test_history_window_counts_turns(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server, history_window=2, recall_turns=0)
    for i in range(5):
        agent.chat(f"q{i}")
    assert server.last_messages() == [
        system(),
        user("q2"),
        assistant("You said: q2"),
        user("q3"),
        assistant("You said: q3"),
        user("q4"),
    ]
    assert len(agent.history) == 10  # the window limits what is sent, not what is kept


def test_the_window_never_separates_tool_calls_from_their_results() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history = [
        user("q1"),
        assistant("a1"),
        user("q2"),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        assistant("a2"),
    ]
    assert recent_turns(history, 1) == history[2:]
    assert recent_turns(history, 2) == history
    assert recent_turns(history, 9) == history
    assert recent_turns(history, 0) == []
    assert recent_turns(history, None) == history


# -- tools ---------------------------------------------------------------------------------


class Unit(enum.Enum):
    CELSIUS = "C"
    FAHRENHEIT = "F"


def get_weather(city: str, unit: Unit = Unit.CELSIUS) -> str:
    """Current weather in a city.

    Looks it up in a tiny table.

    Args:
        city: The city name,
            in English.
        unit: Temperature unit.
    """
    degrees = {"Paris": 18, "Oslo": 7}[city]
    if unit is Unit.FAHRENHEIT:
        degrees = degrees * 9 // 5 + 32
    return f"{degrees} degrees {unit.value} in {city}"


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


WEATHER_SCHEMA = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city name, in English."},
                "unit": {"type": "string", "enum": ["C", "F"], "description": "Temperature unit."},
            },
            "required": ["city"],
        },
    },
}


def test_type_hints_become_an_openai_tool_schema() -> None:
    def search(
        query: str,
        limit: int = 5,
        score: float = 0.5,
        exact: bool = False,
        tags: list[str] | None = None,
        filters: Optional[dict[str, int]] = None,  # noqa: UP045 - the typing spelling works too
        order: Literal["new", "old"] = "new",
        anything: Any = None,
        untyped=None,
    ) -> list[str]:
        """Search the notes."""
        return []

    assert function_schema(get_weather) == WEATHER_SCHEMA
    assert function_schema(search)["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "score": {"type": "number"},
            "exact": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "filters": {"type": "object", "additionalProperties": {"type": "integer"}},
            "order": {"type": "string", "enum": ["new", "old"]},
            "anything": {},
            "untyped": {"type": "string"},
        },
        "required": ["query"],
    }


def test_tools_that_cannot_be_described_are_refused_up_front() -> None:
    def takes_a_set_of_bytes(data: bytes) -> None:
        """No JSON schema for bytes."""

    def takes_kwargs(**options: str) -> None:
        """The model could not know the names."""

    with pytest.raises(InvalidValueError, match=r"takes_a_set_of_bytes\(data\)"):
        function_schema(takes_a_set_of_bytes)
    with pytest.raises(InvalidValueError, match=r"\*options"):
        function_schema(takes_kwargs)
    with pytest.raises(InvalidValueError, match="lambda"):
        function_schema(lambda x: x)


def test_tool_calls_round_trip_and_are_kept_in_the_history(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = tutor(session, server, tools=[get_weather])
    server.call(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo", "unit": "F"}))
    server.say("Paris 18 C, Oslo 44 F.")

    assert agent.chat("Weather in Paris and Oslo?") == "Paris 18 C, Oslo 44 F."

    first, second = server.requests
    assert first.body["tools"] == [WEATHER_SCHEMA] and "tool_choice" not in first.body
    calls = [
        {"id": "call_1_0", "type": "function", "function": {"name": "get_weather",
                                                             "arguments": '{"city": "Paris"}'}},
        {"id": "call_1_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Oslo", "unit": "F"}'}},
    ]  # fmt: skip
    turn = [
        user("Weather in Paris and Oslo?"),
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1_0", "content": "18 degrees C in Paris"},
        {"role": "tool", "tool_call_id": "call_1_1", "content": "44 degrees F in Oslo"},
    ]
    assert second.body["messages"] == [system(), *turn]
    assert unstamped(agent.history) == [*turn, assistant("Paris 18 C, Oslo 44 F.")]
    assert stored(session, agent) == agent.history

    agent.chat("Thanks!")  # the next turn re-sends the calls and their results
    assert server.last_messages() == [system(), *unstamped(agent.history[:5]), user("Thanks!")]
    assert tutor(open_session(), server, tools=[get_weather]).history == agent.history


def test_a_failing_tool_is_reported_to_the_model_not_raised(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server, tools=[divide])
    server.call(("divide", {"a": 1, "b": 0}))
    server.say("You cannot divide by zero.")

    assert agent.chat("What is 1/0?") == "You cannot divide by zero."
    result = server.last_messages()[-1]
    assert (result["role"], result["tool_call_id"]) == ("tool", "call_1_0")
    assert result["content"].startswith("Error: the tool 'divide' raised ZeroDivisionError: ")
    assert result["content"].endswith("division by zero")


def test_unknown_tools_and_bad_arguments_are_reported_to_the_model(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server, tools=[divide])
    bad_json = {"id": "c2", "type": "function", "function": {"name": "divide", "arguments": "{"}}
    server.queue(Reply.tool_calls(("launch_rockets", {}), bad_json, ("divide", {"a": 1})))
    server.say("Sorry.")
    agent.chat("Go")
    results = [m["content"] for m in server.last_messages() if m["role"] == "tool"]
    assert results[0] == "Error: there is no tool named 'launch_rockets'. Available tools: divide."
    assert results[1].startswith("Error: the arguments for 'divide' are not valid JSON")
    assert results[2].startswith("Error: the tool 'divide' raised TypeError:")
    assert "missing 1 required positional argument: 'b'" in results[2]


def test_tool_rounds_are_bounded(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server, tools=[divide], max_tool_rounds=2)
    for _ in range(3):  # a model that never stops calling tools, even when told not to
        server.call(("divide", {"a": 4, "b": 2}))

    reply = agent.chat("Divide forever")

    assert len(server.requests) == 3
    assert [r.body.get("tool_choice") for r in server.requests] == [None, None, "none"]
    assert reply.startswith("(I stopped after 2 rounds of tool calls")
    roles = [m["role"] for m in agent.history]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert "tool_calls" not in agent.history[-1]  # no call is left without its result


def test_a_failure_during_tool_rounds_keeps_nothing_of_the_turn(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    llm = {"base_url": server.url, "model": "test-model", "max_retries": 0}
    agent = tutor(open_session(), server, tools=[divide], llm=llm)
    server.call(("divide", {"a": 4, "b": 2}))
    server.fail(503, "overloaded")
    with pytest.raises(LLMUnavailableError):
        agent.chat("Divide")
    assert agent.history == []
    server.say("ok")
    agent.chat("Again")
    assert server.last_messages() == [system(), user("Again")]


async def double(n: int) -> int:
    """Double a number, asynchronously."""
    await asyncio.sleep(0)
    return n * 2


def test_async_tools_work_from_sync_chat(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server, tools=[double])
    server.call(("double", {"n": 21}))
    server.say("42")
    assert agent.chat("Double 21") == "42"
    assert server.last_messages()[-1]["content"] == "42"


# -- memory and knowledge ------------------------------------------------------------------


def test_memory_puts_the_sessions_context_into_the_prompt(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session(cls=RememberingSession)
    done(session.add_memory("The user's cat is called Miso."))
    agent = tutor(session, server)
    server.say("Miso!")

    agent.chat("What is my cat called?")

    assert session.context_calls == [("What is my cat called?", 3)]
    assert server.last_messages() == [
        system(f"{SYSTEM}\n\nRelevant context:\n• The user's cat is called Miso."),
        user("What is my cat called?"),
    ]


def test_memory_false_leaves_the_context_out(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session(cls=RememberingSession)
    done(session.add_memory("The user's cat is called Miso."))
    tutor(session, server, memory=False).chat("Hi")
    assert session.context_calls == []
    assert server.last_messages()[0] == system()


def test_knowledge_is_added_to_the_session_and_reaches_the_prompt(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session(cls=RememberingSession)
    agent = tutor(session, server, knowledge=["The office opens at 9."], context_items=2)
    tutor(session, server, knowledge=["The office opens at 9."], context_items=2)

    agent.chat("When does the office open?")

    assert session.sources == ["The office opens at 9."]  # added once
    assert session.context_calls == [("When does the office open?", 2)]
    assert server.last_messages()[0] == system(
        f"{SYSTEM}\n\nRelevant context:\n• The office opens at 9."
    )


def test_knowledge_without_memory_is_searched_directly(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session(cls=RememberingSession)
    agent = tutor(session, server, memory=False, knowledge=["Parking is free."])
    agent.chat("Is parking free?")
    assert session.context_calls == []
    assert server.last_messages()[0] == system(f"{SYSTEM}\n\nRelevant context:\n• Parking is free.")


def test_real_memory_a_stored_memory_reaches_the_prompt(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    done(session.add_memory("The user's cat is called Miso."))
    tutor(session, server).chat("What is my cat called?")
    prompt = server.last_messages()[0]["content"]
    assert prompt.startswith(f"{SYSTEM}\n\nRelevant context:\n")
    assert "The user's cat is called Miso." in prompt


def test_real_memory_knowledge_added_to_the_session_reaches_the_prompt(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = tutor(session, server, knowledge=["The office opens at 9 every weekday."])
    agent.chat("When does the office open?")
    prompt = server.last_messages()[0]["content"]
    assert prompt.startswith(f"{SYSTEM}\n\nRelevant context:\n")
    assert "The office opens at 9 every weekday." in prompt
    assert session.search_knowledge("office hours")[0]["text"] == (
        "The office opens at 9 every weekday."
    )


# -- configuration -------------------------------------------------------------------------


def test_settings_choose_the_endpoint_and_model(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    settings = {"llm_base_url": server.url, "llm_model": "from-settings", "llm_api_key": "sk-s"}
    session = open_session(settings=settings)
    session.Agent("Plain").chat("Hi")
    session.Agent("Named", llm="gpt-4o").chat("Hi")
    plain, named = server.requests
    assert plain.body["model"] == "from-settings"
    assert named.body["model"] == "gpt-4o"
    assert plain.headers["authorization"] == named.headers["authorization"] == "Bearer sk-s"


def test_a_dict_llm_sets_endpoint_key_and_request_fields(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    llm = {"model": "llama3.2", "base_url": server.url, "api_key": "sk-d", "temperature": 0}
    agent = open_session().Agent("Tutor", llm=llm)
    agent.chat("Hi")
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer sk-d"
    assert request.body == {
        "model": "llama3.2",
        "messages": [system(), user("Hi")],
        "temperature": 0,
    }
    assert agent.model == "llama3.2"


def test_the_environment_is_the_fallback(
    open_session: Callable[..., Session],
    server: ScriptedChatServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    open_session().Agent("Tutor").chat("Hi")
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer sk-env"
    assert request.body["model"] == "gpt-4o-mini"


def test_unknown_options_are_refused_and_praisonai_ones_accepted(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    with pytest.raises(TypeError, match=r"\['histroy_window'\]"):
        tutor(session, server, histroy_window=3)
    agent = tutor(session, server, verbose=True, goal="Teach maths", backstory="A patient tutor.")
    agent.chat("Hi")
    expected = f"{SYSTEM}\n\nYour goal: Teach maths\n\nA patient tutor."
    assert server.last_messages()[0] == system(expected)


def test_an_agent_spec_is_checked_once_frozen_and_reusable(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    llm = {"model": "test-model", "base_url": server.url, "api_key": "sk-test"}
    spec = AgentSpec("Tutor", "Maths tutor", None, None, False, True, llm, goal="Teach")
    assert spec.tools == () and spec.knowledge == () and spec.history_window == 20
    assert AgentSpec("Tutor", knowledge="notes.txt").knowledge == ("notes.txt",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(spec, "role", "Other")  # noqa: B010 - the point is that it is refused
    assert AgentSpec.of(spec) is spec
    assert AgentSpec.of("Tutor", role="Maths tutor", verbose=True) == AgentSpec(
        "Tutor", "Maths tutor"
    )
    for args, options, wording in (
        (("Tutor",), {"histroy_window": 3}, r"\['histroy_window'\]"),
        (("Tutor",), {"name": "Other"}, r"\['name'\] twice"),
        ((), {"role": "x"}, "needs a name"),
        (("Tutor", "r", None, None, True, None, None, "extra"), {}, "'extra'"),
        (("Tutor",), {"context_items": 0}, r"context_items must be an int >= 1, got 0"),
        (("Tutor",), {"history_window": True}, "history_window must be an int"),
        (("Tutor",), {"goal": 3}, "goal must be a str"),
        (("Tutor",), {"context_budget": 100}, "context_budget must be an int >= 256"),
        (("Tutor",), {"token_counter": 3}, "token_counter must be"),
    ):
        with pytest.raises(InvalidValueError, match=wording):
            AgentSpec.of(*args, **options)
    session = open_session()
    agent = session.Agent(spec)
    assert (agent.spec, agent.role, agent.memory, agent.knowledge) == (
        spec,
        "Maths tutor",
        False,
        [],
    )
    assert session.Agent(name="Tutor", role="Another role", llm=llm) is agent  # reconfigured
    assert agent.role == "Another role" and agent.spec.memory is True


# -- async, display, housekeeping ----------------------------------------------------------


def test_achat_in_async_code(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server)

    async def main() -> list[str]:
        return [await agent.achat("one"), await agent.achat("two")]

    assert asyncio.run(main()) == ["You said: one", "You said: two"]
    assert agent.turns == 2


def test_sync_chat_inside_a_running_loop_as_in_jupyter(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server)

    async def cell() -> str:
        return agent.chat("from a notebook cell")

    assert asyncio.run(cell()) == "You said: from a notebook cell"
    assert stored(agent.session, agent)[-1] == assistant("You said: from a notebook cell")


def test_repr_shows_name_model_and_turns(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = tutor(open_session(), server)
    agent.chat("Hi <there>")
    assert repr(agent) == "Agent(name='Tutor', model='test-model', turns=1)"
    page = agent._repr_html_()
    assert "<td style='text-align:left'>Tutor</td>" in page
    assert "test-model" in page and "Hi &lt;there&gt;" in page


def test_clear_history_forgets_in_the_store_too(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = tutor(session, server)
    agent.chat("secret")
    agent.clear_history()
    assert agent.history == [] and stored(session, agent) == []
    assert tutor(open_session(), server).history == []
