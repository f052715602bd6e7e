"""An agent's recall of older turns ranks as ``search_memory`` does: by meaning and by words.

The turns' terms are saved beside their vectors (``$turns/<log>``), so a resumed index splits
none of them again; with an encryption key the saved terms are keyed hashes, and a rekey makes
them once more under the new key. Real model, real SQLite files, a real agent against the
scripted chat server.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import pytest

from llm_server import ScriptedChatServer
from praisonsession import AsyncSession, Session, clock
from praisonsession._internal import runtime
from praisonsession.agents.context_window import RECALL_HEADER
from praisonsession.recall.embeddings import MiniLMEmbedder
from praisonsession.recall.memory.turn_vectors import PREFIX
from praisonsession.recall.memory.turns import TurnIndex
from praisonsession.recall.vectors.terms import Terms

KEY = base64.urlsafe_b64encode(b"k" * 32).decode()
OTHER_KEY = base64.urlsafe_b64encode(b"o" * 32).decode()
LOG = "agent:Tutor.history"
#: Twelve turns about a concert hall whose name is close in meaning to a friend's, twelve
#: about a garden, and one lunch with the friend: the question names the friend.
CONCERTS = [f"The Zephyr Hall concert was packed on night {i}, what a show." for i in range(12)]
GARDEN = [f"Talking about my garden again, the tomatoes are growing, day {i}." for i in range(12)]
LUNCH = "Lunch with Zephyrine today, we had noodles near the station."
SAID = [*CONCERTS, *GARDEN[:2], LUNCH, *GARDEN[2:]]
TARGET = 2 * SAID.index(LUNCH)  # where the lunch's turn starts in the log
QUESTION = "What did Zephyrine think of the concert?"


class Counting(Terms):
    """Terms that record which texts they split (the question's included)."""

    def __init__(self, key: bytes | None = None) -> None:
        super().__init__(key)
        self.split: list[str] = []

    def of(self, text: str) -> list[str]:
        self.split.append(text)
        return super().of(text)


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def turns_of(texts: list[str]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for text in texts:
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
    return messages


def run_on(core: AsyncSession, work: Any) -> Any:
    async def opened() -> Any:
        async with core:
            return await work(core)

    return runtime.run(opened())


def starts(hits: list[tuple[int, Any]]) -> list[int]:
    return [start for start, _ in hits]


def test_a_turn_that_shares_the_questions_rare_word_is_recalled_where_meaning_alone_misses_it(
    tmp_path: Path, model: MiniLMEmbedder
) -> None:
    async def work(core: AsyncSession) -> tuple[list[int], list[int]]:
        await core.append_messages(LOG, turns_of(SAID))
        index = TurnIndex(core, model)
        vector = model.embed_query(QUESTION)
        by_meaning = await index.search(LOG, vector, 2 * len(SAID), 3, 0.25)  # no words
        both = await index.search(LOG, vector, 2 * len(SAID), 3, 0.25, query=QUESTION)
        return starts(by_meaning), starts(both)

    by_meaning, both = run_on(AsyncSession("s", "u", store=f"sqlite:///{tmp_path}/s.db"), work)
    assert len(by_meaning) == 3 and TARGET not in by_meaning  # three concert nights
    assert all(start < 2 * len(CONCERTS) for start in by_meaning)
    assert TARGET in both and len(both) == 3
    assert both == sorted(both)  # oldest first, as a request shows them


def test_a_resumed_index_reads_the_saved_terms_and_splits_only_the_question(
    tmp_path: Path, model: MiniLMEmbedder
) -> None:
    url = f"sqlite:///{tmp_path}/s.db"

    async def work(core: AsyncSession) -> tuple[list[str], list[str], list[int], list[int]]:
        await core.append_messages(LOG, turns_of(SAID))
        first = Counting()
        await TurnIndex(core, model, terms=first).index(LOG, 2 * len(SAID))
        second = Counting()
        resumed = TurnIndex(core, model, terms=second)  # as a new process holds it
        vector = model.embed_query(QUESTION)
        found = await resumed.search(LOG, vector, 2 * len(SAID), 3, 0.25, query=QUESTION)
        afresh = TurnIndex(core, model, save=False)
        expected = await afresh.search(LOG, vector, 2 * len(SAID), 3, 0.25, query=QUESTION)
        return first.split, second.split, starts(found), starts(expected)

    first, second, found, expected = run_on(AsyncSession("s", "u", store=url), work)
    assert first == SAID  # each turn split once, by what the user said
    assert second == [QUESTION]
    assert found == expected and TARGET in found
    records = Session("s", "u", store=url).read_messages(PREFIX + LOG)
    assert len(records) == 1 and records[0]["lexicon"] == "words"
    assert records[0]["terms"][SAID.index(LUNCH)] == "lunch zephyrin today noodl near stat"


def test_an_encrypted_sessions_turn_terms_are_keyed_hashes_made_again_after_a_rekey(
    tmp_path: Path,
) -> None:
    from praisonsession.session.rotation import rekey
    from praisonsession.stores import open_store

    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    settings = {"data_dir": str(tmp_path / "data")}

    def sealed(key: str) -> AsyncSession:
        return AsyncSession("s", "u", store=url, settings={**settings, "encryption_key": key})

    async def write(core: AsyncSession) -> list[dict[str, Any]]:
        await core.append_messages(LOG, turns_of(SAID))
        assert await core.index_turns(LOG, 2 * len(SAID)) == len(SAID)
        return await core.read_messages(PREFIX + LOG)

    async def recall(core: AsyncSession) -> tuple[list[int], list[dict[str, Any]]]:
        found = await core.recall_turns(LOG, QUESTION, 2 * len(SAID), 3)
        return starts(found), await core.read_messages(PREFIX + LOG)

    records = run_on(sealed(KEY), write)
    terms = " ".join(records[0]["terms"]).split()
    assert len(records) == 1 and len(terms) > 3 * len(SAID)
    assert all(term.startswith("h") and len(term) == 17 for term in terms)  # no word
    assert not {"zephyrine", "lunch", "concert", "garden"} & set(terms)
    assert records[0]["lexicon"] != "words"

    found, after = run_on(sealed(KEY), recall)  # a new process: nothing saved again
    assert TARGET in found and len(after) == 1

    plain = open_store(url)
    rekey(KEY, OTHER_KEY, plain, vector_store=None)
    runtime.run(plain.close())
    found_again, rekeyed = run_on(sealed(OTHER_KEY), recall)
    assert found_again == found
    assert len(rekeyed) == 2  # the terms made once under the new key, saved beside
    new_terms = set(" ".join(rekeyed[1]["terms"]).split())
    assert rekeyed[1]["lexicon"] not in ("words", records[0]["lexicon"])
    assert not new_terms & set(terms)  # other hashes: the old key's say nothing now
    _, still = run_on(sealed(OTHER_KEY), recall)
    assert len(still) == 2  # and the next process splits none of them


def test_an_agent_puts_back_the_older_turn_that_names_what_it_is_asked_about_with_its_time(
    tmp_path: Path, server: ScriptedChatServer, frozen_clock: clock.ManualClock
) -> None:
    session = Session(
        "chat", store=f"sqlite:///{tmp_path}/s.db", settings={"data_dir": str(tmp_path / "data")}
    )
    llm = {"base_url": server.url, "model": "test-model", "retry_backoff": 0.01, "max_retries": 0}
    agent = session.Agent("Tutor", llm=llm, memory=True, history_window=2, recall_turns=2)
    first = frozen_clock.advance(0)
    for text in SAID:
        agent.chat(text)
        frozen_clock.advance(3600)  # a turn an hour
    agent.chat(QUESTION)
    lunch = first + 3600 * SAID.index(LUNCH)
    saved = session.read_messages(agent.log_name)
    assert saved[TARGET] == {"role": "user", "content": LUNCH, "metadata": {"said_at": lunch}}
    assert [m["metadata"]["said_at"] for m in saved if m["role"] == "user"] == [
        first + 3600 * i for i in range(len(SAID) + 1)
    ]
    sent = server.chat_requests[-1].body["messages"]
    assert all("metadata" not in message for message in sent)  # the time is ours, not sent
    recalled = sent[0]["content"].split(RECALL_HEADER)[-1].splitlines()
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(lunch))
    assert f"- [{when}] user: {LUNCH}" in recalled  # with when it was said
    assert sum(line.startswith("- [") for line in recalled) == 2  # recall_turns, each dated
    found = session.recall_turns(agent.log_name, QUESTION, len(saved), 2)
    assert [
        (start, turn[0]["metadata"]["said_at"]) for start, turn in found if start == TARGET
    ] == [(TARGET, lunch)]
    session.close()
