"""The session browser shows each framework's sessions in that framework's terms: a LangGraph
thread's checkpoints with their channel values decoded by LangGraph's serde (its messages as a
conversation), ADK events and OpenAI Agents SDK items as a conversation with their tool calls
and results labelled; never base64. Real runs of each framework fill a real SQLite file, the
browser (``praisonsession ui``) serves it from a subprocess, its JSON API is read, and Chromium
shows each."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
import requests
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from google.adk.agents import LlmAgent
from google.adk.runners import Runner as AdkRunner
from google.genai import types
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from selenium.webdriver.common.by import By

from adk_workers import NoteTaker, take_note
from chromium import ERROR_TRAP, chromium, script_errors
from praisonsession.apps.ui.framework_views import FRAMEWORK_LOGS
from praisonsession.integrations.adk import EVENTS_LOG, PraisonSessionService
from praisonsession.integrations.langgraph import PraisonSaver
from praisonsession.integrations.langgraph_threads import CHECKPOINTS
from praisonsession.integrations.openai_agents import LOG_NAME, PraisonSession
from ui_page import open_view
from ui_server import UIServer

pytestmark = pytest.mark.timeout(300)

ADK_SESSION = "adk:9:notes_app:day-1"  # session_record_id("notes_app", "day-1")


class Chat(TypedDict):
    messages: Annotated[list[Any], add_messages]
    topic: str


def _weather_bot(state: Chat) -> dict[str, Any]:
    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "lg-call-1"}
    return {
        "messages": [
            AIMessage("", tool_calls=[call]),
            ToolMessage("Sunny in Paris", tool_call_id="lg-call-1", name="get_weather"),
            AIMessage("It is sunny in Paris."),
        ],
        "topic": "weather",
    }


def _langgraph_thread(url: str) -> None:
    builder = StateGraph(Chat)
    builder.add_node("bot", _weather_bot)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    with PraisonSaver(url, user_id="ann") as saver:
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "lg-trip"}}
        graph.invoke({"messages": [("user", "Weather in Paris?")]}, config)


async def _adk_session(url: str) -> None:
    service = PraisonSessionService(url)
    agent = LlmAgent(name="notes", model=NoteTaker(), tools=[take_note])
    runner = AdkRunner(agent=agent, app_name="notes_app", session_service=service)
    await service.create_session(app_name="notes_app", user_id="ada", session_id="day-1")
    message = types.Content(role="user", parts=[types.Part(text="Buy green tea")])
    async for _ in runner.run_async(user_id="ada", session_id="day-1", new_message=message):
        pass
    await service.close()


async def _openai_conversation(url: str) -> None:
    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    script = [
        [function_call("get_weather", {"city": "Paris"}, call_id="oa-call-1")],
        [assistant_message("It is sunny in Paris.")],
    ]
    agent = Agent(name="Assistant", model=ScriptedModel(script), tools=[get_weather])
    session = PraisonSession("oa-trip", user_id="bob", store=url)
    await Runner.run(agent, "What is the weather in Paris?", session=session)
    session.close()


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('ui-frameworks') / 'frameworks.db'}"
    _langgraph_thread(url)
    asyncio.run(_adk_session(url))
    asyncio.run(_openai_conversation(url))
    return url


@pytest.fixture(scope="module")
def ui(url: str) -> Iterator[UIServer]:
    with UIServer(url) as server:
        yield server


def read(ui: UIServer, user: str, session: str, log: str) -> dict[str, Any]:
    params = {"user": user, "id": session, "log": log}
    answer = requests.get(ui.base_url + "/api/messages", params=params, timeout=30)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def parts(entries: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [part for entry in entries for part in entry["parts"] if part["kind"] == kind]


def test_the_views_know_the_logs_the_adapters_keep() -> None:
    assert FRAMEWORK_LOGS == {
        CHECKPOINTS: "langgraph",
        EVENTS_LOG: "adk",
        LOG_NAME: "openai-agents",
    }


def test_a_langgraph_thread_is_its_checkpoints_with_values_decoded(ui: UIServer) -> None:
    page = read(ui, "ann", "lg-trip", CHECKPOINTS)
    assert page["framework"] == "langgraph" and page["notice"] is None
    assert "msgpack" not in json.dumps(page)  # no typed bytes, no base64
    checkpoints = page["messages"]
    assert [c["title"] for c in checkpoints] == ["input step -1", "loop step 0", "loop step 1"]
    assert {c["role"] for c in checkpoints} == {"checkpoint"}
    last = checkpoints[-1]
    assert last["details"]["metadata"]["step"] == 1
    assert sorted(last["details"]["updated_channels"]) == ["messages", "topic"]
    channels = {part["label"]: part for part in last["parts"]}
    assert channels["topic"] == {"kind": "value", "label": "topic", "value": "weather"}
    conversation = channels["messages"]
    assert conversation["kind"] == "conversation"
    roles = [message["role"] for message in conversation["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    user, call, result, answer = conversation["messages"]
    assert user["parts"] == [{"kind": "text", "text": "Weather in Paris?"}]
    assert call["parts"] == [
        {
            "kind": "function_call",
            "name": "get_weather",
            "arguments": {"city": "Paris"},
            "call_id": "lg-call-1",
        }
    ]
    assert result["parts"] == [
        {
            "kind": "function_call_output",
            "name": "get_weather",
            "output": "Sunny in Paris",
            "call_id": "lg-call-1",
        }
    ]
    assert answer["parts"] == [{"kind": "text", "text": "It is sunny in Paris."}]


def test_without_langgraph_a_checkpoint_says_why_it_is_not_decoded(url: str) -> None:
    """The browser where LangGraph cannot be imported (a real ImportError: the package is
    hidden from a fresh interpreter) names the install line, and shows no bytes."""
    script = f"""
