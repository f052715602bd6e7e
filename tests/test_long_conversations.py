"""Long conversations: every request within the budget, older turns summarised and recalled.

Against a real chat-completions server on 127.0.0.1 whose every request is recorded, on real
SQLite files (and every backend where records have to travel with a session).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from llm_server import Reply, ScriptedChatServer, echo_responder
from praisonsession import AsyncSession, InvalidValueError, Session, SessionBase, erase_user
from praisonsession._internal import runtime
from praisonsession.agents.compaction import (
    SUMMARY_PROMPT,
    extractive_summary,
    latest_summary,
    needs_compaction,
)
from praisonsession.agents.context_window import (
    DEFAULT_CONTEXT_BUDGET,
    default_budget,
    split_turns,
)
from praisonsession.agents.tokens import (
    CUT_MARKER,
    CachedCounter,
    EncodingCounter,
    EstimatedCounter,
    coerce_counter,
    cut_to_tokens,
    estimate_tokens,
    message_tokens,
)
from praisonsession.apps.cli import main as cli
from praisonsession.settings import Settings

DOCS = Path(__file__).resolve().parent.parent / "docs" / "pages"
SUMMARY_MARK = SUMMARY_PROMPT[:40]


def cl100k() -> EncodingCounter:
    bpe_openai = pytest.importorskip("bpe_openai")  # in the dev extra: exact cl100k_base tables
    return EncodingCounter(bpe_openai.get_encoding("cl100k_base"), "cl100k_base")


def is_summary_request(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and str(messages[0].get("content", "")).startswith(SUMMARY_MARK)


def summarizer(body: dict[str, Any]) -> str:
    """A model that follows our summary prompt: it keeps the user's sentences with a digit."""
    if not is_summary_request(body):
        return echo_responder(body)
    earlier, _, new = body["messages"][-1]["content"].partition("\n\nNew turns:\n")
    kept = [line[2:] for line in earlier.splitlines() if line.startswith("- ")]
    kept += re.findall(r"(?:^|\n)\[\d+\] user: ([^\n]*\d[^\n]*)", new)
    return "\n".join(f"- {line.removeprefix('user: ')}" for line in kept) or "- nothing to keep"


def chat_requests(server: ScriptedChatServer) -> list[dict[str, Any]]:
    return [r.body for r in server.chat_requests if not is_summary_request(r.body)]


def summary_requests(server: ScriptedChatServer) -> list[dict[str, Any]]:
    return [r.body for r in server.chat_requests if is_summary_request(r.body)]


def request_tokens(body: dict[str, Any], counter: Any) -> int:
    return sum(message_tokens(m, counter) for m in body["messages"])


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path}/s.db"


@pytest.fixture
def open_session(store_url: str, tmp_path: Path) -> Callable[..., Session]:
    opened: list[Session] = []

    def open_(session_id: str = "chat", **kw: Any) -> Session:
        kw.setdefault("settings", {"data_dir": str(tmp_path / "data")})
        session = Session(session_id, store=store_url, **kw)
        opened.append(session)
        return session

    yield open_
    for session in opened:
        session.close()


def agent_on(session: Session, server: ScriptedChatServer, **kw: Any) -> Any:
    kw.setdefault("memory", False)
    llm = {"base_url": server.url, "model": "test-model", "retry_backoff": 0.01, "max_retries": 0}
    return session.Agent("Tutor", llm=kw.pop("llm", llm), **kw)


# -- counting tokens ----------------------------------------------------------------------------


def test_the_estimate_is_within_ten_percent_of_cl100k_on_english_text() -> None:
    exact = cl100k()
    from benchmarks.long_conversation_data import conversation

    pages = [page for page in sorted(DOCS.glob("*.md")) if page.name != "api.md"]  # directives
    texts = {page.name: page.read_text(encoding="utf-8") for page in pages}
    texts["conversation"] = "\n".join(m["content"] for m in conversation(200, seed=3).messages)
    for name, text in texts.items():
        real = exact.count(text)
        assert abs(estimate_tokens(text) - real) <= 0.1 * real, name
    assert estimate_tokens("") == 0
    assert estimate_tokens("Hello world") == 2 == exact.count("Hello world")


