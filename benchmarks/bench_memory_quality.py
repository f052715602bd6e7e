"""Memory quality: recall, updates, duplicates and search speed, with the offline embedder.

Run from the repository root::

    .venv/bin/python benchmarks/bench_memory_quality.py [--quick] [--data PATH] [--json OUT]
        [--store embedded|chroma-server|pgvector]

The questions come from ``benchmarks/data/memory_questions.json``, which
``benchmarks/data/make_memory_questions.py`` generates (``--data`` takes another set in the
same format). Everything goes through the public ``Session`` calls, with default settings:

a. Every user's memories are added session by session with ``add_memory`` (updates come in the
   last session), then each question is asked with ``search_memory(question, limit=5)`` from one
   of the user's sessions. Reported per category: recall@5 over answerable questions, the
   updated value ranked above the stale one, and for questions with no answer the best score
   (what ``get_context``'s cut-off, 0.25 by default, sees). Beside it, the raw engine: the same
   memories in a bare Chroma collection with the same embedder, queried directly (no
   de-duplication, no preference for newer memories).
b. Paraphrase pairs: the second text of each pair added after the first; a ``same`` pair is
   suppressed when it does not add a second memory, a ``distinct`` pair is wrongly merged when
   it does not. The decision is the one ``add_memory`` makes (nearest memory, threshold,
   named-things check); a sample goes through ``add_memory`` itself to show they agree, and a
   sweep over thresholds shows why the default is what it is.
d. Recency at scale (``--recency-sizes``, ``--recency-users``): ten users' memories, each with
   newer facts about other people up to 5,000 and 20,000 memories; recall@5 and updated above
   stale with ``prefer_recent`` on (the default) beside similarity alone, through
   ``search_memory``.
c. Search latency at 100,000 memories of one user (``--quick``: 1,000), with the fixture and
   the interleaved timing of ``bench_memory_search.py``: ``search_memory(q, limit=5)`` on new
   questions, p50/p95 over 200 queries, beside the raw engine (embed the query +
   ``collection.query``) as a ratio.

Targets: recall@5 >= 0.9, updated above stale >= 95%, a fact restated in the same words
(case, punctuation, "the") suppressed >= 95% with < 2% of distinct facts merged, search p95
< 20 ms at 100,000 memories. A fact restated in other words ("User loves eating falafel" after
"User's favourite food is falafel") is reported, not a target: dedupe merges a memory only with
a true repeat of it (at least half of its words in common), so that nothing said is dropped as
the repeat of a different statement on real conversations (issue 37); such a restatement is
kept as a second memory, which search still finds.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_memory_search  # noqa: E402
from vector_stores import STORES, vector_store  # noqa: E402

from praisonsession import Session  # noqa: E402
from praisonsession.recall.memory.paraphrase import DEFAULT_THRESHOLD, is_paraphrase  # noqa: E402

DATA = HERE / "data" / "memory_questions.json"
#: The settings of the vector store of this run (``--store``; embedded Chroma by default).
LOCATED: dict[str, str] = {}
ANSWERABLE = ("single", "updated", "multi_session", "paraphrase")


def open_session(root: Path, session_id: str, user_id: str) -> Session:
    """A session with default memory settings whose store and Chroma data live in ``root``."""
    return Session(
        session_id,
        user_id=user_id,
        store=f"sqlite://{root}/s.db",
        settings={"data_dir": str(root / "data"), **LOCATED},
        memory_config={"progress": False},  # keep the report free of progress bars
    )


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


# -- a. questions -------------------------------------------------------------------------


def load_memories(root: Path, data: dict) -> tuple[dict[str, str], dict[str, Any], int]:
    """Add every user's memories; key -> memory id, the sessions, and how many were merged."""
    ids: dict[str, str] = {}
    sessions: dict[str, Any] = {}
    merged = 0
    for user in data["users"]:
        for told in user["sessions"]:
            session = open_session(root, told["session_id"], user["user_id"])
            sessions[told["session_id"]] = session
            for memory in told["memories"]:
                memory_id = session.add_memory(memory["text"])
                merged += memory_id.event != "ADD"
                if memory["key"]:
                    ids[memory["key"]] = str(memory_id)
    return ids, sessions, merged


