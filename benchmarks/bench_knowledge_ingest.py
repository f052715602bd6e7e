"""Knowledge ingestion as a new user does it: 400 small Markdown files, one ``add_knowledge``.

Run from the repository root::

    .venv/bin/python benchmarks/bench_knowledge_ingest.py [--quick] [--files 400] [--rounds 3]

On one generated folder (seeded: the same files every time), in one process, ``--rounds``
rounds of two runs each, interleaved so that both see the same load:

1. ``Session(...).add_knowledge(folder)`` for a new user, in a fresh data directory, with the
   model not loaded yet, timed as a whole from the first call (so it includes opening Chroma
   and loading the model, as a new user's first call does). The time the embedder spends
   inside it is measured too, so the rest (read, chunk, look up, write, open, load) is known
   from the same run;
2. the embedder alone on the same chunks (the raw engine), in the same order and batches, on
   a model loaded before.

The ratio of the two is given per round and as the median; the target is the whole within
1.2x of the embedder alone. On a loaded machine the two runs of a round can see different
loads; the whole over the embedding inside it (same run, same load) shows the overhead alone.
Then the same work one stage at a time, for another new user: read the files, chunk them, look
up which chunks are known, embed, write to Chroma.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from praisonsession import Session  # noqa: E402

TOPICS = [
    "billing",
    "shipping",
    "returns",
    "accounts",
    "security",
    "printers",
    "holidays",
    "parking",
    "lunch",
    "onboarding",
]
VERBS = ["explains", "covers", "lists", "describes", "summarises", "clarifies"]
NOUNS = ["the policy", "each step", "the exceptions", "who to contact", "the deadlines", "costs"]


def write_folder(folder: Path, files: int, seed: int) -> None:
    """``files`` small Markdown pages (a title, 2 to 4 sections of a few sentences)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(files):
        topic = rng.choice(TOPICS)
        sections = []
        for s in range(rng.randint(2, 4)):
            sentences = [
                f"This part {rng.choice(VERBS)} {rng.choice(NOUNS)} for {topic} case {n}-{s}-{k}."
                for k in range(rng.randint(3, 7))
            ]
            sections.append(f"## {topic.title()} {s}\n\n" + " ".join(sentences))
        (folder / f"page_{n:03d}.md").write_text(
            f"# {topic.title()} note {n}\n\n" + "\n\n".join(sections) + "\n", "utf-8"
        )


def open_session(root: Path, user: str) -> Session:
    root.mkdir(parents=True, exist_ok=True)
    return Session(
        "ingest",
        user,
        store=f"sqlite://{root}/s.db",
        settings={"data_dir": str(root / "data")},
        knowledge_config={"progress": False},
    )


def timed_embedder() -> tuple[Any, list[float]]:
    """A new, unloaded process-wide embedder (a new user's first call loads the model), with
    the seconds each of its ``embed`` calls takes recorded."""
    from praisonsession.recall import core as recall
    from praisonsession.recall.embeddings import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    spent: list[float] = []
    embed = embedder.embed

    def timed(texts: list[str]) -> list[list[float]]:
        start = time.perf_counter()
        try:
            return embed(texts)
        finally:
            spent.append(time.perf_counter() - start)

    embedder.embed = timed  # type: ignore[method-assign]
    recall._embedders.clear()
    for name in recall.EMBEDDER_NAMES:
        recall._embedders[name] = embedder
    return embedder, spent


def whole(root: Path, folder: Path, user: str) -> dict[str, Any]:
    _, spent = timed_embedder()
    session = open_session(root / user, user)
    started = time.perf_counter()
    added = session.add_knowledge(folder)
    seconds = time.perf_counter() - started
    session.close()
    return {
        "seconds": seconds,
        "embedding_inside": sum(spent),
        "chunks": added.chunks_added,
        "files": added.files,
    }


def embedder_alone(embedder: Any, texts: list[str]) -> tuple[float, list[list[float]]]:
    """The raw engine: the same chunks through a loaded embedder, in add_knowledge's order and
    batches (shortest first, 256 at a time); the seconds, and the vectors."""
    vectors: list[list[float]] = []
    start = time.perf_counter()
    for first in range(0, len(texts), 256):
        vectors += embedder.embed(texts[first : first + 256])
    return time.perf_counter() - start, vectors


