"""Memory and knowledge benchmark for praisonsession (offline MiniLM embedder + ChromaDB).

Run from the repository root::

    .venv/bin/python benchmarks/bench_memory.py [--json results.json] [--quick]

One run measures, through the public ``praisonsession.Session`` calls:

a. Knowledge ingestion: a generated folder of ~40 text and Markdown files (>= 1 MB, seeded,
   so every run sees the same text) added with ``session.add_knowledge(folder)``: files,
   chunks, seconds, chunks/s, MB/s and tokens/s; then the same folder again (de-duplication:
   0 added). Next to it, the embedder alone on the same chunks (the model's own rate, the
   ceiling: target >= 85% of it), the read+chunk time, and the average chunk length in
   characters and word-piece tokens, so the reader sees where time goes.
b. Long-term memory search latency over 10,000 memories: ``session.search_memory(q, limit=5)``
   (query embedding included), p50 and p95 over 200 queries; and the split: query embedding
   alone and the Chroma query alone. The 10,000 memories are embedded in batches and written
   straight to the memory collection (same metadata as ``add_memory``) to keep setup short.
b2. Batch memory: ``session.add_memories(texts)`` of 2,000 short memories (memories/s, target
   >= 400), the model alone on the same texts, and ``add_memory`` one at a time for contrast.
c. Recall on ``benchmarks/data/paraphrase_recall.json`` (80 memories, 60 paraphrased queries):
   memories added with ``add_memory``, queries through ``search_memory(limit=5)``; recall@5,
   recall@1 and MRR, with the queries that missed.
d. Cold start: in fresh subprocesses, ``import praisonsession``, ``Session(...)`` (no settings:
   the default data directory) and the first ``search_memory`` on an existing small
   collection, each step and the total (median of 3). A second set of subprocesses takes the
   first search one step at a time: import chromadb, open the client, open the memory
   collection, wait for the model (it loads in the background meanwhile), embed, query.
e. A targets table (PASS/MISS). When a speed target misses, that workload is run again under
   cProfile (ingestion on the corpus's first 8 files, for a new user so nothing is skipped) and
   the functions where the time goes are printed with their share, followed by the cause.

Everything is written under one temporary directory (session store and Chroma data), removed
at the end. The model is warmed up before (a) and (b): those are steady-state figures; (d) is
the cold one.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RECALL_DATA = HERE / "data" / "paraphrase_recall.json"

# Targets
SEARCH_P50_TARGET_MS = 15.0
INGEST_OF_MODEL_TARGET = 0.85  # ingestion tokens/s over the model's own on the same chunks
ADD_MEMORIES_TARGET = 400.0  # memories/s through add_memories
RECALL5_TARGET = 0.9

SEARCH_USER = "bench_search_user"
RECALL_USER = "bench_recall_user"
COLD_USER = "bench_cold_user"
ADD_BATCH = 256  # chunks per embed+upsert call in KnowledgeBase.add (knowledge_base.BATCH)
COLD_SESSION = "bench_cold_session"


# -- small helpers ------------------------------------------------------------------------


def recall_of(session: Any) -> Any:
    """The session's memory services (internal), opened here so that set-up is not timed."""
    from praisonsession._internal import runtime

    return runtime.run(session._core._memory())


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of ``values`` (any order)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as t: ...`` then ``t[0]`` is the elapsed seconds."""
    box: list[float] = []
    start = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - start)


def open_session(root: Path, user_id: str, session_id: str | None = None) -> Any:
    """A Session whose store and Chroma data both live in ``root``."""
    from praisonsession import Session

    root.mkdir(parents=True, exist_ok=True)
    return Session(
        session_id=session_id,
        user_id=user_id,
        store=f"sqlite://{root}/s.db",
        settings={"data_dir": str(root)},
        memory_config={"progress": False},  # keep the report free of progress bars
        knowledge_config={"progress": False},
    )


# -- generated text -----------------------------------------------------------------------

PEOPLE = [
    "Amara", "Bruno", "Chen", "Dagny", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas",
    "Kavya", "Lars", "Mireille", "Nikolai", "Oona", "Pedro", "Quentin", "Rania", "Sven", "Tomoko",
]  # fmt: skip
TEAMS = [
    "platform", "billing", "search", "mobile", "data engineering", "support", "security",
    "growth", "infrastructure", "design", "finance", "legal", "logistics", "research",
]  # fmt: skip
SYSTEMS = [
    "payment gateway", "order service", "inventory database", "login page", "nightly export",
    "recommendation model", "message queue", "invoice generator", "search index", "CDN cache",
    "mobile app", "reporting dashboard", "backup job", "email sender", "shipping label printer",
    "customer portal", "feature flag service", "audit log", "data warehouse", "API gateway",
]  # fmt: skip
PROBLEMS = [
    "timed out under load", "returned stale results", "dropped a small share of requests",
    "ran out of disk space", "leaked memory after a deploy", "rejected valid certificates",
    "double-charged a handful of customers", "slowed down after the schema change",
    "lost its connection pool", "produced duplicate rows", "stopped sending notifications",
    "mis-rounded currency amounts", "crashed on empty input", "logged personal data by mistake",
]  # fmt: skip
ACTIONS = [
    "rolled back the release", "added an index on the lookup column", "raised the pool size",
    "moved the job to a quieter hour", "wrote a regression test", "paged the on-call engineer",
    "rotated the credentials", "added a circuit breaker", "cleaned up the orphaned records",
    "split the batch into smaller pieces", "turned on request tracing", "pinned the dependency",
    "documented the manual workaround", "set up an alert on the error rate",
]  # fmt: skip
OUTCOMES = [
    "latency went back to normal within the hour", "no customer reported the issue again",
    "the error rate fell below one in ten thousand", "the queue drained by the next morning",
    "throughput roughly doubled", "the finance team confirmed the totals matched",
    "the weekly report arrived on time again", "memory use stayed flat for a week",
]  # fmt: skip
PLACES = [
    "Lisbon", "Osaka", "Nairobi", "Montreal", "Tallinn", "Valparaíso", "Hanoi", "Bergen",
    "Marrakesh", "Adelaide", "Ljubljana", "Cusco", "Reykjavik", "Tbilisi", "Porto", "Busan",
]  # fmt: skip
FOODS = [
    "lentil soup", "grilled sardines", "mushroom risotto", "pad see ew", "shakshuka", "pierogi",
    "black bean tacos", "miso ramen", "spinach pie", "chickpea curry", "bibimbap", "goulash",
]  # fmt: skip
HOBBIES = [
    "bouldering", "sourdough baking", "birdwatching", "chess", "pottery", "trail running",
    "film photography", "gardening", "woodworking", "sea kayaking", "jazz piano", "astronomy",
]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
DOC_KINDS = [
    "Incident review", "Runbook", "Meeting notes", "Travel guide", "Recipe collection",
    "Product specification", "FAQ", "Onboarding guide", "Quarterly report", "Release notes",
]  # fmt: skip


def sentence(rng: random.Random) -> str:
    """One plausible sentence; slots and numbers make nearly every sentence unique."""
    p, q = rng.sample(PEOPLE, 2)
    n = rng.randint(2, 950)
    templates = [
        f"On {rng.choice(DAYS)} the {rng.choice(SYSTEMS)} {rng.choice(PROBLEMS)}, so {p} "
        f"{rng.choice(ACTIONS)}.",
        f"After {q} {rng.choice(ACTIONS)}, {rng.choice(OUTCOMES)}.",
        f"The {rng.choice(TEAMS)} team owns the {rng.choice(SYSTEMS)} and reviews its "
        f"dashboards every {rng.choice(DAYS)} at {rng.randint(8, 17)}:{rng.choice(['00', '30'])}.",
        f"{p} suggested that we budget {n} hours in {rng.choice(MONTHS)} for work on the "
        f"{rng.choice(SYSTEMS)}.",
        f"If the {rng.choice(SYSTEMS)} {rng.choice(PROBLEMS)} again, ask {q} from "
        f"{rng.choice(TEAMS)} before anything else.",
        f"In {rng.choice(PLACES)} the locals recommend {rng.choice(FOODS)}, which costs about "
        f"{n % 40 + 4} euros near the old harbour.",
        f"{p} spends most weekends on {rng.choice(HOBBIES)} and once tried {rng.choice(HOBBIES)} "
        f"in {rng.choice(PLACES)}.",
        f"For the {rng.choice(FOODS)}, simmer the base for {n % 50 + 5} minutes and season it "
        f"only at the end.",
        f"Ticket {n}-{rng.randint(100, 999)} tracks why the {rng.choice(SYSTEMS)} "
        f"{rng.choice(PROBLEMS)} during the {rng.choice(MONTHS)} peak.",
        f"Version {rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)} of the "
        f"{rng.choice(SYSTEMS)} fixes a bug where it {rng.choice(PROBLEMS)}.",
    ]
    return rng.choice(templates)


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(3, 7)))


def document(rng: random.Random, markdown: bool, size: int) -> str:
    """A document of about ``size`` characters: sections, paragraphs and (in Markdown) lists."""
    kind = rng.choice(DOC_KINDS)
    title = f"{kind}: {rng.choice(SYSTEMS)} ({rng.choice(MONTHS)} {rng.randint(2019, 2025)})"
    parts = [f"# {title}" if markdown else title.upper()]
    while sum(len(part) + 2 for part in parts) < size:
        heading = f"{rng.choice(TEAMS).title()} and the {rng.choice(SYSTEMS)}"
        parts.append(f"## {heading}" if markdown else heading)
        for _ in range(rng.randint(2, 4)):
            parts.append(paragraph(rng))
        if markdown and rng.random() < 0.5:
            parts.append("\n".join(f"- {sentence(rng)}" for _ in range(rng.randint(3, 6))))
    return "\n\n".join(parts) + "\n"


def write_corpus(folder: Path, files: int, total_bytes: int, seed: int) -> tuple[int, int]:
    """Write ``files`` .md/.txt files (some in subfolders) of >= ``total_bytes`` in all."""
    rng = random.Random(seed)
    per_file = total_bytes // files + 1
    written = 0
    for number in range(files):
        markdown = number % 3 != 2
        sub = folder / ("" if number % 4 else f"part{number % 3}")
        sub.mkdir(parents=True, exist_ok=True)
        size = int(per_file * rng.uniform(0.7, 1.3))
        text = document(rng, markdown, size)
        path = sub / f"doc{number:02d}.{'md' if markdown else 'txt'}"
        path.write_text(text, encoding="utf-8")
        written += len(text.encode("utf-8"))
    while written < total_bytes:  # top up if the random sizes fell short
        text = document(rng, True, total_bytes - written + 1000)
        path = folder / f"extra{files:02d}.md"
        files += 1
        path.write_text(text, encoding="utf-8")
        written += len(text.encode("utf-8"))
    return files, written


def memory_text(rng: random.Random) -> str:
    """A short first-person memory like the ones users ask an assistant to keep."""
    p = rng.choice(PEOPLE)
    templates = [
        f"I'm travelling to {rng.choice(PLACES)} in {rng.choice(MONTHS)} with {p}.",
        f"My favourite dish is {rng.choice(FOODS)}, especially the way {p} makes it.",
        f"I spend {rng.choice(DAYS)} evenings on {rng.choice(HOBBIES)}.",
        f"I work on the {rng.choice(SYSTEMS)} with the {rng.choice(TEAMS)} team.",
        f"{p} is my manager and prefers updates on {rng.choice(DAYS)} mornings.",
        f"Remind me that the {rng.choice(SYSTEMS)} {rng.choice(PROBLEMS)} last {rng.choice(DAYS)}.",
        f"My sister lives in {rng.choice(PLACES)} and loves {rng.choice(HOBBIES)}.",
        f"I'm trying to cook {rng.choice(FOODS)} at least once a month.",
        f"My budget for the {rng.choice(PLACES)} trip is {rng.randint(3, 40) * 100} euros.",
        f"I'd like to learn {rng.choice(HOBBIES)} before {rng.choice(MONTHS)}.",
    ]
    return rng.choice(templates)


def query_text(rng: random.Random) -> str:
    templates = [
        f"when am I going to {rng.choice(PLACES)}",
        f"what food do I like from {rng.choice(PLACES)}",
        f"which hobby do I do on {rng.choice(DAYS)}",
        f"who do I report to about the {rng.choice(SYSTEMS)}",
        f"what went wrong with the {rng.choice(SYSTEMS)}",
        "where does my family live and what do they enjoy doing",
        f"how much money can I spend on holiday in {rng.choice(MONTHS)}",
        f"what new skill do I want to pick up, maybe {rng.choice(HOBBIES)}",
    ]
    return rng.choice(templates)


# -- a. ingestion -------------------------------------------------------------------------


def bench_ingest(root: Path, files: int, megabytes: float, seed: int) -> dict[str, Any]:
    from praisonsession.recall.knowledge.chunking import chunk_text

    folder = root / "corpus"
    files, written = write_corpus(folder, files, int(megabytes * 1_000_000), seed)
    session = open_session(root / "ingest", "bench_ingest_user")
    recall = recall_of(session)  # opens Chroma: not part of the ingestion figure
    embedder = recall.embedder
    with stopwatch() as warm:
        embedder.embed(["warm-up"])  # loads the model
    with stopwatch() as first:
        added = session.add_knowledge(folder)
    with stopwatch() as second:
        again = session.add_knowledge(folder)

    kb = recall.knowledge
    with stopwatch() as read:
        documents = kb.read(folder)
        chunks = [c for d in documents for c in chunk_text(d.text, kb.chunk_size, kb.chunk_overlap)]
    with stopwatch() as embed:
        embedder.embed(chunks)
    tokens = token_counts(chunks)
    max_tokens = getattr(embedder, "max_tokens", None)
    batch = getattr(embedder, "batch_size", 64)
    total_chunks = added.chunks_added
    ingest_tokens_per_s = sum(tokens) / first[0] if tokens else None
    embed_tokens_per_s = sum(tokens) / embed[0] if tokens else None
    return {
        "files": added.files,
        "files_written": files,
        "bytes": written,
        "chunks_added": total_chunks,
        "chunks_skipped": added.chunks_skipped,
        "seconds": first[0],
        "chunks_per_s": total_chunks / first[0],
        "mb_per_s": written / 1e6 / first[0],
        "readd_seconds": second[0],
        "readd_added": again.chunks_added,
        "readd_skipped": again.chunks_skipped,
        "model_load_s": warm[0],
        "read_chunk_s": read[0],
        "embed_s": embed[0],
        "embed_chunks": len(chunks),
        "embed_chunks_per_s": len(chunks) / embed[0],
        "rest_s": first[0] - read[0] - embed[0],
        "avg_chars": statistics.fmean(len(c) for c in chunks),
        "avg_tokens": statistics.fmean(tokens) if tokens else None,
        "max_tokens": max_tokens,
        "embed_tokens_per_s": embed_tokens_per_s,
        "tokens": sum(tokens),
        "ingest_tokens_per_s": ingest_tokens_per_s,
        "of_model": (
            ingest_tokens_per_s / embed_tokens_per_s
            if ingest_tokens_per_s and embed_tokens_per_s
            else embed[0] / first[0]
        ),
        "padding_add_batches": padding(tokens, ADD_BATCH, batch) if tokens else None,
        "padding_sorted": padding(tokens, len(tokens), batch) if tokens else None,
        "truncated_share": (
            sum(t > max_tokens for t in tokens) / len(tokens) if tokens and max_tokens else None
        ),
        "chunk_size": kb.chunk_size,
        "chunk_overlap": kb.chunk_overlap,
    }


def padding(tokens: list[int], group: int, batch: int) -> float:
    """Token positions the model runs per real token when texts are embedded ``group`` at a
    time (each group length-sorted and cut into ``batch``-text batches padded to their longest).
    """
    run = 0
    for start in range(0, len(tokens), group):
        ordered = sorted(tokens[start : start + group])
        for first in range(0, len(ordered), batch):
            rows = ordered[first : first + batch]
            run += max(rows) * len(rows)
    return run / sum(tokens)


def token_counts(texts: list[str]) -> list[int]:
    """Word pieces per text ([CLS] and [SEP] included), untruncated, with MiniLM's tokenizer."""
    try:
        from tokenizers import Tokenizer

        from praisonsession.recall.embeddings.minilm import _vendored_tokenizer_json

        tokenizer = Tokenizer.from_str(_vendored_tokenizer_json())
    except Exception:
        return []
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=True)]