def raw_collection(root: Path, data: dict, embedder: Any) -> tuple[Any, dict[str, str]]:
    """The raw engine: every user's memories in a bare Chroma collection of their own."""
    import chromadb

    client = chromadb.PersistentClient(path=str(root / "raw"))
    collections, keys = {}, {}
    for user in data["users"]:
        collection = client.create_collection(
            f"raw_{user['user_id']}", configuration={"hnsw": {"space": "cosine"}}
        )
        texts, ids = [], []
        for n, memory in enumerate(m for s in user["sessions"] for m in s["memories"]):
            ids.append(f"{user['user_id']}-{n}")
            texts.append(memory["text"])
            if memory["key"]:
                keys[memory["key"]] = ids[-1]
        collection.add(ids=ids, documents=texts, embeddings=embedder.embed(texts))
        collections[user["user_id"]] = collection
    return collections, keys


def score_questions(data: dict, ask: Any, ids: dict[str, str]) -> dict[str, Any]:
    """Per category: recall@5, updated-above-stale, no-answer best scores."""
    found: dict[str, list[bool]] = {category: [] for category in ANSWERABLE}
    above, best_unanswered, misses = [], [], []
    for question in data["questions"]:
        hits = ask(question)
        ranked = [hit_id for hit_id, _ in hits]
        if question["answer"] is None:
            best_unanswered.append(max((score for _, score in hits), default=0.0))
            continue
        answer = ids.get(question["answer"])
        hit = answer in ranked[:5]
        found[question["category"]].append(hit)
        if not hit and len(misses) < 8:
            misses.append(question["question"] + f" (user {question['user_id']})")
        if question["stale"] is not None:
            stale = ids.get(question["stale"])
            new_rank = ranked.index(answer) if answer in ranked else 99
            stale_rank = ranked.index(stale) if stale in ranked else 100
            above.append(stale == answer or new_rank < stale_rank)
    answerable = [hit for hits in found.values() for hit in hits]
    return {
        "recall_at_5": sum(answerable) / len(answerable),
        "by_category": {c: sum(h) / len(h) for c, h in found.items() if h},
        "questions": len(data["questions"]),
        "updated_above_stale": sum(above) / len(above) if above else 1.0,
        "no_answer_best_score_median": statistics.median(best_unanswered or [0.0]),
        "no_answer_below_0_25": sum(s < 0.25 for s in best_unanswered)
        / max(1, len(best_unanswered)),
        "misses": misses,
    }


def bench_questions(root: Path, data: dict) -> dict[str, Any]:
    started = time.perf_counter()
    ids, sessions, merged = load_memories(root, data)
    load_s = time.perf_counter() - started
    first_session = {user["user_id"]: user["sessions"][0]["session_id"] for user in data["users"]}

    def ours(question: dict) -> list[tuple[str, float]]:
        session = sessions[question["session_id"] or first_session[question["user_id"]]]
        return [(hit["id"], hit["score"]) for hit in session.search_memory(question["question"])]

    ours_scores = score_questions(data, ours, ids)
    embedder = next(iter(sessions.values()))._core._recall.embedder
    collections, raw_ids = raw_collection(root, data, embedder)

    def raw(question: dict) -> list[tuple[str, float]]:
        vector = embedder.embed_query(question["question"])
        found = collections[question["user_id"]].query(query_embeddings=[vector], n_results=5)
        return [(i, 1 - d) for i, d in zip(found["ids"][0], found["distances"][0], strict=True)]

    raw_scores = score_questions(data, raw, raw_ids)
    memories = sum(len(s["memories"]) for u in data["users"] for s in u["sessions"])
    return {
        "users": len(data["users"]),
        "memories_told": memories,
        "merged_on_add": merged,
        "load_s": load_s,
        "ours": ours_scores,
        "raw": raw_scores,
    }


# -- b. paraphrase pairs ------------------------------------------------------------------


def _folded(text: str) -> str:
    """A text as a restatement in the same words leaves it: lower case, no punctuation,
    "the user" as "user"."""
    return " ".join(re.sub(r"[^\w]+", " ", text.casefold()).replace("the user", "user").split())