class Stages:
    """The work of ``add_knowledge`` one stage at a time, for another new user. The "embed"
    stage is the embedder alone of the first round (the same work), whose vectors the
    "write to Chroma" stage then writes."""

    def __init__(self, root: Path, folder: Path) -> None:
        from praisonsession.recall.knowledge.chunking import chunk_text

        session = open_session(root / "stages", "second_user")
        recall = session._core._open_recall()  # opened first: not a stage here
        self.kb = kb = recall.knowledge
        self.times: dict[str, float] = {}
        documents = self.timed("read files", lambda: kb.read(folder))
        chunks = self.timed(
            "chunk",
            lambda: [
                chunk
                for d in documents
                for chunk in chunk_text(d.text, kb.chunk_size, kb.chunk_overlap)
            ],
        )
        self.ids = [kb._chunk_id(chunk) for chunk in chunks]
        self.timed("look up known chunks", lambda: kb.index.existing(self.ids))
        self.order = sorted(range(len(chunks)), key=lambda i: len(chunks[i]))
        self.texts = [chunks[i] for i in self.order]  # add_knowledge's order

    def timed(self, name: str, work: Any) -> Any:
        start = time.perf_counter()
        result = work()
        self.times[name] = time.perf_counter() - start
        return result

    def write(self, embed_seconds: float, vectors: list[list[float]]) -> None:
        self.times["embed"] = embed_seconds
        order, texts = self.order, self.texts
        metadatas = [{"source": "bench", "kind": "markdown", "chunk": i} for i in order]
        self.timed(
            "write to Chroma",
            lambda: [
                self.kb.index.add(
                    [self.ids[i] for i in order[s : s + 256]],
                    texts[s : s + 256],
                    metadatas[s : s + 256],
                    vectors[s : s + 256],
                )
                for s in range(0, len(texts), 256)
            ],
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    parser.add_argument("--quick", action="store_true", help="40 files, 1 round, for the tests")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    files, rounds = (40, 1) if args.quick else (args.files, args.rounds)
    root = Path(tempfile.mkdtemp(prefix="bench_knowledge_ingest_"))
    try:
        folder = root / "docs"
        write_folder(folder, files, seed=7)
        stages = Stages(root, folder)
        texts = stages.texts
        from praisonsession.recall.embeddings import MiniLMEmbedder

        alone_embedder = MiniLMEmbedder()
        alone_embedder.load()
        runs = []
        for n in range(rounds):
            run = whole(root, folder, f"new_user_{n}")
            run["alone"], vectors = embedder_alone(alone_embedder, texts)
            run["load"] = os.getloadavg()[0]
            runs.append(run)
        stages.write(runs[0]["alone"], vectors)
        split = stages.times
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert all(run["chunks"] == len(texts) for run in runs), (runs, len(texts))
    ratios = [run["seconds"] / run["alone"] for run in runs]
    ratio = statistics.median(ratios)
    first = runs[0]
    print(
        f"Knowledge ingestion: {first['files']} Markdown files, {first['chunks']} chunks, new user"
    )
    print(
        f"   {'round':>5} {'add_knowledge s':>16} {'embedding in it':>16} {'the rest':>9} "
        f"{'whole/its embedding':>20} {'embedder alone':>15} {'ratio':>7} {'load':>5}"
    )
    for n, (run, r) in enumerate(zip(runs, ratios, strict=True)):
        rest = run["seconds"] - run["embedding_inside"]
        print(
            f"   {n + 1:>5} {run['seconds']:16.2f} {run['embedding_inside']:16.2f} {rest:9.2f} "
            f"{run['seconds'] / run['embedding_inside']:19.3f}x "
            f"{run['alone']:15.2f} {r:7.2f} {run['load']:5.1f}"
        )
    best = min(runs, key=lambda run: run["seconds"])
    print(
        f"   {'add_knowledge(folder), first call':40} {best['seconds']:8.2f} s "
        f"({best['chunks'] / best['seconds']:.0f} chunks/s, fastest round)"
    )
    fastest = min(run["alone"] for run in runs)
    print(
        f"   {'embedder alone, same chunks (raw)':40} {fastest:8.2f} s "
        f"({len(texts) / fastest:.0f} chunks/s, fastest round)"
    )
    print(
        f"   {'ratio (median of rounds)':40} {ratio:8.2f}x   target <= 1.20x: "
        f"{'PASS' if ratio <= 1.2 else 'MISS'}"
    )
    print("   stages, one at a time (another new user):")
    for name, seconds in split.items():
        print(f"     {name:38} {seconds:8.2f} s")
    if args.json:
        figures = {"rounds": runs, "ratios": ratios, "ratio": ratio, "stages": split}
        args.json.write_text(json.dumps(figures, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
