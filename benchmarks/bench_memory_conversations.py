"""Memory on real conversations: what is stored, and what a search finds, beside the baselines.

Run from the repository root, with REALTALK's chats (github danny911kr/REALTALK, its
``data/Chat_*.json``: real messaging-app chats over 21 days, with questions whose evidence turns
are annotated) in a folder::

    .venv/bin/python benchmarks/bench_memory_conversations.py --data DIR [--quick] [--chats N]

Each chat is one user: every turn is added with ``add_memories`` as a memory
``"<when>: <speaker>: <text>"`` (``<when>`` the turn's day), with ``said_at`` the turn's time.
Then each question is asked, and a question's recall@k is the share of its evidence turns
among the first k results (a hit counts for every turn whose text it holds). Side by side, in
the same run, on the same texts:

- ours with the defaults, ours with ``dedupe=False``, ours with ``prefer_recent=False``;
- the raw model by brute force (the same int8 MiniLM, cosine over every turn);
- BM25 (Okapi, k1 1.2, b 0.75, written here) over the same texts;
- the reciprocal-rank fusion (k 60) of those two.

It prints per question category and overall recall@5 and @10 of each, and how many turns,
and how many evidence turns, the defaults stored (a turn is stored when a memory holds its
text). ``--quick`` runs the first chat only. Chats are taken in the order of their file names.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import math
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

RRF_K = 60
DEPTHS = (5, 10)
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_EVIDENCE = re.compile(r"D\d+:\d+(?:\s*-\s*D?\d*:?\d+)?")


# -- the data ---------------------------------------------------------------------------------


class Chat:
    """One conversation: its turns (id, memory text, time) and its questions."""

    def __init__(self, name: str, raw: dict[str, Any]) -> None:
        self.name = name
        sessions = sorted(
            (key for key in raw if re.fullmatch(r"session_\d+", key)),
            key=lambda key: int(key.split("_")[1]),
        )
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.said: list[float] = []
        for key in sessions:
            for turn in raw[key]:
                when = parse_time(turn["date_time"])
                self.ids.append(turn["dia_id"])
                text = " ".join(str(turn["clean_text"]).split())
                self.texts.append(f"{when:%d %B %Y}: {turn['speaker']}: {text}")
                self.said.append(when.timestamp())
        known = set(self.ids)
        self.questions: list[dict[str, Any]] = []
        for question in raw.get("qa", []):
            evidence = {turn for given in question.get("evidence", []) for turn in turns_of(given)}
            evidence &= known  # a few annotations name turns the chat does not have
            if evidence:
                self.questions.append(
                    {
                        "question": question["question"],
                        "category": str(question.get("category", "?")),
                        "evidence": evidence,
                    }
                )

    @property
    def evidence(self) -> set[str]:
        return {turn for question in self.questions for turn in question["evidence"]}


def parse_time(text: str) -> dt.datetime:
    """REALTALK's "30.12.2023, 00:32:20" (a time of the chat, taken as UTC)."""
    return dt.datetime.strptime(text.strip(), "%d.%m.%Y, %H:%M:%S").replace(tzinfo=dt.UTC)


def turns_of(given: str) -> list[str]:
    """The turn ids an evidence annotation names: "D1:3", "D3:11; D6:9", "D20:18-D20:24"."""
    found = []
    for match in _EVIDENCE.finditer(given):
        ids = re.findall(r"\d+", match.group())
        if len(ids) >= 3 and "-" in match.group():
            day, first, last = ids[0], int(ids[1]), int(ids[-1])
            found += [f"D{day}:{n}" for n in range(first, last + 1)]
        else:
            found.append(f"D{ids[0]}:{ids[1]}")
    return found


def load_chats(folder: Path, count: int | None) -> list[Chat]:
    files = sorted(folder.glob("Chat_*.json"))
    if not files:
        raise SystemExit(f"no Chat_*.json in {folder}: pass REALTALK's data folder as --data")
    return [Chat(path.stem, json.loads(path.read_text())) for path in files[:count]]


# -- the baselines ----------------------------------------------------------------------------