def bench_pairs(root: Path, data: dict, sample: int) -> dict[str, Any]:
    from praisonsession.recall import default_embedder

    embedder = default_embedder("minilm")
    pairs = data["pairs"]
    texts = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))

    def cosine(a: str, b: str) -> float:
        x, y = vectors[a], vectors[b]
        dot = sum(i * j for i, j in zip(x, y, strict=True))
        return dot / ((sum(i * i for i in x) ** 0.5) * (sum(j * j for j in y) ** 0.5))

    scores = [(pair, cosine(pair["a"], pair["b"])) for pair in pairs]

    def rates(threshold: float) -> tuple[float, float]:
        same = [is_paraphrase(s, p["b"], p["a"], threshold) for p, s in scores if p["same"]]
        other = [is_paraphrase(s, p["b"], p["a"], threshold) for p, s in scores if not p["same"]]
        return sum(same) / len(same), sum(other) / len(other)

    suppressed, merged = rates(DEFAULT_THRESHOLD)
    same_words = [(p, s) for p, s in scores if p["same"] and _folded(p["a"]) == _folded(p["b"])]
    reworded = [(p, s) for p, s in scores if p["same"] and _folded(p["a"]) != _folded(p["b"])]

    def share(found: list[tuple[dict[str, Any], float]]) -> float:
        merged = [is_paraphrase(s, p["b"], p["a"], DEFAULT_THRESHOLD) for p, s in found]
        return sum(merged) / max(len(merged), 1)

    sweep = {f"{t:.2f}": rates(t) for t in (0.75, 0.8, 0.82, 0.84, 0.86, 0.88, 0.9, 0.95)}
    # The same decision through add_memory, each pair for a user of its own.
    agree = 0
    rng = random.Random(7)
    picked = rng.sample(scores, min(sample, len(scores)))
    for n, (pair, score) in enumerate(picked):
        session = open_session(root, "pairs", f"pair{n}")
        session.add_memory(pair["a"])
        event = session.add_memory(pair["b"]).event
        agree += (event != "ADD") == is_paraphrase(score, pair["b"], pair["a"], DEFAULT_THRESHOLD)
    return {
        "pairs": len(pairs),
        "threshold": DEFAULT_THRESHOLD,
        "suppressed": suppressed,
        "same_words": len(same_words),
        "suppressed_same_words": share(same_words),
        "reworded": len(reworded),
        "suppressed_reworded": share(reworded),
        "wrongly_merged": merged,
        "sweep": sweep,
        "api_sample": len(picked),
        "api_agrees": agree,
        "missed_same": [
            (p["a"], p["b"], round(s, 3))
            for p, s in scores
            if p["same"] and not is_paraphrase(s, p["b"], p["a"], DEFAULT_THRESHOLD)
        ][:6],
        "merged_distinct": [
            (p["a"], p["b"], round(s, 3))
            for p, s in scores
            if not p["same"] and is_paraphrase(s, p["b"], p["a"], DEFAULT_THRESHOLD)
        ][:6],
    }


# -- d. recency at scale ------------------------------------------------------------------

#: People the other memories are about: newer facts of theirs, in the users' own wordings.
OTHERS = [
    "Priya", "Bruno", "Chen", "Dagny", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas",
    "Kavya", "Lars", "Mireille", "Nikolai", "Oona", "Pedro", "Quentin", "Rania", "Sven", "Tomoko",
    "Ulla", "Viktor", "Wen", "Ximena", "Yusuf", "Zara", "Amit", "Beatriz", "Cyrus", "Dilnoza",
    "Eero", "Fatou", "Gustavo", "Hiro", "Ilse", "Jamal", "Kirsi", "Luca", "Maelle", "Nuno",
    "Olek", "Paloma", "Rashid", "Saoirse", "Tariq", "Uma", "Vesna", "Wiremu", "Yara", "Zeno",
    "Alba", "Bao", "Cosmin", "Dara", "Elif", "Femi", "Greta", "Hamid", "Isla", "Joao",
    "Keanu", "Leila", "Mateo", "Nadia", "Omar", "Pia", "Rafael", "Sina", "Teo", "Vera",
    "Wanjiru", "Yosef",
]  # fmt: skip


def about(text: str, name: str) -> str:
    """A memory of the user told as a fact about someone else."""
    for said in ("The user's", "the user's", "User's"):
        text = text.replace(said, f"{name}'s")
    for said in ("The user", "the user", "User", "user"):
        text = text.replace(said, name)
    return text


