"""What ``memory_config`` and ``knowledge_config`` may hold, checked when a session is made.

A session checks them at once, before anything is opened, so a typo or a value of the wrong
kind fails at ``Session(...)`` with a typed error naming the key, instead of at the first
memory call with a ``TypeError`` from deep inside. PraisonAI's own keys are understood where
they mean something here (``provider``, ``vector_store``, ``chunker``) and refused where they
ask for what this library does not do.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

from .._internal.checks import KNOWLEDGE_SCOPES, check_choice, check_count, check_flag, is_int
from .._internal.redaction import redact_url
from ..errors import InvalidValueError
from .vectors.pgvector import is_postgres_url

__all__ = ["EMBEDDER_NAMES", "check_knowledge_config", "check_memory_config"]

#: Embedder names a config or the settings may give (the shipped offline model).
EMBEDDER_NAMES = ("minilm", "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8")
#: PraisonAI's memory providers that mean "a Chroma collection", which is what is used here.
_CHROMA_PROVIDERS = ("rag", "chroma", "chromadb")

_MEMORY_KEYS = (
    "embedder",
    "vector_store_url",
    "context_chars",
    "context_min_score",
    "progress",
    "provider",
    "dedupe_threshold",
    "prefer_recent",
)
_KNOWLEDGE_KEYS = (
    "embedder",
    "scope",
    "chunk_size",
    "chunk_overlap",
    "progress",
    "vector_store",
    "chunker",
)


def check_memory_config(config: Any) -> dict[str, Any]:
    """``memory_config`` checked and normalised (PraisonAI's ``provider`` understood)."""
    given = _as_dict(config, "memory_config")
    _refuse_unknown(given, _MEMORY_KEYS, "memory_config")
    checked: dict[str, Any] = {}
    for key, value in given.items():
        if key == "embedder":
            checked[key] = check_embedder(value, "memory_config['embedder']")
        elif key == "vector_store_url":
            checked[key] = _check_vector_url(value, "memory_config['vector_store_url']")
        elif key == "context_chars":
            checked[key] = _int(value, "memory_config['context_chars']", low=200)
        elif key == "context_min_score":
            checked[key] = _number(value, "memory_config['context_min_score']", -1.0, 1.0)
        elif key == "progress":
            checked[key] = check_flag(value, "memory_config['progress']")
        elif key == "dedupe_threshold":
            checked[key] = _number(value, "memory_config['dedupe_threshold']", 0.0, 1.0)
        elif key == "prefer_recent":
            checked[key] = check_flag(value, "memory_config['prefer_recent']")
        elif key == "provider":
            _check_provider(value, "memory_config['provider']")
    return checked


def check_knowledge_config(config: Any) -> dict[str, Any]:
    """``knowledge_config`` checked and normalised (PraisonAI's ``vector_store`` and
    ``chunker`` understood)."""
    given = _as_dict(config, "knowledge_config")
    _refuse_unknown(given, _KNOWLEDGE_KEYS, "knowledge_config")
    checked: dict[str, Any] = {}
    for key, value in given.items():
        if key == "embedder":
            checked[key] = check_embedder(value, "knowledge_config['embedder']")
        elif key == "scope":
            checked[key] = check_choice(value, KNOWLEDGE_SCOPES, "knowledge_config['scope']")
        elif key == "chunk_size":
            checked[key] = _int(value, "knowledge_config['chunk_size']", low=50)
        elif key == "chunk_overlap":
            checked[key] = _int(value, "knowledge_config['chunk_overlap']", low=0)
        elif key == "progress":
            checked[key] = check_flag(value, "knowledge_config['progress']")
        elif key == "chunker":
            checked.update(_chunker(value))
        elif key == "vector_store":
            url = _vector_store(value)
            if url is not None:
                checked["vector_store_url"] = url
    size = checked.get("chunk_size", 800)
    overlap = checked.get("chunk_overlap", default_overlap(size))
    if overlap >= size // 2:
        raise InvalidValueError(
            f"knowledge_config['chunk_overlap'] ({overlap}) must be less than half of "
            f"chunk_size ({size})."
        )
    return checked


def default_overlap(chunk_size: int) -> int:
    """The overlap used when none is given: 120 characters, less for small chunks."""
    return min(120, chunk_size // 2 - 1)


def check_embedder(value: Any, where: str) -> Any:
    """An embedder choice: a name of the shipped model, an Embedder, or a chromadb
    embedding function. Checked by shape only: nothing is loaded here."""
    if isinstance(value, str):
        if value not in EMBEDDER_NAMES:
            raise InvalidValueError(
                f"{where} is {value!r}, which is not an embedder this library ships; use "
                f"'minilm', or pass an Embedder or a chromadb embedding function."
            )
        return value
    from .embeddings.coerce import is_embedder

    if is_embedder(value) or (callable(value) and callable(getattr(value, "name", None))):
        return value
    raise InvalidValueError(
        f"{where} is a {type(value).__name__}; pass 'minilm', an Embedder (name, dimension, "
        "embed, embed_query) or a chromadb embedding function."
    )


def _as_dict(config: Any, name: str) -> dict[str, Any]:
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise InvalidValueError(f"{name} must be a dict or None, got {type(config).__name__}.")
    return dict(config)


def _refuse_unknown(given: dict[str, Any], known: tuple[str, ...], name: str) -> None:
    for key in given:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise InvalidValueError(
                f"{name} has no option {key!r}.{hint} Its options are: {', '.join(known)}."
            )


def _int(value: Any, where: str, low: int) -> int:
    return check_count(value, where, low=low)


def _number(value: Any, where: str, low: float, high: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise InvalidValueError(
            f"{where} must be a number from {low:g} to {high:g}, got {value!r}."
        )
    return float(value)


def _check_vector_url(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not (
        value == "embedded" or value.startswith(("http://", "https://")) or is_postgres_url(value)
    ):
        shown = redact_url(value) if isinstance(value, str) else type(value).__name__
        raise InvalidValueError(
            f"{where} must be a Chroma server URL such as 'http://localhost:8000', a "
            "PostgreSQL one such as 'postgresql://user@host/db?schema=app' (pgvector), or "
            f"'embedded' (embedded Chroma under the data directory), got {shown!r}."
        )
    return value


def _check_provider(value: Any, where: str) -> None:
    if value not in _CHROMA_PROVIDERS:
        raise InvalidValueError(
            f"{where} is {value!r}; praisonsession keeps memory in Chroma (embedded, or a server) "
            "or PostgreSQL, as vector_store_url says, so use 'chroma' or leave it out."
        )


def _chunker(value: Any) -> dict[str, Any]:
    """PraisonAI's ``{"type": ..., "chunk_size": ..., "chunk_overlap": ...}``."""
    chunker = _as_dict(value, "knowledge_config['chunker']")
    _refuse_unknown(chunker, ("type", "chunk_size", "chunk_overlap"), "knowledge_config['chunker']")
    if chunker.get("type", "recursive") != "recursive":
        raise InvalidValueError(
            f"knowledge_config['chunker']['type'] is {chunker['type']!r}; the chunker here splits "
            "at paragraphs, lines, sentences and words ('recursive'), the only type offered."
        )
    found = {}
    if "chunk_size" in chunker:
        found["chunk_size"] = _int(
            chunker["chunk_size"], "knowledge_config['chunker']['chunk_size']", low=50
        )
    if "chunk_overlap" in chunker:
        found["chunk_overlap"] = _int(
            chunker["chunk_overlap"], "knowledge_config['chunker']['chunk_overlap']", low=0
        )
    return found


def _vector_store(value: Any) -> str | None:
    """PraisonAI's ``{"provider": "chroma", "config": {"host", "port", ...}}``: a server URL when
    host is given, else the embedded store."""
    store = _as_dict(value, "knowledge_config['vector_store']")
    _refuse_unknown(store, ("provider", "config"), "knowledge_config['vector_store']")
    _check_provider(store.get("provider", "chroma"), "knowledge_config['vector_store']['provider']")
    config = _as_dict(store.get("config"), "knowledge_config['vector_store']['config']")
    _refuse_unknown(
        config,
        ("host", "port", "path", "collection_name"),
        "knowledge_config['vector_store']['config']",
    )
    if config.get("path") is not None or config.get("collection_name") is not None:
        raise InvalidValueError(
            "knowledge_config['vector_store']['config'] sets path or collection_name; here the "
            "embedded store lives under the data directory (PRAISONSESSION_DATA_DIR) and "
            "collections are named per user, so leave them out."
        )
    host = config.get("host")
    if host is None:
        return None
    port = config.get("port", 8000)
    if not isinstance(host, str) or not is_int(port):
        raise InvalidValueError(
            "knowledge_config['vector_store']['config'] needs a str host and an int port."
        )
    return f"http://{host}:{port}"