def test_a_text_cut_to_a_token_count_ends_with_a_marker_saying_how_much_was_left_out() -> None:
    counter = EstimatedCounter()
    text = "word " * 400
    cut = cut_to_tokens(text, 50, counter)
    assert counter.count(cut) <= 50
    assert cut.endswith(CUT_MARKER.format(cut=len(text) - len(cut.split("\n[")[0])))
    assert cut_to_tokens("short", 50, counter) == "short"


def test_a_cut_keeps_the_longest_prefix_that_fits_as_a_full_bisection_finds_it() -> None:
    import random

    def bisected(text: str, room: int, counter: Any) -> int:
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if counter.count(text[:middle]) <= room:
                low = middle
            else:
                high = middle - 1
        return low

    rng = random.Random(7)
    words = [
        "alpha",
        "b",
        "1234567",
        "Ünïcödé",
        "!!!",
        "   ",
        "\n",
        "extraordinarily",
        "it's",
        "中文",
    ]
    counters = [EstimatedCounter(), CachedCounter(EstimatedCounter()), cl100k()]
    for trial in range(150):
        text = "".join(
            rng.choice(words) + rng.choice([" ", "", "  "]) for _ in range(rng.randint(1, 600))
        )
        for tokens in (3, 20, 90, 400):
            counter = counters[trial % 3]
            cut = cut_to_tokens(text, tokens, counter)
            if counter.count(text) <= tokens:
                assert cut == text
                continue
            marker = counter.count(CUT_MARKER.format(cut=len(text)))
            if tokens <= marker:
                continue
            kept = cut.rsplit("\n[… cut to fit", 1)[0]
            assert counter.count(cut) <= tokens and text.startswith(kept)
            if counter is not counters[2]:  # the estimate grows with every character added
                keep = bisected(text, tokens - marker, counter)
                assert cut == text[:keep] + CUT_MARKER.format(cut=len(text) - keep)


def test_a_cached_counter_counts_each_text_once_and_answers_like_the_counter() -> None:
    calls: list[str] = []

    def words(text: str) -> int:
        calls.append(text)
        return len(text.split())

    plain = EstimatedCounter()
    cached = CachedCounter(EncodingCounter(type("E", (), {"encode": staticmethod(str.split)}), "w"))
    texts = ["one two", "three", "one two", "four five six", "three"]
    assert [cached.count(t) for t in texts] == [2, 1, 2, 3, 1]
    assert cached.exact and cached.name == "w"
    counting = CachedCounter(coerce_counter(words), size=2)
    assert [counting.count(t) for t in [*texts, "one two"]] == [2, 1, 2, 3, 1, 2]
    assert calls == ["one two", "three", "four five six", "one two"]  # the oldest gave way
    estimated = CachedCounter(plain)
    sample = "Grace Hopper's compiler, 1952: 3 passes."
    assert estimated.count(sample) == plain.count(sample) == estimate_tokens(sample)
    assert not estimated.exact


def test_the_compaction_check_agrees_with_counting_every_turn() -> None:
    history: list[dict[str, Any]] = []
    for number in range(40):
        history.append({"role": "user", "content": f"question {number}"})
        if number % 3 == 0:
            history.append({"role": "assistant", "content": "", "tool_calls": []})
            history.append({"role": "tool", "tool_call_id": "c", "content": "x"})
        history.append({"role": "assistant", "content": f"answer {number}"})
    for covered in (0, 1, 7, 30):
        for window_start in (0, 5, 30, 61, len(history)):
            for every in (1, 3, 8, 50):
                turns = len(split_turns(history[covered:window_start]))
                expected = window_start > covered and turns >= every
                assert needs_compaction(history, covered, window_start, every) is expected