import asyncio, json, sys
sys.modules["langgraph"] = None  # import langgraph... raises ImportError
from praisonsession.apps.ui.browse import SessionBrowser
from praisonsession.stores.urls import open_store
page = asyncio.run(SessionBrowser(open_store({url!r})).messages("ann", "lg-trip", {CHECKPOINTS!r}))
print(json.dumps(page))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    page = json.loads(done.stdout)
    assert page["notice"].startswith("LangGraph is not installed where the browser runs: pip ")
    assert '".[langgraph]"' in page["notice"]
    assert "msgpack" not in done.stdout
    messages = parts(page["messages"], "undecodable")
    assert {part["label"] for part in messages} >= {"messages", "topic"}
    assert {part["reason"] for part in messages} == {page["notice"]}
    assert parts(page["messages"], "value") == []


def test_adk_events_are_a_conversation_with_the_tool_call_labelled(ui: UIServer) -> None:
    page = read(ui, "ada", ADK_SESSION, EVENTS_LOG)
    assert page["framework"] == "adk"
    events = page["messages"]
    assert [(e["role"], e["author"]) for e in events] == [
        ("user", "user"),
        ("assistant", "notes"),
        ("tool", "notes"),
        ("assistant", "notes"),
    ]
    assert events[0]["parts"] == [{"kind": "text", "text": "Buy green tea"}]
    (call,) = events[1]["parts"]
    (result,) = events[2]["parts"]
    assert call["kind"] == "function_call" and call["name"] == "take_note"
    assert call["arguments"] == {"note": "Buy green tea"}
    assert result["kind"] == "function_call_output" and result["name"] == "take_note"
    assert result["call_id"] == call["call_id"] and result["call_id"]
    assert result["output"]["noted"] == "Buy green tea"
    assert events[2]["details"]["actions"]["state_delta"]["user:last_note"] == "Buy green tea"
    assert events[3]["parts"] == [{"kind": "text", "text": "Noted: Buy green tea"}]