def bench_recency(root: Path, data: dict, sizes: tuple[int, ...], users: int) -> dict[str, Any]:
    """Each of ``users`` users holds their own memories (added with ``add_memory``, as in a.)
    and, newer than all of them, facts about other people in the same wordings, up to each
    size; each answerable question is asked with ``prefer_recent`` on (the default) and off
    (similarity alone). The other people's facts are embedded once and written straight to
    the user's collection with the metadata ``add_memory`` writes (to keep set-up short)."""
    import numpy as np

    from praisonsession.recall import default_embedder

    embedder = default_embedder("minilm")
    told = sorted({m["text"] for u in data["users"] for s in u["sessions"] for m in s["memories"]})
    others = [about(text, name) for name in OTHERS for text in told]
    random.Random(3).shuffle(others)
    need = max(sizes)
    others = others[:need]
    started = time.perf_counter()
    vectors = np.asarray(embedder.embed(others), dtype=np.float32)
    embed_s = time.perf_counter() - started
    rows = []
    for size in sizes:
        found: dict[bool, list[bool]] = {True: [], False: []}
        above: dict[bool, list[bool]] = {True: [], False: []}
        for user in data["users"][:users]:
            part = {**data, "users": [user]}
            ids, sessions, _ = load_memories(root / f"recency{size}", part)
            session = sessions[user["sessions"][0]["session_id"]]
            long = session._core._recall.long
            count = long.index.count()
            extra = min(len(others), max(0, size - count))
            at = time.time() + 60  # newer than everything the user told
            for start in range(0, extra, 5000):
                stop = min(extra, start + 5000)
                entry_ids = [f"x{n:031x}" for n in range(start, stop)]
                metadatas = [
                    long.index.scope.stamp(long._metadata(i, t, {}, at + n, at + n, at + n))
                    for n, (i, t) in enumerate(zip(entry_ids, others[start:stop], strict=True))
                ]
                long.index.collection.add(
                    ids=entry_ids,
                    documents=others[start:stop],
                    metadatas=metadatas,
                    embeddings=vectors[start:stop],
                )
            asked = [q for q in data["questions"] if q["user_id"] == user["user_id"]]
            for question in asked:
                if question["answer"] is None:
                    continue
                for recent in (True, False):
                    hits = session.search_memory(question["question"], prefer_recent=recent)
                    ranked = [hit["id"] for hit in hits]
                    answer = ids.get(question["answer"])
                    found[recent].append(answer in ranked[:5])
                    if question["stale"] is not None:
                        stale = ids.get(question["stale"])
                        new_rank = ranked.index(answer) if answer in ranked else 99
                        stale_rank = ranked.index(stale) if stale in ranked else 100
                        above[recent].append(new_rank < stale_rank)
            for opened in sessions.values():
                opened.close()
        rows.append(
            {
                "memories": size,
                "users": users,
                "questions": len(found[True]),
                "recall_at_5": statistics.fmean(found[True]),
                "recall_at_5_similarity": statistics.fmean(found[False]),
                "updated_above_stale": statistics.fmean(above[True]) if above[True] else 1.0,
                "updated_above_stale_similarity": (
                    statistics.fmean(above[False]) if above[False] else 1.0
                ),
            }
        )
    return {"sizes": rows, "others": len(others), "embed_s": embed_s}


# -- c. latency at scale ------------------------------------------------------------------


def bench_latency(root: Path, count: int, queries: int, embedded: int) -> dict[str, Any]:
    """``search_memory`` at ``count`` memories of one user, by ``bench_memory_search`` (its
    fixture: ``embedded`` memories embedded, the rest mixtures of two of them)."""
    figures = bench_memory_search.measure(root / "latency", (count,), queries, embedded, LOCATED)
    row = figures["sizes"][-1]
    return {
        "memories": row["memories"],
        "embedded": embedded,
        "fill_s": figures["write_s"] + figures["embed_s"],
        "queries": queries,
        "p50_ms": row["ours_cold"]["p50_ms"],
        "p95_ms": row["ours_cold"]["p95_ms"],
        "raw_p50_ms": row["bare"]["p50_ms"],
        "raw_p95_ms": row["bare"]["p95_ms"],
        "raw_embed_p95_ms": row["embed"]["p95_ms"],
        "raw_chroma_p95_ms": row["chroma"]["p95_ms"],
    }


# -- report -------------------------------------------------------------------------------