# -- b. search latency --------------------------------------------------------------------


def fill_memories(session: Any, count: int, seed: int, batch: int = 1000) -> dict[str, float]:
    """Write ``count`` long-term memories for the session's user, embedded in batches.

    Same ids, texts and metadata as ``add_memory`` would write, but one upsert per batch.
    """
    rng = random.Random(seed)
    recall = recall_of(session)
    index = recall.long.index
    embed_s = upsert_s = 0.0
    now = time.time()
    for start in range(0, count, batch):
        texts = [memory_text(rng) for _ in range(min(batch, count - start))]
        with stopwatch() as t:
            vectors = recall.embedder.embed(texts)
        embed_s += t[0]
        metadatas = [
            {
                "user_id": session.user_id,
                "session_id": session.session_id,
                "memory_type": "long",
                "created_at": now + start + i,
                "extra": "{}",
            }
            for i in range(len(texts))
        ]
        with stopwatch() as t:
            index.add([uuid.uuid4().hex for _ in texts], texts, metadatas, vectors)
        upsert_s += t[0]
    return {"embed_s": embed_s, "upsert_s": upsert_s}


def search_queries(count: int, seed: int) -> list[str]:
    rng = random.Random(seed + 1)
    return [query_text(rng) for _ in range(count)]


def run_searches(session: Any, queries: list[str]) -> list[float]:
    """Seconds per ``session.search_memory(query, limit=5)``."""
    times = []
    for query in queries:
        start = time.perf_counter()
        hits = session.search_memory(query, limit=5)
        times.append(time.perf_counter() - start)
        assert len(hits) == 5, hits
    return times


