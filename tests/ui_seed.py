"""A store worth browsing, for the browser tests and the docs' screenshots: two users, a
session with tool calls, summaries, usage and state, forks and snapshots, a session whose id
needs escaping, and one of ``long_messages`` messages; and memories (``seed_memories``):
alice's long-term ones (more than one page, one of them updated), a session's short-term notes,
and one of bob's that alice must never see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from praisonsession import AsyncSession
from praisonsession.settings import Settings
from praisonsession.stores import Branches
from praisonsession.stores.api import SessionBase

__all__ = [
    "ALICE_MEMORIES",
    "BOB_MEMORY",
    "HISTORY",
    "LONG",
    "NASTY_ID",
    "NOTES",
    "UPDATED_MEMORY",
    "data_dir_for",
    "seed_memories",
    "seed_store",
]

HISTORY = "agent:assistant.history"
LONG = "long-chat"
#: An id that would run as HTML or break a path if the page did not escape it.
NASTY_ID = '<img src=x onerror="window.__pwned=1">/../x'


#: Alice's long-term memories, oldest first: 25, more than the browser's page of 20.
ALICE_MEMORIES = [
    f"Alice's travel fact {n:02d}: she has been to city number {n}." for n in range(25)
]
#: The first of them as updated, so that its history holds an ADD and an UPDATE.
UPDATED_MEMORY = "Alice's travel fact 00: she lived in Lisbon for a year."
#: Short-term notes of alice's trip-planning session.
NOTES = [
    "Prefers a hotel near Alfama.",
    "The budget of 1200 EUR is firm.",
    "<i>No</i> night flights.",
]
#: Bob's one memory: a user token of alice's must never bring it up.
BOB_MEMORY = "Bob keeps his locker code, 4711, in mind."


def data_dir_for(store_url: str) -> Path:
    """Where ``seed_memories`` put the memories of a store seeded by the tests: the data
    directory next to its SQLite file (``PRAISONSESSION_DATA_DIR`` of the servers)."""
    return Path(store_url.removeprefix("sqlite:///")).parent / "data"


async def seed_memories(store: SessionBase, settings: Settings) -> None:
    """Memories as sessions add them, where ``settings`` keep them."""
    alice = AsyncSession("trip-planning", "alice", store=store, settings=settings)
    ids = [  # one by one: each its own created_at, so "oldest first" is this order
        await alice.add_memory(text, dedupe=False, topic="travel") for text in ALICE_MEMORIES
    ]
    await alice.update_memory(ids[0], UPDATED_MEMORY)
    for note in NOTES:
        await alice.add_memory(note, "short", dedupe=False)
    bob = AsyncSession("support", "bob", store=store, settings=settings)
    await bob.add_memory(BOB_MEMORY, dedupe=False)
    await alice.close()
    await bob.close()


def _turns(start: int, count: int) -> list[dict[str, Any]]:
    return [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n}"}
        for n in range(start, start + count)
    ]


async def seed_store(store: SessionBase, long_messages: int = 10_000) -> None:
    alice = "alice"
    await store.create_session("trip-planning", alice, metadata={"title": "Trip to Lisbon"})
    await store.patch_state(
        "trip-planning", alice, {"city": "Lisbon", "budget_eur": 1200, "dates": ["May 3", "May 9"]}
    )
    history = [
        {"role": "system", "content": "You are a helpful travel assistant."},
        {"role": "user", "content": "What's the weather in Lisbon in May?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"high_c": 23, "rain_days": 4}'},
        {"role": "assistant", "content": "Mild: highs around 23 °C and about 4 rainy days."},
        {"role": "user", "content": "<script>alert('not run')</script> Book a hotel for me?"},
        {"role": "assistant", "content": "I can't book, but here are three areas to look at."},
    ]
    await store.append_messages("trip-planning", alice, HISTORY, history)
    await store.append_messages(
        "trip-planning",
        alice,
        "agent:assistant.summaries",
        [
            {
                "role": "summary",
                "version": 1,
                "covers": [0, 5],
                "method": "llm",
                "content": "The user plans a May trip to Lisbon; weather is mild (23 °C).",
                "usage": {"prompt_tokens": 220, "completion_tokens": 30, "total_tokens": 250},
            }
        ],
    )
    await store.append_messages(
        "trip-planning",
        alice,
        "agent:assistant.usage",
        [
            usage(1, 2, 310, 42),
            usage(5, 1, 402, 25),
        ],
    )
    await Branches(store.backend).snapshot("trip-planning", alice, label="before-booking")
    await Branches(store.backend).fork(
        "trip-planning", alice, "trip-porto", at_message=(HISTORY, 5)
    )
    await Branches(store.backend).fork("trip-porto", alice, "trip-porto-budget")
    await Branches(store.backend).fork("trip-planning", alice, "trip-lisbon-family")
    await store.create_session(NASTY_ID, alice)
    await store.append_messages(NASTY_ID, alice, HISTORY, [{"role": "user", "content": "<b>hi"}])
    for n in range(60):
        await store.create_session(f"chat-{n:03d}", alice)
    await store.create_session(LONG, alice)
    for start in range(0, long_messages, 1000):
        batch = _turns(start, min(1000, long_messages - start))
        await store.append_messages(LONG, alice, HISTORY, batch)
    await store.create_session("support", "bob")
    await store.append_messages("support", "bob", HISTORY, _turns(0, 4))


def usage(turn: int, requests: int, prompt: int, completion: int) -> dict[str, Any]:
    return {
        "role": "usage",
        "turn": turn,
        "model": "gpt-4o-mini",
        "requests": requests,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