def tokens(text: str) -> list[str]:
    return [word.casefold() for word in _TOKEN.findall(text)]


class BM25:
    """Okapi BM25 over a fixed list of texts (k1 1.2, b 0.75, idf of Lucene: never negative)."""

    def __init__(self, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = [collections.Counter(tokens(text)) for text in texts]
        self.lengths = [sum(doc.values()) for doc in self.docs]
        self.average = sum(self.lengths) / max(len(self.docs), 1)
        frequency: collections.Counter[str] = collections.Counter()
        for doc in self.docs:
            frequency.update(doc.keys())
        count = len(self.docs)
        self.idf = {
            word: math.log(1 + (count - n + 0.5) / (n + 0.5)) for word, n in frequency.items()
        }

    def rank(self, query: str) -> list[int]:
        words = set(tokens(query)) & self.idf.keys()
        scores = []
        for n, doc in enumerate(self.docs):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * self.lengths[n] / self.average)
            for word in words:
                tf = doc.get(word, 0)
                if tf:
                    score += self.idf[word] * tf * (self.k1 + 1) / (tf + norm)
            if score > 0:
                scores.append((score, n))
        return [n for _, n in sorted(scores, key=lambda pair: (-pair[0], pair[1]))]


def dense_ranker(embedder: Any, texts: Sequence[str]) -> Callable[[str], list[int]]:
    """Brute force over every text with the model alone."""
    import numpy as np

    matrix = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    def rank(query: str) -> list[int]:
        vector = np.asarray(embedder.embed_query(query), dtype=np.float32)
        scores = matrix @ (vector / max(float(np.linalg.norm(vector)), 1e-12))
        return [int(n) for n in np.argsort(-scores, kind="stable")]

    return rank


def fused(*rankings: list[int]) -> list[int]:
    """Reciprocal-rank fusion: each ranking gives 1 / (RRF_K + rank)."""
    scores: dict[int, float] = collections.defaultdict(float)
    for ranking in rankings:
        for rank, n in enumerate(ranking):
            scores[n] += 1.0 / (RRF_K + rank + 1)
    return sorted(scores, key=lambda n: (-scores[n], n))


# -- one run ----------------------------------------------------------------------------------

SYSTEMS = (
    "ours, defaults",
    "ours, dedupe=False",
    "ours, prefer_recent=False",
    "raw model, brute force",
    "BM25",
    "fusion (RRF) of the two",
)


def run_chat(chat: Chat, root: Path, embedder: Any) -> dict[str, Any]:
    """Every system's found turns for every question of ``chat``, and what was stored."""
    from praisonsession import Session

    settings = {"data_dir": str(root)}
    config = {"progress": False}
    user = f"{re.sub(r'[^A-Za-z0-9]', '', chat.name)}{uuid.uuid4().hex[:6]}"
    defaults = Session("chat", f"{user}d", settings=settings, memory_config=config)
    kept_all = Session("chat", f"{user}k", settings=settings, memory_config=config)
    started = time.perf_counter()
    events = defaults.add_memories(chat.texts, said_at=chat.said)
    added = time.perf_counter() - started
    kept_all.add_memories(chat.texts, said_at=chat.said, dedupe=False)
    turns_of_text: dict[str, set[str]] = collections.defaultdict(set)
    for turn, text in zip(chat.ids, chat.texts, strict=True):
        turns_of_text[text].add(turn)
    held = set(held_texts(defaults))
    stored = {turn for turn, text in zip(chat.ids, chat.texts, strict=True) if text in held}
    dense = dense_ranker(embedder, chat.texts)
    bm25 = BM25(chat.texts)

    def ours(session: Any, **options: Any) -> Callable[[str, int], list[str]]:
        def search(question: str, depth: int) -> list[str]:
            hits = session.search_memory(question, limit=depth, **options)
            return [hit["text"] for hit in hits]

        return search

    def ranked(rank: Callable[[str], list[int]]) -> Callable[[str, int], list[str]]:
        return lambda question, depth: [chat.texts[n] for n in rank(question)[:depth]]

    searches = {
        SYSTEMS[0]: ours(defaults),
        SYSTEMS[1]: ours(kept_all),
        SYSTEMS[2]: ours(defaults, prefer_recent=False),
        SYSTEMS[3]: ranked(dense),
        SYSTEMS[4]: ranked(bm25.rank),
        SYSTEMS[5]: ranked(lambda question: fused(dense(question), bm25.rank(question))),
    }
    found: dict[str, list[dict[int, float]]] = {system: [] for system in SYSTEMS}
    for question in chat.questions:
        for system, search in searches.items():
            recalls = {}
            for depth in DEPTHS:
                texts = search(question["question"], depth)[:depth]
                turns = set().union(*(turns_of_text.get(text, set()) for text in texts))
                recalls[depth] = len(turns & question["evidence"]) / len(question["evidence"])
            found[system].append(recalls)
    for session in (defaults, kept_all):
        session.close()
    return {
        "turns": len(chat.texts),
        "stored": len(stored),
        "evidence": len(chat.evidence),
        "evidence_stored": len(chat.evidence & stored),
        "events": collections.Counter(event.event for event in events),
        "add_seconds": added,
        "categories": [question["category"] for question in chat.questions],
        "found": found,
    }