def bench_search(root: Path, memories: int, queries: int, seed: int) -> dict[str, Any]:
    session = open_session(root / "search", SEARCH_USER)
    recall = recall_of(session)
    recall.embedder.embed(["warm-up"])
    with stopwatch() as setup:
        split = fill_memories(session, memories, seed)
    stored = recall.long.index.count()
    texts = search_queries(queries, seed)
    for query in texts[:5]:  # warm-up: first queries load the HNSW index into memory
        session.search_memory(query, limit=5)
    total = run_searches(session, texts)
    embed = []
    for query in texts:
        start = time.perf_counter()
        recall.embedder.embed_query(query)
        embed.append(time.perf_counter() - start)
    vectors = [recall.embedder.embed_query(query) for query in texts]
    chroma = []
    for vector in vectors:
        start = time.perf_counter()
        recall.long.search(vector, 5)
        chroma.append(time.perf_counter() - start)
    # Diagnostic: a bare Chroma query on the same collection (no where= filter, no wrapper).
    unfiltered = []
    collection = recall.long.index.collection
    for vector in vectors:
        start = time.perf_counter()
        collection.query(query_embeddings=[vector], n_results=5, include=["documents"])
        unfiltered.append(time.perf_counter() - start)
    return {
        "memories": stored,
        "queries": len(texts),
        "setup_s": setup[0],
        "setup_embed_s": split["embed_s"],
        "setup_upsert_s": split["upsert_s"],
        "p50_ms": 1000 * percentile(total, 0.5),
        "p95_ms": 1000 * percentile(total, 0.95),
        "mean_ms": 1000 * statistics.fmean(total),
        "embed_p50_ms": 1000 * percentile(embed, 0.5),
        "embed_p95_ms": 1000 * percentile(embed, 0.95),
        "chroma_p50_ms": 1000 * percentile(chroma, 0.5),
        "chroma_p95_ms": 1000 * percentile(chroma, 0.95),
        "chroma_unfiltered_p50_ms": 1000 * percentile(unfiltered, 0.5),
    }


