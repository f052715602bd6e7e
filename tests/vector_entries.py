"""Entries written straight to one collection of an embedded Chroma store, with vectors of
their own (seeded, so that another process can look each one up by its vector), for the tests
of processes sharing the store (``test_memory_processes.py``).

Run as ``python vector_entries.py FOLDER write TAG COUNT SEED`` to write COUNT entries tagged
TAG, or ``... probe TAG COUNT SEED`` to print as JSON what this new process finds of them, or
``... saved`` to print how many entries the collection holds and its saved index lacks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from praisonsession.recall.embeddings.minilm import MiniLMEmbedder
from praisonsession.recall.vectors.index import VectorIndex, vector_store

#: Entries a call writes: Chroma applies them to its index in batches of this size.
BATCH = 100


def index_at(folder: Path) -> VectorIndex:
    return VectorIndex(vector_store(folder), "memory_shared", MiniLMEmbedder())


def entries(tag: str, count: int, seed: int) -> tuple[list[str], list[list[float]]]:
    vectors = np.random.default_rng(seed).standard_normal((count, 384)).astype("float32")
    return [f"{tag}{i}" for i in range(count)], vectors.tolist()


def write(index: VectorIndex, tag: str, count: int, seed: int) -> None:
    ids, vectors = entries(tag, count, seed)
    for start in range(0, count, BATCH):
        part = ids[start : start + BATCH]
        texts = [f"{tag} entry {entry}" for entry in part]
        index.add(part, texts, [{"tag": tag}] * len(part), vectors[start : start + BATCH])


def probe(index: VectorIndex, tag: str, count: int, seed: int) -> dict[str, Any]:
    """Every 50th entry looked up by its own vector (it must come first), the vectors of the
    first five read back, and the collection's count."""
    ids, vectors = entries(tag, count, seed)
    each = range(0, count, 50)
    return {
        "found by their own vector": sum(index.query(vectors[i], 1)[0].id == ids[i] for i in each),
        "probed": len(each),
        "vectors read": len(index.get(ids=ids[:5], vectors=True)),
        "count": index.count(),
    }


def saved(folder: Path) -> dict[str, int]:
    """The entries the collection holds, and how many of them its index saved on disk lacks:
    how far Chroma's log is past the index's saved position (``max_seq_id`` of each segment;
    the folder holds this one collection, so its positions count its entries)."""
    import sqlite3

    index = index_at(folder)
    conn = sqlite3.connect(folder / "chroma.sqlite3")
    try:
        at = dict(
            conn.execute(
                "SELECT s.scope, coalesce(m.seq_id, 0) FROM segments s "
                "LEFT JOIN max_seq_id m ON m.segment_id = s.id WHERE s.collection = ?",
                (str(index.collection.id),),
            ).fetchall()
        )
    finally:
        conn.close()
    return {"entries": index.count(), "unsaved": at["METADATA"] - at["VECTOR"]}


if __name__ == "__main__":
    folder, job, *rest = sys.argv[1:]
    if job == "saved":
        print(json.dumps(saved(Path(folder))))
        sys.exit()
    tag, count, seed = rest
    index = index_at(Path(folder))
    if job == "write":
        write(index, tag, int(count), int(seed))
    else:
        print(json.dumps(probe(index, tag, int(count), int(seed))))
