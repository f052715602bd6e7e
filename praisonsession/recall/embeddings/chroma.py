"""Hand any Embedder to chromadb as a registered EmbeddingFunction.

chromadb persists an embedding function's ``name()`` and config with each collection, checks
the name when the collection is reopened, and rebuilds functions by name through a registry.
``name()`` is static there, so each embedder name gets its own small registered subclass,
named ``praisonsession:<embedder name>``: reopening a collection with a different embedder then
fails loudly instead of silently mixing vector spaces. chromadb is imported on first call only.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, cast

from ...errors import InvalidValueError
from .coerce import ChromaFunctionEmbedder, coerce_embedder, is_embedder
from .protocol import Embedder

if TYPE_CHECKING:
    from chromadb.api.types import PyEmbeddings

NAME_PREFIX = "praisonsession:"

_classes: dict[str, Any] = {}
_classes_lock = threading.Lock()


def chroma_name(embedder: Embedder) -> str:
    """The name chromadb records for collections embedded by ``embedder``."""
    return NAME_PREFIX + embedder.name


def as_chroma_embedding_function(embedder: Embedder) -> Any:
    """Return a chromadb ``EmbeddingFunction`` that embeds with ``embedder``.

    Pass the result as ``embedding_function=`` to ``create_collection``/``get_collection``
    (also when reopening a persisted collection in another process). A chromadb function, or
    an embedder made from one by ``coerce_embedder``, comes back as that original function, so
    collections keep chromadb's own name for it. The result defaults to cosine space.
    """
    if getattr(embedder, "praisonsession_embedder", None) is not None:
        return embedder  # already one of ours
    if isinstance(embedder, ChromaFunctionEmbedder):
        return embedder.function
    if not is_embedder(embedder):
        if callable(embedder) and callable(getattr(embedder, "name", None)):
            return embedder  # already speaks chromadb's protocol
        coerce_embedder(embedder)  # raises a TypeError that explains what is accepted
    cls = _adapter_class(chroma_name(embedder))
    cls.latest = embedder
    return cls(embedder)


def _adapter_class(name: str) -> Any:
    with _classes_lock:
        cls = _classes.get(name)
        if cls is None:
            cls = _classes[name] = _make_adapter_class(name)
        return cls


def _make_adapter_class(registered_name: str) -> Any:
    from chromadb.api.types import (
        Documents,
        EmbeddingFunction,
        Embeddings,
        Space,
        normalize_embeddings,
        validate_embeddings,
    )
    from chromadb.utils.embedding_functions import register_embedding_function

    @register_embedding_function
    class PraisonsessionEmbeddingFunction(EmbeddingFunction[Documents]):
        """chromadb view of one praisonsession Embedder (registered per embedder name)."""

        # The embedder most recently wrapped under this name; chromadb's build_from_config
        # returns it, since an arbitrary embedder cannot be rebuilt from JSON.
        latest: Embedder | None = None

        def __init__(self, embedder: Embedder) -> None:
            self.praisonsession_embedder = embedder

        def __call__(self, input: Documents) -> Embeddings:
            vectors = self.praisonsession_embedder.embed(list(input))
            return vectors  # type: ignore[return-value]  # chromadb's wrapper makes them arrays

        def embed_query(self, input: Documents) -> Embeddings:
            embedder = self.praisonsession_embedder
            vectors: PyEmbeddings = [embedder.embed_query(text) for text in input]
            # normalize_embeddings gives None for None only (chromadb casts it the same way)
            return validate_embeddings(cast(Embeddings, normalize_embeddings(vectors)))

        @staticmethod
        def name() -> str:
            return registered_name

        def get_config(self) -> dict[str, Any]:
            embedder = self.praisonsession_embedder
            return {"embedder": embedder.name, "dimension": embedder.dimension}

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> PraisonsessionEmbeddingFunction:
            embedder = PraisonsessionEmbeddingFunction.latest
            if embedder is None:
                raise InvalidValueError(
                    f"no embedder registered as {registered_name!r} in this process; pass "
                    "embedding_function=as_chroma_embedding_function(...) when opening it"
                )
            return PraisonsessionEmbeddingFunction(embedder)

        def default_space(self) -> Space:
            return "cosine"

        def supported_spaces(self) -> list[Space]:
            return ["cosine", "ip", "l2"]

        def validate_config_update(
            self, old_config: dict[str, Any], new_config: dict[str, Any]
        ) -> None:
            for key in ("embedder", "dimension"):
                if key in new_config and new_config[key] != old_config.get(key):
                    raise InvalidValueError(f"cannot change the {key} of an embedded collection")

    PraisonsessionEmbeddingFunction.__qualname__ = (
        f"PraisonsessionEmbeddingFunction[{registered_name}]"
    )
    return PraisonsessionEmbeddingFunction