# -- b2. batch memory ---------------------------------------------------------------------


def bench_add_memories(root: Path, count: int, seed: int, singles: int = 50) -> dict[str, Any]:
    """``add_memories`` of ``count`` short memories; the model alone on the same texts; and
    ``add_memory`` one at a time, for contrast. The model is loaded before timing."""
    rng = random.Random(seed + 2)
    texts = [memory_text(rng) for _ in range(count)]  # some repeat: dedupe=False keeps each
    tokens = token_counts(texts)
    session = open_session(root / "batch", f"bench_batch_{uuid.uuid4().hex[:8]}")
    recall = recall_of(session)
    recall.embedder.embed(["warm-up"])
    session.add_memory("warm-up")  # opens the collection
    with stopwatch() as batch:
        ids = session.add_memories(texts, dedupe=False)
    stored = recall.long.index.count() - 1
    if len(set(ids)) != count or stored != count:
        raise RuntimeError(f"add_memories stored {stored} of {count}")
    with stopwatch() as model:
        recall.embedder.embed(texts)
    with stopwatch() as one_by_one:
        for text in texts[:singles]:
            session.add_memory(text)
    return {
        "memories": count,
        "seconds": batch[0],
        "memories_per_s": count / batch[0],
        "model_texts_per_s": count / model[0],
        "of_model": model[0] / batch[0],
        "single_per_s": singles / one_by_one[0],
        "singles": singles,
        "avg_tokens": statistics.fmean(tokens) if tokens else None,
    }