def targets(figures: dict[str, Any], scale: int) -> list[tuple[str, str, bool]]:
    rows = []
    if "questions" in figures:
        q = figures["questions"]["ours"]
        rows.append(("recall@5 >= 0.90", f"{q['recall_at_5']:.3f}", q["recall_at_5"] >= 0.9))
        above = q["updated_above_stale"]
        rows.append(("updated above stale >= 95%", f"{100 * above:.1f}%", above >= 0.95))
    if "pairs" in figures:
        p = figures["pairs"]
        suppressed, merged = p["suppressed_same_words"], p["wrongly_merged"]
        rows.append(
            (
                "same-words restatements >= 95%",
                f"{100 * suppressed:.1f}%",
                suppressed >= 0.95,
            )
        )
        rows.append(("distinct facts merged < 2%", f"{100 * merged:.1f}%", merged < 0.02))
    for row in figures.get("recency", {}).get("sizes", []):
        gap = row["recall_at_5_similarity"] - row["recall_at_5"]
        rows.append(
            (
                f"recall@5 at {row['memories']:,} within 0.02 of similarity",
                f"{row['recall_at_5']:.3f} vs {row['recall_at_5_similarity']:.3f}",
                gap <= 0.02,
            )
        )
    if "latency" in figures:
        p95 = figures["latency"]["p95_ms"]
        rows.append((f"search p95 < 20 ms at {scale:,}", f"{p95:.1f} ms", p95 < 20))
    return rows


def report(figures: dict[str, Any], scale: int) -> None:
    if "questions" in figures:
        report_questions(figures["questions"])
    if "pairs" in figures:
        report_pairs(figures["pairs"])
    if "recency" in figures:
        report_recency(figures["recency"])
    if "latency" in figures:
        report_latency(figures["latency"])
    print("\nTargets:")
    for name, value, ok in targets(figures, scale):
        print(f"   {'PASS' if ok else 'MISS'}  {name:34} {value}")


def report_questions(q: dict[str, Any]) -> None:
    print(
        f"\na. Questions: {q['ours']['questions']} for {q['users']} users, "
        f"{q['memories_told']} memories told ({q['merged_on_add']} merged on add), "
        f"loaded in {q['load_s']:.1f} s"
    )
    print(f"   {'':28} {'praisonsession':>15} {'raw engine':>11} {'ratio':>7}")
    rows = [("recall@5 (answerable)", "recall_at_5")]
    for name, key in rows:
        ours, raw = q["ours"][key], q["raw"][key]
        print(f"   {name:28} {ours:15.3f} {raw:11.3f} {ours / raw:7.2f}")
    for category in ANSWERABLE:
        ours = q["ours"]["by_category"].get(category, 0)
        raw = q["raw"]["by_category"].get(category, 0)
        print(f"   {'  ' + category:28} {ours:15.3f} {raw:11.3f} {ours / max(raw, 1e-9):7.2f}")
    ours, raw = q["ours"]["updated_above_stale"], q["raw"]["updated_above_stale"]
    print(f"   {'updated above stale':28} {ours:15.3f} {raw:11.3f} {ours / max(raw, 1e-9):7.2f}")
    ours, raw = q["ours"]["no_answer_below_0_25"], q["raw"]["no_answer_below_0_25"]
    print(f"   {'no answer: best < 0.25':28} {ours:15.3f} {raw:11.3f}")
    print(f"   no answer: median best score {q['ours']['no_answer_best_score_median']:.3f}")
    if q["ours"]["misses"]:
        print("   missed, e.g.: " + "; ".join(q["ours"]["misses"][:4]))


def report_pairs(p: dict[str, Any]) -> None:
    print(
        f"\nb. Paraphrase pairs: {p['pairs']}, threshold {p['threshold']}: "
        f"{100 * p['suppressed']:.1f}% of same-fact pairs suppressed, "
        f"{100 * p['wrongly_merged']:.1f}% of distinct pairs merged "
        f"(raw engine: 0% suppressed, it keeps every text)"
    )
    print(
        f"   restated in the same words (case, punctuation, 'the'): {p['same_words']} pairs, "
        f"{100 * p['suppressed_same_words']:.1f}% suppressed; in other words: {p['reworded']} "
        f"pairs, {100 * p['suppressed_reworded']:.1f}% merged, the rest kept as two memories "
        "(dedupe merges only a true repeat, so that nothing said is dropped; not a target)"
    )
    print(f"   add_memory agreed with the decision on {p['api_agrees']}/{p['api_sample']} pairs")
    print(
        "   threshold sweep (suppressed / wrongly merged): "
        + ", ".join(f"{t}: {100 * s:.0f}%/{100 * m:.1f}%" for t, (s, m) in p["sweep"].items())
    )
    for a, b, s in p["missed_same"][:3]:
        print(f"   kept apart (same fact): {a!r} / {b!r} ({s})")
    for a, b, s in p["merged_distinct"][:3]:
        print(f"   merged (distinct): {a!r} / {b!r} ({s})")