def held_texts(session: Any) -> list[str]:
    """Every long-term memory's text, page by page."""
    texts: list[str] = []
    after = None
    while True:
        page = session.list_memories("long", limit=1000, after=after)
        texts += [memory["text"] for memory in page]
        if len(page) < 1000:
            return texts
        after = page[-1]["id"]


def report(runs: list[dict[str, Any]], chats: list[Chat]) -> None:
    turns = sum(run["turns"] for run in runs)
    stored = sum(run["stored"] for run in runs)
    evidence = sum(run["evidence"] for run in runs)
    evidence_stored = sum(run["evidence_stored"] for run in runs)
    events: collections.Counter[str] = collections.Counter()
    for run in runs:
        events.update(run["events"])
    questions = sum(len(run["categories"]) for run in runs)
    print(f"Chats: {len(chats)} ({', '.join(chat.name for chat in chats)}); questions: {questions}")
    print(
        f"Turns stored (defaults): {stored} of {turns} ({100 * stored / max(turns, 1):.1f}%); "
        f"events {dict(sorted(events.items()))}"
    )
    print(
        f"Evidence turns stored (defaults): {evidence_stored} of {evidence} "
        f"({100 * evidence_stored / max(evidence, 1):.1f}%)"
    )
    rate = turns / max(sum(run["add_seconds"] for run in runs), 1e-9)
    print(f"add_memories with the defaults: {rate:.0f} turns/s")
    categories = sorted({c for run in runs for c in run["categories"]}, key=str)
    columns = [*categories, "all"]
    for depth in DEPTHS:
        print(f"\nrecall@{depth} by question category (questions: ", end="")
        counts = collections.Counter(c for run in runs for c in run["categories"])
        print(", ".join(f"{c}: {counts[c]}" for c in categories) + ")")
        print("| system | " + " | ".join(f"cat {c}" for c in categories) + " | all |")
        print("|---" * (len(columns) + 1) + "|")
        for system in SYSTEMS:
            cells = []
            for column in columns:
                values = [
                    found[depth]
                    for run in runs
                    for category, found in zip(run["categories"], run["found"][system], strict=True)
                    if column == "all" or category == column
                ]
                cells.append(f"{sum(values) / max(len(values), 1):.3f}")
            print(f"| {system} | " + " | ".join(cells) + " |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of REALTALK Chat_*.json")
    parser.add_argument("--quick", action="store_true", help="the first chat only")
    parser.add_argument("--chats", type=int, default=None, help="the first N chats")
    args = parser.parse_args(argv)
    chats = load_chats(args.data, 1 if args.quick else args.chats)
    from praisonsession.recall.core import default_embedder

    embedder = default_embedder("minilm")
    with tempfile.TemporaryDirectory() as folder:
        runs = [run_chat(chat, Path(folder), embedder) for chat in chats]
    report(runs, chats)


if __name__ == "__main__":
    main()