def print_add_memories(r: dict[str, Any]) -> None:
    tokens = "" if r["avg_tokens"] is None else f", {r['avg_tokens']:.0f} tokens each on average"
    print(f"\nb2. Batch memory: session.add_memories({r['memories']:,} short memories{tokens})")
    print(
        f"  {r['memories_per_s']:,.0f} memories/s ({r['seconds']:.2f} s); the model alone on "
        f"the same texts {r['model_texts_per_s']:,.0f}/s (ours = {r['of_model']:.0%} of it)"
    )
    print(f"  add_memory one at a time: {r['single_per_s']:,.0f}/s ({r['singles']} calls)")
    print("  (what the model leaves is Chroma's upsert: about a fifth of the time here)")


# -- c. recall ----------------------------------------------------------------------------


def bench_recall(root: Path, data_path: Path) -> dict[str, Any]:
    data = json.loads(data_path.read_text(encoding="utf-8"))
    session = open_session(root / "recall", RECALL_USER)
    to_ours = {m["id"]: session.add_memory(m["text"], dataset_id=m["id"]) for m in data["memories"]}
    to_theirs = {ours: theirs for theirs, ours in to_ours.items()}
    hits5 = hits1 = 0
    reciprocal = 0.0
    misses = []
    for item in data["queries"]:
        relevant = {to_ours[r] for r in item["relevant"]}
        found = [hit["id"] for hit in session.search_memory(item["query"], limit=5)]
        rank = next((i + 1 for i, memory_id in enumerate(found) if memory_id in relevant), None)
        if rank is not None:
            hits5 += 1
            hits1 += rank == 1
            reciprocal += 1 / rank
        else:
            misses.append(
                {
                    "query": item["query"],
                    "relevant": item["relevant"],
                    "top": [to_theirs.get(memory_id, memory_id) for memory_id in found],
                }
            )
    n = len(data["queries"])
    return {
        "memories": len(data["memories"]),
        "queries": n,
        "recall_at_5": hits5 / n,
        "recall_at_1": hits1 / n,
        "mrr_at_5": reciprocal / n,
        "misses": misses,
    }


# -- d. cold start ------------------------------------------------------------------------

COLD_CHILD = r"""
import json, sys, time
start = time.perf_counter()
args = json.loads(sys.argv[1])
before = set(sys.modules)
import praisonsession
t_import = time.perf_counter()
session = praisonsession.Session(  # zero configuration: the data directory is ./.praisonsession
    session_id=args["session_id"], user_id=args["user_id"], store=args["store"]
)
t_session = time.perf_counter()
chroma_after_session = "chromadb" in sys.modules
out = {"import_ms": 1000 * (t_import - start), "session_ms": 1000 * (t_session - t_import),
       "chromadb_after_session": chroma_after_session}
if args["split"]:  # the steps of a first search, one at a time, as search_memory takes them
    from praisonsession._internal import runtime
    steps = []
    def step(name, call):
        t = time.perf_counter()
        value = call()
        steps.append((name, 1000 * (time.perf_counter() - t)))
        return value
    step("import_chromadb_ms", lambda: __import__("chromadb"))
    recall = step("open_client_ms", lambda: runtime.run(session._core._memory()))
    step("open_collection_ms", lambda: recall.long.index.collection)
    step("load_model_ms", recall.embedder.load)
    vector = step("embed_ms", lambda: recall.embedder.embed_query(args["query"]))
    hits = step("query_ms", lambda: recall.long.search(vector, 5))
    out.update(steps)
else:
    hits = session.search_memory(args["query"], limit=5)
end = time.perf_counter()
out.update(search_ms=1000 * (end - t_session), total_ms=1000 * (end - start),
           top=hits[0]["text"] if hits else None)
print(json.dumps(out))
"""

COLD_MEMORIES = [
    "I would like a refund for the blender I ordered last week.",
    "My daughter's school play is on Friday at six.",
    "I prefer replies that are short and to the point.",
    "The spare house key is under the blue flower pot.",
    "I'm allergic to penicillin.",
]
COLD_QUERY = "I want my money back"


def bench_cold(root: Path, runs: int) -> dict[str, Any]:
    folder = root / "cold"
    # The children run in ``folder`` with no settings at all: the default data directory,
    # ./.praisonsession, is where this session puts the memories they search.
    session = open_session(folder / ".praisonsession", COLD_USER, COLD_SESSION)
    session.add_memories(COLD_MEMORIES)
    session.close()
    args = {
        "session_id": COLD_SESSION,
        "user_id": COLD_USER,
        "store": f"sqlite://{folder}/s.db",
        "query": COLD_QUERY,
    }
    results: dict[str, list[dict[str, Any]]] = {"public": [], "split": []}
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for mode in ("public", "split"):
        for _ in range(runs):
            child_args = json.dumps({**args, "split": mode == "split"})
            wall = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", COLD_CHILD, child_args],
                capture_output=True,
                text=True,
                cwd=folder,
                env=env,
                timeout=300,
            )
            wall = time.perf_counter() - wall
            if done.returncode != 0:
                raise RuntimeError(f"cold-start child failed:\n{done.stderr[-2000:]}")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            figures["process_ms"] = 1000 * wall
            results[mode].append(figures)

    def median(mode: str, key: str) -> float:
        return statistics.median(run[key] for run in results[mode])

    public = {k: median("public", k) for k in results["public"][0] if k.endswith("_ms")}
    split = {k: median("split", k) for k in results["split"][0] if k.endswith("_ms")}
    return {
        "runs": runs,
        **public,
        "split": split,
        "chromadb_after_session": any(r["chromadb_after_session"] for r in results["public"]),
        "top_hit": results["public"][0]["top"],
        "raw": results,
    }