def test_openai_items_are_a_conversation_with_the_function_call_labelled(ui: UIServer) -> None:
    page = read(ui, "bob", "oa-trip", LOG_NAME)
    assert page["framework"] == "openai-agents"
    items = page["messages"]
    assert [i["role"] for i in items] == ["user", "assistant", "tool", "assistant"]
    assert "?" not in [i["role"] for i in items]
    assert items[1]["parts"] == [
        {
            "kind": "function_call",
            "name": "get_weather",
            "arguments": {"city": "Paris"},
            "call_id": "oa-call-1",
        }
    ]
    assert items[2]["parts"] == [
        {
            "kind": "function_call_output",
            "name": "get_weather",  # found from the call it answers
            "output": "Sunny in Paris",
            "call_id": "oa-call-1",
        }
    ]
    assert items[3]["parts"] == [{"kind": "text", "text": "It is sunny in Paris."}]


def test_another_log_keeps_its_plain_view(ui: UIServer) -> None:
    page = read(ui, "ann", "lg-trip", "langgraph.writes")
    assert "framework" not in page
    assert page["messages"][0]["role"] == "writes"


# -- in Chromium ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as session:
        session.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": ERROR_TRAP})
        yield session


def shown(browser: Any, ui: UIServer, route: str) -> Any:
    """The log's messages, once the page has drawn this route (not the one it showed before)."""
    open_view(browser, ui.page_url + "#/log/" + route + "/1")
    assert browser.find_elements(By.ID, "error") == []
    return browser.find_element(By.ID, "messages")


def test_chromium_shows_a_langgraph_thread_decoded(ui: UIServer, browser: Any) -> None:
    messages = shown(browser, ui, "ann/lg-trip/langgraph.checkpoints")
    text = messages.text
    assert "loop step 1" in text and "msgpack" not in text
    assert "LangGraph" in browser.find_element(By.ID, "framework").text
    last = messages.find_elements(By.CSS_SELECTOR, ":scope > .entry")[-1]
    conversation = last.find_element(By.CSS_SELECTOR, ".conversation[data-channel='messages']")
    roles = [r.text for r in conversation.find_elements(By.CSS_SELECTOR, ".entry .role")]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = conversation.find_element(By.CSS_SELECTOR, ".function-call")
    assert "get_weather" in call.text and '"city": "Paris"' in call.text
    assert "lg-call-1" in call.text
    output = conversation.find_element(By.CSS_SELECTOR, ".function-output")
    assert "Sunny in Paris" in output.text and "function_call_output" in output.text
    topic = last.find_element(By.CSS_SELECTOR, ".value[data-channel='topic']")
    assert topic.text.splitlines() == ["topic", "weather"]
    assert script_errors(browser) == []


def test_chromium_shows_adk_events_and_openai_items_as_conversations(
    ui: UIServer, browser: Any
) -> None:
    for route, call_text in [
        (f"ada/{ADK_SESSION}/adk.events", '"note": "Buy green tea"'),
        ("bob/oa-trip/openai.items", '"city": "Paris"'),
    ]:
        messages = shown(browser, ui, route)
        roles = [r.text for r in messages.find_elements(By.CSS_SELECTOR, ".entry .role")]
        assert roles == ["user", "assistant", "tool", "assistant"]
        assert "?" not in roles
        call = messages.find_element(By.CSS_SELECTOR, ".function-call")
        assert call.text.startswith("function_call ") and call_text in call.text
        output = messages.find_element(By.CSS_SELECTOR, ".function-output")
        assert output.text.startswith("function_call_output ")
    assert script_errors(browser) == []


def test_chromium_keeps_the_plain_view_for_other_logs(ui: UIServer, browser: Any) -> None:
    messages = shown(browser, ui, "ann/lg-trip/langgraph.writes")
    assert messages.find_elements(By.CSS_SELECTOR, ".message")
    assert messages.find_elements(By.CSS_SELECTOR, ".entry") == []
    assert browser.find_elements(By.ID, "framework") == []