def report_recency(r: dict[str, Any]) -> None:
    print(
        f"\nd. Recency at scale: each user's memories, then (newer) facts about {len(OTHERS)} "
        f"other people in the same wordings ({r['others']:,} embedded in {r['embed_s']:.0f} s)"
    )
    print(
        f"   {'memories':>9} {'users':>6} {'questions':>9} {'recall@5':>9} {'similarity':>11} "
        f"{'updated first':>14} {'similarity':>11}"
    )
    for row in r["sizes"]:
        print(
            f"   {row['memories']:9,} {row['users']:6} {row['questions']:9} "
            f"{row['recall_at_5']:9.3f} {row['recall_at_5_similarity']:11.3f} "
            f"{row['updated_above_stale']:14.3f} {row['updated_above_stale_similarity']:11.3f}"
        )


def report_latency(lat: dict[str, Any]) -> None:
    print(
        f"\nc. Search at {lat['memories']:,} memories of one user "
        f"({lat['embedded']:,} embedded, the rest mixtures of two; built in {lat['fill_s']:.0f} s; "
        f"bench_memory_search.py shows it at every size, cold and warm), {lat['queries']} queries:"
    )
    print(f"   {'':14} {'praisonsession':>15} {'raw engine':>11} {'ratio':>7}")
    for name, key in (("p50 ms", "p50_ms"), ("p95 ms", "p95_ms")):
        ours, raw = lat[key], lat["raw_" + key]
        print(f"   {name:14} {ours:15.2f} {raw:11.2f} {ours / raw:7.2f}")
    print(
        f"   raw engine split, p95: query embedding {lat['raw_embed_p95_ms']:.2f} ms, "
        f"Chroma query {lat['raw_chroma_p95_ms']:.2f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small run for the test suite")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--users", type=int, help="only the first N users of the set")
    parser.add_argument(
        "--only", choices=["questions", "pairs", "recency", "latency"], help="one part"
    )
    parser.add_argument(
        "--recency-sizes", default="5000,20000", help="memories per user for d. (5000,20000)"
    )
    parser.add_argument("--recency-users", type=int, default=10, help="users for d. (10)")
    parser.add_argument("--scale", type=int, help="memories for the latency run")
    parser.add_argument("--store", choices=STORES, default="embedded", help="(embedded)")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text("utf-8"))
    scale, queries, sample, embedded = 100_000, 200, 60, bench_memory_search.BASE
    if args.quick:
        users = data["users"][:4]
        keep = {user["user_id"] for user in users}
        data = {
            "users": users,
            "questions": [q for q in data["questions"] if q["user_id"] in keep],
            "pairs": data["pairs"][:80],
        }
        scale, queries, sample, embedded = 1_000, 30, 8, 300
        args.recency_sizes, args.recency_users = "300", 2
    if args.users:
        keep = {user["user_id"] for user in data["users"][: args.users]}
        data["users"] = [user for user in data["users"] if user["user_id"] in keep]
        data["questions"] = [q for q in data["questions"] if q["user_id"] in keep]
    scale = args.scale or scale
    root = Path(tempfile.mkdtemp(prefix="bench_memory_quality_"))
    try:
        parts = {
            "questions": lambda: bench_questions(root, data),
            "pairs": lambda: bench_pairs(root, data, sample),
            "recency": lambda: bench_recency(
                root,
                data,
                tuple(int(size) for size in args.recency_sizes.split(",")),
                args.recency_users,
            ),
            "latency": lambda: bench_latency(root, scale, queries, embedded),
        }
        with vector_store(args.store) as located:
            LOCATED.update(located)
            figures = {name: run() for name, run in parts.items() if args.only in (None, name)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"Vector store: {args.store}")
    report(figures, scale)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