# -- profiling ----------------------------------------------------------------------------

# Where the time of these workloads can go; matched against "file:function" in the profile.
KEY_FUNCTIONS = [
    ("ONNX model run (InferenceSession.run)", "onnxruntime_inference_collection.py:run"),
    ("tokenizer (encode_batch)", ":encode_batch"),
    ("MiniLM encode (tokenize + model + pooling)", "_encoder.py:encode"),
    ("Chroma upsert", "Collection.py:upsert"),
    ("Chroma query", "Collection.py:query"),
    ("Chroma get (dedupe lookup)", "Collection.py:get"),
    ("reading + chunking", "knowledge_base.py:read"),
    ("chunking", "chunking.py:chunk_text"),
    ("short-term log read (SQLite)", "short_term.py:entries"),
]


def profile(call: Callable[[], Any], label: str, top: int = 12) -> dict[str, Any]:
    """Run ``call`` under cProfile; return (and print) where the time goes."""
    profiler = cProfile.Profile()
    profiler.enable()
    start = time.perf_counter()
    call()
    total = time.perf_counter() - start
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = []
    for (file, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():
        rows.append(
            {
                "function": f"{_short(file)}:{line}({name})",
                "key": f"{Path(file).name}:{name}",
                "calls": calls,
                "tottime": tottime,
                "cumtime": cumtime,
            }
        )
    key_shares = []
    for title, pattern in KEY_FUNCTIONS:
        matched = [row for row in rows if row["key"].endswith(pattern)]
        if matched:
            cum = max(row["cumtime"] for row in matched)
            key_shares.append({"what": title, "seconds": cum, "share": cum / total})
    by_cum = sorted(rows, key=lambda row: -row["cumtime"])[:top]
    by_self = sorted(rows, key=lambda row: -row["tottime"])[:top]
    print(f"\n  cProfile of {label}: {total:.2f} s under the profiler")
    print("  where the time goes (cumulative, share of the profiled total):")
    for item in key_shares:
        print(f"    {item['share']:6.1%}  {item['seconds']:7.2f} s  {item['what']}")
    print("  top functions by own time (tottime):")
    for row in by_self:
        print(
            f"    {row['tottime'] / total:6.1%}  {row['tottime']:7.2f} s  {row['calls']:>8} calls"
            f"  {row['function']}"
        )
    return {
        "label": label,
        "total_s": total,
        "key": key_shares,
        "by_self": by_self,
        "by_cumulative": by_cum,
    }


def _short(file: str) -> str:
    """A profile file name without the site-packages or repository prefix."""
    if "site-packages/" in file:
        return file.split("site-packages/", 1)[1]
    if "praisonsession/" in file:
        return file[file.index("praisonsession/") :]
    return file


def profile_ingest(root: Path, files: int) -> dict[str, Any]:
    """add_knowledge of the corpus's first ``files`` files for a new user (new chunk ids)."""
    from praisonsession.recall.knowledge.sources import files_in

    folder = root / "profile_corpus"
    folder.mkdir()
    for number, path in enumerate(files_in(root / "corpus")[:files]):
        shutil.copy(path, folder / f"{number:02d}{path.suffix}")
    session = open_session(root / "ingest", "bench_profile_user")
    recall_of(session).embedder.embed(["warm-up"])
    return profile(lambda: session.add_knowledge(folder), f"add_knowledge(folder of {files} files)")


def profile_search(root: Path, queries: int, seed: int) -> dict[str, Any]:
    session = open_session(root / "search", SEARCH_USER)
    texts = search_queries(queries, seed)
    session.search_memory(texts[0], limit=5)
    return profile(lambda: run_searches(session, texts), f"{queries} x search_memory(limit=5)")


# -- report -------------------------------------------------------------------------------


def print_ingest(r: dict[str, Any]) -> None:
    print("\na. Knowledge ingestion: session.add_knowledge(folder)")
    print(
        f"  corpus: {r['files']} files, {r['bytes'] / 1e6:.2f} MB of text; chunk_size "
        f"{r['chunk_size']}, overlap {r['chunk_overlap']} characters"
    )
    print(
        f"  first add : {r['chunks_added']:,} chunks ({r['chunks_skipped']} skipped) in "
        f"{r['seconds']:.2f} s = {r['chunks_per_s']:.0f} chunks/s, {r['mb_per_s']:.3f} MB/s"
    )
    print(
        f"  second add: {r['readd_added']} added, {r['readd_skipped']:,} already known, "
        f"in {r['readd_seconds']:.2f} s"
    )
    print(
        f"  embedder alone on the same {r['embed_chunks']:,} chunks: {r['embed_s']:.2f} s = "
        f"{r['embed_chunks_per_s']:.0f} chunks/s ({r['embed_s'] / r['seconds']:.0%} of the add)"
    )
    if r["ingest_tokens_per_s"]:
        print(
            f"  in tokens: ingestion {r['ingest_tokens_per_s']:,.0f} tokens/s, the model alone "
            f"{r['embed_tokens_per_s']:,.0f} tokens/s -> ingestion = {r['of_model']:.0%} of "
            "the model's own rate"
        )
    if r["embed_tokens_per_s"]:
        print(
            f"    = {r['embed_tokens_per_s']:,.0f} tokens/s. Model positions run per real token:"
            f" {r['padding_sorted']:.2f} here (all chunks\n    length-sorted together), "
            f"{r['padding_add_batches']:.2f} in add_knowledge ({ADD_BATCH} chunks per embed call)"
        )
    print(
        f"  read + chunk alone: {r['read_chunk_s']:.2f} s; the rest of the add (hashing, dedupe "
        f"lookup, Chroma upsert,\n    the extra padding above): {r['rest_s']:.2f} s"
    )
    tokens = "n/a" if r["avg_tokens"] is None else f"{r['avg_tokens']:.0f} tokens"
    truncated = (
        "" if r["truncated_share"] is None
        else f"; {r['truncated_share']:.1%} exceed max_tokens={r['max_tokens']}"
    )  # fmt: skip
    print(f"  average chunk: {r['avg_chars']:.0f} characters, {tokens}{truncated}")
    print(f"  (model loaded before timing: {r['model_load_s']:.2f} s; see d. for cold figures)")


def print_search(r: dict[str, Any]) -> None:
    print(f"\nb. Search latency: session.search_memory(q, limit=5), {r['memories']:,} memories")
    print(
        f"  setup: {r['memories']:,} memories embedded in {r['setup_embed_s']:.1f} s "
        f"({r['memories'] / r['setup_embed_s']:.0f}/s), upserted in {r['setup_upsert_s']:.1f} s"
    )
    print(
        f"  {r['queries']} queries: p50 {r['p50_ms']:.2f} ms, p95 {r['p95_ms']:.2f} ms, "
        f"mean {r['mean_ms']:.2f} ms"
    )
    print(
        f"  split: query embedding alone p50 {r['embed_p50_ms']:.2f} ms (p95 "
        f"{r['embed_p95_ms']:.2f});\n    Chroma query alone p50 {r['chroma_p50_ms']:.2f} ms "
        f"(p95 {r['chroma_p95_ms']:.2f})"
    )
    print(
        f"  (diagnostic: a bare collection.query on the same collection, no where= filter, p50 "
        f"{r['chroma_unfiltered_p50_ms']:.2f} ms)"
    )


def print_recall(r: dict[str, Any]) -> None:
    print(
        f"\nc. Recall: {r['queries']} paraphrased queries over {r['memories']} memories "
        "(add_memory, search_memory(limit=5))"
    )
    print(
        f"  recall@5 {r['recall_at_5']:.3f}   recall@1 {r['recall_at_1']:.3f}   "
        f"MRR@5 {r['mrr_at_5']:.3f}"
    )
    for miss in r["misses"]:
        print(f"  missed: {miss['query']!r} wants {miss['relevant']}, got {miss['top']}")


def print_cold(r: dict[str, Any]) -> None:
    print(f"\nd. Cold start in a fresh interpreter (median of {r['runs']})")
    print(
        f"  import praisonsession {r['import_ms']:.0f} ms + Session(...) {r['session_ms']:.0f} ms"
        f" + first search_memory {r['search_ms']:.0f} ms\n    = {r['total_ms']:.0f} ms "
        f"(whole process, interpreter start included: {r['process_ms']:.0f} ms)"
    )
    s = r["split"]
    print(
        f"  first search, step by step: import chromadb {s['import_chromadb_ms']:.0f} ms, "
        f"open the client {s['open_client_ms']:.0f} ms,\n    open the memory collection "
        f"{s['open_collection_ms']:.0f} ms (the knowledge one stays closed), wait for the model "
        f"{s['load_model_ms']:.0f} ms\n    (it loads in the background from 'open the client' on),"
        f" embed the query {s['embed_ms']:.0f} ms, query Chroma {s['query_ms']:.0f} ms"
    )
    print(
        f"  chromadb imported by Session(): {r['chromadb_after_session']}\n"
        f"  top hit for {COLD_QUERY!r}: {r['top_hit']!r}"
    )


def targets(figures: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    if "search" in figures:
        p50 = figures["search"]["p50_ms"]
        n = figures["search"]["memories"]
        rows.append(
            {
                "target": f"search p50 < {SEARCH_P50_TARGET_MS:g} ms at {n:,} memories",
                "measured": f"{p50:.2f} ms",
                "pass": p50 < SEARCH_P50_TARGET_MS,
            }
        )
    if "ingest" in figures:
        share = figures["ingest"]["of_model"]
        rows.append(
            {
                "target": f"ingestion tokens/s >= {INGEST_OF_MODEL_TARGET:.0%} of the model's own",
                "measured": f"{share:.0%}",
                "pass": share >= INGEST_OF_MODEL_TARGET,
            }
        )
    if "add_memories" in figures:
        rate = figures["add_memories"]["memories_per_s"]
        rows.append(
            {
                "target": f"add_memories >= {ADD_MEMORIES_TARGET:g} memories/s",
                "measured": f"{rate:,.0f}/s",
                "pass": rate >= ADD_MEMORIES_TARGET,
            }
        )
    if "recall" in figures:
        value = figures["recall"]["recall_at_5"]
        rows.append(
            {
                "target": f"recall@5 >= {RECALL5_TARGET:g}",
                "measured": f"{value:.3f}",
                "pass": value >= RECALL5_TARGET,
            }
        )
    return rows


def print_targets(rows: list[dict[str, Any]]) -> None:
    print("\ne. Targets")
    width = max(len(row["target"]) for row in rows) + 2
    for row in rows:
        verdict = "PASS" if row["pass"] else "MISS"
        print(f"  {row['target']:<{width}}{row['measured']:>16}  {verdict}")


def diagnose(figures: dict[str, Any], profiles: dict[str, Any]) -> list[str]:
    """Plain-language causes of missed speed targets, computed from the figures above."""
    lines = []
    missed = {row["target"].split()[0] for row in figures["targets"] if not row["pass"]}

    def share(name: str, what: str) -> str:
        for item in profiles.get(name, {}).get("key", []):
            if item["what"] == what:
                return f"{item['share']:.0%}"
        return "n/a"

    if "search" in missed:
        r = figures["search"]
        text = (
            f"search: p50 {r['p50_ms']:.1f} ms = query embedding ~{r['embed_p50_ms']:.1f} ms + "
            f"Chroma query ~{r['chroma_p50_ms']:.1f} ms (cProfile: Chroma query "
            f"{share('search', 'Chroma query')}, ONNX run "
            f"{share('search', 'ONNX model run (InferenceSession.run)')} of search_memory)."
        )
        if r["chroma_p50_ms"] > 3 * r["chroma_unfiltered_p50_ms"]:
            text += (
                f" A bare collection.query on the same collection, without a where= filter, "
                f"takes {r['chroma_unfiltered_p50_ms']:.1f} ms: the time goes in how "
                "LongTermMemory.search / VectorIndex.query query Chroma (e.g. a metadata filter)."
            )
        lines.append(text)
    if "ingestion" in missed:
        r = figures["ingest"]
        text = (
            f"ingestion: {r['of_model']:.0%} of the model's own rate (cProfile: ONNX "
            f"InferenceSession.run {share('ingest', 'ONNX model run (InferenceSession.run)')}, "
            f"Chroma upsert {share('ingest', 'Chroma upsert')} of add_knowledge)."
        )
        if r["padding_add_batches"] is not None:
            text += (
                f" add_knowledge embeds {ADD_BATCH} chunks per call, so lengths are sorted only "
                f"within each call: the model runs {r['padding_add_batches']:.2f} positions per "
                f"real token there against {r['padding_sorted']:.2f} when all chunks are sorted "
                "together."
            )
        lines.append(text)
    return lines


def environment() -> dict[str, Any]:
    import platform

    return {
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "system": platform.platform(),
    }


# -- main ---------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=40, help="files in the corpus (40)")
    parser.add_argument("--corpus-mb", type=float, default=1.05, help="corpus size, MB (1.05)")
    parser.add_argument("--memories", type=int, default=10_000, help="memories searched (10000)")
    parser.add_argument("--queries", type=int, default=200, help="timed searches (200)")
    parser.add_argument(
        "--batch-memories", type=int, default=2000, help="memories added at once (2000)"
    )
    parser.add_argument("--cold-runs", type=int, default=3, help="cold subprocesses per mode (3)")
    parser.add_argument("--seed", type=int, default=1234, help="seed of the generated text")
    parser.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="cProfile the ingestion and search workloads: when a target misses (auto)",
    )
    parser.add_argument(
        "--profile-files", type=int, default=8, help="files added under cProfile (8)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes for a smoke run: 10 files, 0.2 MB, 1000 memories, 50 queries, 1 cold",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.quick:
        args.files, args.corpus_mb = min(args.files, 10), min(args.corpus_mb, 0.2)
        args.memories, args.queries = min(args.memories, 1000), min(args.queries, 50)
        args.batch_memories = min(args.batch_memories, 500)
        args.cold_runs, args.profile_files = 1, min(args.profile_files, 3)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="ps-bench-memory-"))
    figures: dict[str, Any] = {"environment": environment(), "options": vars(args)}
    env = figures["environment"]
    print(
        f"praisonsession memory & knowledge benchmark — Python {env['python']}, "
        f"{env['cpus']} CPUs, {env['system']}"
    )
    if env["load_average"]:
        print(f"load average at start: {', '.join(f'{x:.2f}' for x in env['load_average'])}")
    print(
        f"data (session store + Chroma) under {root}; the session store is SQLite at durability "
        "'process' (synchronous=NORMAL), Chroma keeps its own"
    )
    try:
        # d first: its parent writes only a small collection, and nothing is warm in children.
        figures["cold"] = cold = bench_cold(root, args.cold_runs)
        figures["ingest"] = bench_ingest(root, args.files, args.corpus_mb, args.seed)
        print_ingest(figures["ingest"])
        figures["search"] = bench_search(root, args.memories, args.queries, args.seed)
        print_search(figures["search"])
        figures["add_memories"] = bench_add_memories(root, args.batch_memories, args.seed)
        print_add_memories(figures["add_memories"])
        figures["recall"] = bench_recall(root, RECALL_DATA)
        print_recall(figures["recall"])
        print_cold(cold)
        rows = figures["targets"] = targets(figures)
        print_targets(rows)

        profiles = {}
        missed = {row["target"].split()[0] for row in rows if not row["pass"]}
        if args.profile == "always" or (args.profile == "auto" and "ingestion" in missed):
            profiles["ingest"] = profile_ingest(root, args.profile_files)
        if args.profile == "always" or (args.profile == "auto" and "search" in missed):
            profiles["search"] = profile_search(root, args.queries, args.seed)
        if profiles:
            figures["profiles"] = profiles
        figures["diagnosis"] = causes = diagnose(figures, profiles)
        if causes:
            print("\nWhy targets missed:")
            for line in causes:
                print(textwrap.fill(line, 96, initial_indent="  ", subsequent_indent="    "))
    finally:
        if hasattr(os, "getloadavg"):
            figures["load_average_end"] = load = os.getloadavg()
            print(f"\nload average at end: {', '.join(f'{x:.2f}' for x in load)}")
        if args.keep:
            print(f"\nkept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str), encoding="utf-8")
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