def test_a_token_counter_can_be_a_function_and_a_wrong_one_is_refused(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = agent_on(session, server, token_counter=lambda text: len(text.split()))
    assert agent.token_counter.count("a b c") == 3 and agent.token_counter.exact
    with pytest.raises(InvalidValueError, match="token_counter"):
        agent_on(session, server, token_counter=42)


# -- the budget ---------------------------------------------------------------------------------


def test_the_budget_comes_from_the_agent_then_the_settings_then_the_model(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    assert default_budget("gpt-4o-mini") == 32000
    assert default_budget("ollama/llama3") == 6144
    assert default_budget("my-own-model") == DEFAULT_CONTEXT_BUDGET
    assert Settings(context_budget=3000).context_budget == 3000
    agent = agent_on(open_session(), server)
    assert agent.context_budget == DEFAULT_CONTEXT_BUDGET  # "test-model" is not in the table
    tuned = agent_on(open_session("b", settings={"context_budget": 1500}), server)
    assert tuned.context_budget == 1500
    assert agent_on(open_session("c"), server, context_budget=900).context_budget == 900
    with pytest.raises(InvalidValueError, match="context_budget must be an int >= 256"):
        agent_on(open_session("d"), server, context_budget=10)


def test_every_request_fits_the_budget_and_the_raw_history_is_never_changed(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    server.responder = summarizer
    exact = cl100k()
    session = open_session()
    agent = agent_on(session, server, context_budget=600, history_window=None)
    said = []
    for i in range(70):
        text = f"Turn {i}: " + ("tell me more about the harbour and its boats. " * (1 + i % 7))
        said.append(text)
        agent.chat(text)
    requests = chat_requests(server)
    assert len(requests) == 70
    for body in requests:
        assert request_tokens(body, agent.token_counter) <= 600
        assert request_tokens(body, exact) <= 600  # the estimate's margin holds on real tokens
    # what the last request counts, counted when asked: the request that was sent
    assert agent.last_request.tokens == request_tokens(requests[-1], agent.token_counter)
    history = agent.history.to_list()
    assert [m["content"] for m in history if m["role"] == "user"] == said
    assert [m["content"] for m in history if m["role"] == "assistant"] == [
        f"You said: {text}" for text in said
    ]
    # nothing added to messages but when the user said each (never sent: see the requests)
    assert all(set(m) - {"metadata"} == {"role", "content"} for m in history)
    assert all(set(m.get("metadata", {})) <= {"said_at"} for m in history)
    assert all("metadata" not in m for body in requests for m in body["messages"])
    assert session.read_messages(agent.log_name) == history


def test_a_message_larger_than_the_budget_is_cut_with_a_marker_and_kept_whole_in_the_history(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = agent_on(open_session(), server, context_budget=400)
    huge = "The quick brown fox jumps over the lazy dog. " * 300
    server.say("Too long, but read.")
    assert agent.chat(huge) == "Too long, but read."
    (body,) = server.chat_requests
    sent = body.body["messages"][-1]["content"]
    assert sent.startswith("The quick brown fox") and "cut to fit the context budget" in sent
    assert request_tokens(body.body, agent.token_counter) <= 400
    assert agent.history[0]["content"] == huge
    # the next turn carries the long one cut too, never whole, and stays within budget
    agent.chat("And now?")
    assert request_tokens(server.chat_requests[-1].body, agent.token_counter) <= 400


# -- compaction ---------------------------------------------------------------------------------


def test_older_turns_are_folded_into_versioned_summary_records_one_call_per_compaction(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    server.responder = summarizer
    session = open_session()
    agent = agent_on(session, server, history_window=4, compact_every=5)
    agent.chat("My locker code is 4821.")
    for _ in range(30):
        agent.chat("Small talk about the weather.")
    records = agent.summaries.to_list()
    assert len(records) == len(summary_requests(server)) >= 4
    assert [r["version"] for r in records] == list(range(1, len(records) + 1))
    assert all(r["role"] == "summary" and r["method"] == "llm" for r in records)
    ends = [r["covers"][1] for r in records]
    assert ends == sorted(ends) and all(r["covers"][0] == 0 for r in records)
    assert all(agent.history[end]["role"] == "user" for end in ends)  # whole turns only
    assert "4821" in records[-1]["content"]
    # the request carries the newest summary; the raw log still holds every message
    system = chat_requests(server)[-1]["messages"][0]["content"]
    assert records[-1]["content"] in system and "4821" in system
    assert len(agent.history) == 62
    # the records are saved in the session's store, beside the history
    reread = open_session().Agent("Tutor", memory=False, llm=agent.llm)
    assert reread.summaries.to_list() == records
    assert session.read_messages(f"{agent.key}.summaries") == records


def test_a_summary_longer_than_asked_is_cut_so_requests_stay_bounded_and_turns_keep_numbers(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    # a model that ignores the word limit: it repeats the whole prompt back, so without a cap
    # each summary would hold the one before it and every request would grow
    server.responder = lambda body: (
        "- " + body["messages"][-1]["content"] if is_summary_request(body) else "ok"
    )
    agent = agent_on(open_session(), server, history_window=2, compact_every=2, context_budget=2000)
    counter = EstimatedCounter()
    limit = max(200, 2000 // 5)
    for i in range(40):
        agent.chat(f"Turn number {i} says hello.")
    records = agent.summaries.to_list()
    assert len(records) >= 8
    assert all(counter.count(r["content"]) <= limit for r in records)
    assert len(records) >= 12 and all(r["method"] == "llm" for r in records)
    assert all(r["content"].endswith("more characters …]") for r in records[-4:])
    # each record counts the turns it covers, and the next prompt numbers on from there
    assert [r["turns"] for r in records] == [
        sum(1 for m in agent.history[: r["covers"][1]] if m["role"] == "user") for r in records
    ]
    last = summary_requests(server)[-1]["messages"][-1]["content"]
    first_new = records[-2]["turns"] + 1
    assert f"[{first_new}] user: Turn number {first_new - 1} says hello." in last
    sizes = [request_tokens(body, counter) for body in chat_requests(server)[-10:]]
    assert max(sizes) - min(sizes) < 100


def test_a_failed_summary_call_leaves_an_extractive_summary_and_the_next_compaction_asks_again(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = agent_on(open_session(), server, history_window=2, compact_every=3)
    agent.chat("My name is Ada and my locker code is 4821.")
    for i in range(4):
        agent.chat(f"Nothing much {i}.")
    # the next turn compacts: the summary call fails (no retries), the turn still succeeds
    server.fail(503, "overloaded")
    server.say("Fine, thanks.")
    assert agent.chat("How are you?") == "Fine, thanks."
    (record,) = agent.summaries.to_list()
    assert record["method"] == "extractive" and record["error"] == "LLMUnavailableError"
    assert "- user: My name is Ada and my locker code is 4821." in record["content"]
    assert record["content"] in server.chat_requests[-1].body["messages"][0]["content"]
    # the next compaction asks the model again, from the extractive summary
    server.responder = summarizer
    for i in range(3):
        agent.chat(f"Still nothing {i}.")
    second = agent.summaries[-1]
    assert second["method"] == "llm" and second["version"] == 2
    assert "4821" in second["content"]
    assert "locker code is 4821" in summary_requests(server)[-1]["messages"][-1]["content"]


def test_the_extractive_summary_is_deterministic_and_keeps_what_states_something() -> None:
    counter = EstimatedCounter()
    messages = [
        {"role": "user", "content": "Hi there. My cat is called Tom. It rains."},
        {"role": "assistant", "content": "My answer has 3 numbers 1 2."},
        {"role": "user", "content": "Actually, my cat is called Tim now!"},
    ]
    first = extractive_summary("", messages, counter, 200)
    assert first == extractive_summary("", messages, counter, 200)
    assert first == "- user: My cat is called Tom.\n- user: Actually, my cat is called Tim now!"
    assert counter.count(extractive_summary("", messages * 50, counter, 12)) <= 12


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def assert_tool_calls_travel_with_their_results(messages: list[dict[str, Any]]) -> None:
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in pending, "a result without its call"
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, "a call without its result"
        for call in message.get("tool_calls") or ():
            pending.add(call["id"])
    assert not pending, "a call without its result"


def test_a_tool_call_and_its_result_are_never_separated_by_the_window_or_compaction(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    server.responder = summarizer
    agent = agent_on(
        open_session(), server, tools=[add], history_window=3, compact_every=2, context_budget=500
    )
    for i in range(24):
        if i % 2 == 0:
            server.queue(Reply.tool_calls(("add", {"a": i, "b": 1}), ("add", {"a": i, "b": 2})))
            server.say(f"{i} + 1 = {i + 1}")
        agent.chat(f"Question {i}: " + "what is the sum? " * (i % 5))
    for body in chat_requests(server):
        assert_tool_calls_travel_with_their_results(body["messages"])
        schemas = agent.token_counter.count(json.dumps(body["tools"]))
        assert request_tokens(body, agent.token_counter) + schemas <= 500  # tools count too
    assert len(agent.summaries) >= 5
    history = agent.history.to_list()
    for record in agent.summaries:  # a summary always ends where a turn starts
        assert history[record["covers"][1]]["role"] == "user"


def test_a_pending_tool_call_never_blocks_compaction(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    server.responder = summarizer
    session = open_session()
    agent = agent_on(session, server, history_window=2, compact_every=2)
    agent.chat("My locker code is 4821.")
    # another program left a turn whose tool call never got its result (it crashed)
    session.append_messages(
        agent.log_name,
        [
            {"role": "user", "content": "Book the room 12."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "book", "arguments": "{}"},
                    }
                ],
            },
        ],
    )
    for i in range(12):
        agent.chat(f"Chat {i}.")
    for body in chat_requests(server):
        assert_tool_calls_travel_with_their_results(body["messages"])
    ends = [record["covers"][1] for record in agent.summaries]
    assert len(ends) >= 4 and ends[-1] > 4  # compaction went on past the pending call
    assert "room 12" in agent.summaries[-1]["content"]
    assert agent.history[3]["tool_calls"][0]["id"] == "c1"  # the raw log keeps it


# -- recall ---------------------------------------------------------------------------------------


def test_an_early_fact_comes_back_when_asked_and_a_corrected_one_in_its_latest_value(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    agent = agent_on(open_session(), server, memory=True, history_window=4, context_budget=1500)
    agent.chat("My locker code is 4821.")
    agent.chat("My sister is called Maren.")
    for i in range(40):
        agent.chat(f"Let us talk about sailing, lesson {i}, knots and winds.")
        if i == 20:
            agent.chat("Correction: my locker code changed, it is now 7305.")
    agent.chat("What is my locker code?")
    system = server.chat_requests[-1].body["messages"][0]["content"]
    assert "7305" in system
    assert system.index("4821") < system.index("7305")  # oldest first: the latest reads last
    assert agent.last_request.recalled >= 2
    agent.chat("What is my sister called?")
    assert "Maren" in server.chat_requests[-1].body["messages"][0]["content"]


def test_a_fork_recalls_from_its_own_history(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    agent = agent_on(session, server, memory=True, history_window=2)
    agent.chat("My favourite colour is teal.")
    for i in range(6):
        agent.chat(f"Filler {i} about trains.")
    child = session.fork("child")
    forked = agent_on(child, server, memory=True, history_window=2)
    forked.chat("What is my favourite colour?")
    assert "teal" in server.chat_requests[-1].body["messages"][0]["content"]


def test_without_memory_the_request_holds_the_summary_and_recent_turns_only(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    server.responder = summarizer
    agent = agent_on(open_session(), server, memory=False, history_window=2, compact_every=2)
    agent.chat("My locker code is 4821.")
    for i in range(5):
        agent.chat(f"Filler {i}.")
    agent.chat("What is my locker code?")
    system = server.chat_requests[-1].body["messages"][0]["content"]
    assert "Earlier turns related" not in system
    assert "4821" in system  # through the summary


# -- records travel with the session ----------------------------------------------------------


@pytest.fixture
def backend_sessions(store: SessionBase) -> Callable[..., Session]:
    def open_(session_id: str = "s", user_id: str = "u", **options: Any) -> Session:
        return Session(session_id, user_id, store=store, **options)

    return open_


def test_summary_and_usage_records_travel_with_forks_snapshots_restores_and_archives(
    backend_sessions: Callable[..., Session], server: ScriptedChatServer, tmp_path: Path
) -> None:
    server.responder = summarizer
    parent = backend_sessions("parent")
    agent = agent_on(parent, server, history_window=2, compact_every=2)
    agent.chat("My locker code is 4821.")
    for i in range(6):
        agent.chat(f"Filler {i}.")
    records = agent.summaries.to_list()
    usage = parent.usage()
    assert len(records) >= 2

    child = parent.fork("child")
    assert agent_on(child, server).summaries.to_list() == records
    assert child.usage() == usage
    # a fork cut early keeps the records, and uses only the ones that end before the cut
    early = parent.fork("early", at_message=(agent, 6))
    cut = agent_on(early, server)
    assert cut.summaries.to_list() == records
    assert latest_summary(records, 6)["covers"][1] <= 6
    assert early.usage()["session"]["turns"] == 3

    snapshot = parent.snapshot("before")
    agent.clear_history()
    assert agent.summaries.to_list() == []
    parent.restore(snapshot)
    assert agent_on(backend_sessions("parent"), server).summaries.to_list() == records

    archive = tmp_path / "parent.psar"
    parent.export(archive)
    imported = Session.import_archive(archive, store=parent.store, session_id="imported")
    assert agent_on(imported, server).summaries.to_list() == records
    assert imported.usage() == usage


def test_erasing_a_user_erases_their_summaries(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    server.responder = summarizer
    session = open_session("mine", user_id="ada")
    agent = agent_on(session, server, history_window=1, compact_every=1)
    for i in range(4):
        agent.chat(f"My number {i} is {i * 11}.")
    assert len(agent.summaries) >= 2
    log = f"{agent.key}.summaries"
    erase_user("ada", store=session.store)
    assert runtime.run(session.store.read_messages("mine", "ada", log)) == []


# -- usage --------------------------------------------------------------------------------------


def test_usage_is_kept_per_turn_and_totalled_per_agent_and_session(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    session = open_session()
    tutor = agent_on(session, server, tools=[add])
    server.queue(Reply.tool_calls(("add", {"a": 1, "b": 2})))
    server.say("3")
    tutor.chat("1 + 2?")
    tutor.chat("Thanks.")
    other = session.Agent("Other ✓", memory=False, llm=tutor.llm)
    other.chat("Hello there")
    reported = [r.body for r in server.chat_requests]
    assert len(reported) == 4
    records = session.read_messages(f"{tutor.key}.usage")
    assert [(r["turn"], r["requests"]) for r in records] == [(0, 2), (4, 1)]
    totals = session.usage()
    assert totals["agents"]["Tutor"]["turns"] == 2
    assert totals["agents"]["Tutor"]["requests"] == 3
    assert totals["agents"]["Other ✓"]["requests"] == 1
    assert totals["session"]["requests"] == 4
    assert totals["session"]["total_tokens"] == sum(
        totals["agents"][name]["total_tokens"] for name in ("Tutor", "Other ✓")
    )
    assert totals["session"]["prompt_tokens"] > 0

    async def from_async() -> dict[str, Any]:
        async with AsyncSession("chat", store=session.store) as core:
            return await core.usage()

    assert runtime.run(from_async()) == totals


def test_show_prints_summaries_and_usage(
    open_session: Callable[..., Session], server: ScriptedChatServer, store_url: str
) -> None:
    server.responder = summarizer
    session = open_session()
    agent = agent_on(session, server, history_window=1, compact_every=1)
    for i in range(3):
        agent.chat(f"My number {i} is {i * 11}.")
    runner = CliRunner()
    shown = runner.invoke(cli, ["show", "chat", "--store", store_url])
    assert shown.exit_code == 0, shown.output
    assert "Summaries" in shown.output and "covers messages 0-" in shown.output
    assert "Usage" in shown.output and "Tutor" in shown.output
    as_json = json.loads(
        runner.invoke(cli, ["show", "chat", "--store", store_url, "--json"]).output
    )
    assert as_json["usage"] == session.usage()
    assert as_json["summaries"]["Tutor"][-1] == agent.summaries[-1]


def test_a_recall_during_background_indexing_embeds_no_turn_twice(store_url: str) -> None:
    from praisonsession.recall.embeddings.minilm import MiniLMEmbedder
    from praisonsession.recall.memory.turns import TurnIndex

    embedded: list[str] = []

    class Counting(MiniLMEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            embedded.extend(texts)
            return super().embed(texts)

    async def race() -> tuple[list[int], int, list[str]]:
        async with AsyncSession("turns", store=store_url) as core:
            messages = []
            for number in range(12):
                messages.append({"role": "user", "content": f"my locker is number {number}"})
                messages.append({"role": "assistant", "content": f"noted: {number}"})
            await core.append_messages("talk", messages)
            embedder = Counting()
            turns = TurnIndex(core, embedder)
            counts = await asyncio.gather(turns.index("talk", 24), turns.index("talk", 20))
            again = await turns.index("talk", 24)
            assert len(embedder.embed(["probe"])[0]) == 384  # the real model ran
            del embedded[-1]
            return list(counts), again, embedded

    counts, again, embedded = runtime.run(race())
    assert counts == [12, 12] and again == 12  # the second waited and found them indexed
    assert len(embedded) == 12 and len(set(embedded)) == 12  # each turn embedded once


def test_turn_recall_ranks_like_a_full_scan_across_index_growth(store_url: str) -> None:
    from praisonsession.recall.embeddings.minilm import MiniLMEmbedder
    from praisonsession.recall.memory.turns import TurnIndex

    topics = ["sailing knots", "my locker code 4821", "baking bread", "train timetables"]

    async def run() -> tuple[list[int], list[int], list[int]]:
        async with AsyncSession("turns", store=store_url) as core:
            embedder = MiniLMEmbedder()
            turns = TurnIndex(core, embedder)
            messages: list[dict[str, Any]] = []
            for number in range(150):  # past the first matrix (64 rows) twice
                topic = topics[number % len(topics)]
                messages.append({"role": "user", "content": f"turn {number}: {topic}"})
                messages.append({"role": "assistant", "content": f"noted {number}"})
                if number in (40, 100):  # indexed in three steps, as a conversation grows
                    await core.append_messages("talk", messages)
                    await turns.index("talk", 2 * (number + 1))
                    messages = []
            await core.append_messages("talk", messages)
            query = embedder.embed_query("what is my locker code?")
            found = await turns.search("talk", query, 200, 5, 0.0)
            early = await turns.search("talk", query, 21, 5, 0.0)  # only turns before 21
            # the same ranking by a scan of every turn (by what the user said), newest first
            texts = [f"turn {n}: {topics[n % 4]}" for n in range(100)]
            vectors = embedder.embed(texts)
            scores = [sum(a * b for a, b in zip(v, query, strict=True)) for v in vectors]
            best = sorted(range(100), key=lambda n: (-round(scores[n], 5), -n))[:5]
            return [start for start, _ in found], [start for start, _ in early], sorted(best)

    found, early, best = runtime.run(run())
    assert found == [2 * n for n in best]  # oldest first, as a request shows them
    assert all((start // 2) % 4 == 1 for start in found)  # every one about the locker
    assert early and all(start < 21 for start in early)


def test_a_long_chat_embeds_each_turn_once_reusing_its_query_and_batches_the_rest(
    open_session: Callable[..., Session], server: ScriptedChatServer
) -> None:
    from praisonsession.recall.embeddings.minilm import MiniLMEmbedder

    batches: list[list[str]] = []
    queries: list[str] = []

    class Counting(MiniLMEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            batches.append(list(texts))
            return super().embed(texts)

        def embed_query(self, text: str) -> list[float]:
            queries.append(text)
            return super().embed_query(text)

    session = open_session(memory_config={"embedder": Counting()})
    agent = agent_on(session, server, memory=True, history_window=6)
    said = ["My bike lock code is 5590."] + [f"Chatting about rivers, part {i}." for i in range(60)]
    for message in said:
        agent.chat(message)
    agent.chat("What is my bike lock code?")
    assert "5590" in server.chat_requests[-1].body["messages"][0]["content"]
    embedded = [text for batch in batches for text in batch] + queries
    assert len(embedded) == len(set(embedded))  # no text twice: a turn's query is its vector
    assert set(embedded) <= {*said, "What is my bike lock code?"}  # what the user said
    # the turns said before recall started come in batches, not one call each
    assert 0 < len(batches) <= 3 and len(queries) >= 50
