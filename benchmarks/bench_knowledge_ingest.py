"""Knowledge ingestion as a new user does it: 400 small Markdown files, one ``add_knowledge``.

Run from the repository root::

    .venv/bin/python benchmarks/bench_knowledge_ingest.py [--quick] [--files 400] [--json OUT]

Two runs, in one process, on the same generated folder (seeded: the same files every time):

1. ``Session(...).add_knowledge(folder)`` for a new user, in a fresh data directory, timed as a
   whole from the first call (so it includes opening Chroma and loading the model, as a new
   user's first call does);
2. the same work one stage at a time, for another new user: read the files, chunk them, look
   up which chunks are known, embed, write to Chroma. Its "embed" stage is the raw engine: the
   embedder alone on the same chunks, in the same order and batches.

The target is the whole (1) within 1.2x of the embedder alone.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
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
    return Session(
        "ingest",
        user,
        store=f"sqlite://{root}/s.db",
        settings={"data_dir": str(root / "data")},
        knowledge_config={"progress": False},
    )


def whole(root: Path, folder: Path) -> dict[str, Any]:
    session = open_session(root, "new_user")
    started = time.perf_counter()
    added = session.add_knowledge(folder)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "chunks": added.chunks_added, "files": added.files}


def stages(root: Path, folder: Path) -> tuple[dict[str, float], list[str]]:
    from praisonsession.knowledge.chunking import chunk_text

    session = open_session(root, "second_user")
    times: dict[str, float] = {}

    def timed(name: str, work: Any) -> Any:
        start = time.perf_counter()
        result = work()
        times[name] = time.perf_counter() - start
        return result

    def timed_add(name: str, work: Any) -> Any:
        start = time.perf_counter()
        result = work()
        times[name] = times.get(name, 0.0) + time.perf_counter() - start
        return result

    recall = session._core._open_recall()  # open already: the first run loaded the model
    kb = recall.knowledge
    documents = timed("read files", lambda: kb.read(folder))
    chunks = timed(
        "chunk",
        lambda: [
            chunk
            for d in documents
            for chunk in chunk_text(d.text, kb.chunk_size, kb.chunk_overlap)
        ],
    )
    ids = [kb._chunk_id(chunk) for chunk in chunks]
    timed("look up known chunks", lambda: kb.index.existing(ids))
    order = sorted(range(len(chunks)), key=lambda i: len(chunks[i]))
    texts = [chunks[i] for i in order]
    vectors = [
        vector
        for start in range(0, len(texts), 256)  # add_knowledge's batches
        for vector in timed_add("embed", lambda s=start: recall.embedder.embed(texts[s : s + 256]))
    ]
    metadatas = [{"source": "bench", "kind": "markdown", "chunk": i} for i in order]
    timed(
        "write to Chroma",
        lambda: [
            kb.index.add(
                [ids[i] for i in order[s : s + 256]],
                texts[s : s + 256],
                metadatas[s : s + 256],
                vectors[s : s + 256],
            )
            for s in range(0, len(texts), 256)
        ],
    )
    return times, texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="40 files, for the test suite")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    files = 40 if args.quick else args.files
    root = Path(tempfile.mkdtemp(prefix="bench_knowledge_ingest_"))
    try:
        folder = root / "docs"
        write_folder(folder, files, seed=7)
        run = whole(root, folder)
        split, texts = stages(root, folder)
        alone = split["embed"]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert run["chunks"] == len(texts), (run, len(texts))
    ratio = run["seconds"] / alone
    print(f"Knowledge ingestion: {run['files']} Markdown files, {run['chunks']} chunks, new user")
    print(
        f"   {'add_knowledge(folder), first call':40} {run['seconds']:8.2f} s "
        f"({run['chunks'] / run['seconds']:.0f} chunks/s)"
    )
    print(
        f"   {'embedder alone, same chunks (raw)':40} {alone:8.2f} s "
        f"({len(texts) / alone:.0f} chunks/s)"
    )
    print(f"   {'ratio':40} {ratio:8.2f}x   target <= 1.20x: {'PASS' if ratio <= 1.2 else 'MISS'}")
    print("   stages, one at a time (another new user):")
    for name, seconds in split.items():
        print(f"     {name:38} {seconds:8.2f} s")
    if args.json:
        figures = {"whole": run, "embedder_alone_s": alone, "ratio": ratio, "stages": split}
        args.json.write_text(json.dumps(figures, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
