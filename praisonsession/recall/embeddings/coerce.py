"""Accept either our Embedder or a chromadb embedding function wherever an embedder is expected.

Users who already have a chromadb function (OpenAI, Ollama, their own) can pass it straight in.
Detection is by shape, not isinstance, so chromadb is never imported here.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

from ...errors import InvalidValueError
from .protocol import Embedder
from .validation import check_text, check_texts

_PROBE = "dimension probe"


def is_embedder(obj: object) -> TypeGuard[Embedder]:
    """True if ``obj`` has the Embedder members (a str ``name``; ``embed``; ``embed_query``)."""
    return (
        isinstance(getattr(obj, "name", None), str)
        and _declares(obj, "dimension")
        and callable(getattr(obj, "embed", None))
        and callable(getattr(obj, "embed_query", None))
    )


def coerce_embedder(obj: object) -> Embedder:
    """Return ``obj`` as an Embedder.

    Our embedders are returned unchanged, functions made by ``as_chroma_embedding_function``
    are unwrapped, and any other chromadb embedding function is wrapped.
    """
    inner = getattr(obj, "praisonsession_embedder", None)
    if inner is not None and is_embedder(inner):
        return inner
    if is_embedder(obj):
        return obj
    if callable(obj) and callable(getattr(obj, "name", None)):
        return ChromaFunctionEmbedder(obj)
    raise InvalidValueError(
        f"expected an Embedder (name, dimension, embed, embed_query) or a chromadb "
        f"EmbeddingFunction, got {type(obj).__name__}"
    )


class ChromaFunctionEmbedder:
    """An Embedder backed by a chromadb EmbeddingFunction.

    ``dimension`` is learned by embedding a probe string once, on first access, because chromadb
    functions do not declare it.
    """

    def __init__(self, function: Callable[[list[str]], Any]) -> None:
        self.function = function
        self.name = _function_name(function)
        self._dimension: int | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ChromaFunctionEmbedder({self.function!r})"

    @property
    def dimension(self) -> int:
        """Vector length, measured once with a probe string."""
        if self._dimension is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = len(self.embed_query(_PROBE))
        return self._dimension

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed documents through the wrapped function's ``__call__``."""
        check_texts(texts)
        if not texts:
            return []
        return [_floats(row) for row in self.function(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query through the function's ``embed_query`` when it has one."""
        check_text(text)
        embed_query = getattr(self.function, "embed_query", None)
        rows = embed_query([text]) if callable(embed_query) else self.function([text])
        return _floats(rows[0])


def _declares(obj: object, attribute: str) -> bool:
    # Like hasattr, but without running a property (a lazy dimension may load a model).
    if attribute in getattr(obj, "__dict__", {}):
        return True
    return any(attribute in vars(klass) for klass in type(obj).__mro__)


def _function_name(function: object) -> str:
    # chromadb's base name() returns NotImplemented (with a DeprecationWarning) when not overridden.
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            named = getattr(function, "name", None)
            name = named() if callable(named) else None
    except Exception:
        name = None
    return name if isinstance(name, str) and name else type(function).__name__


def _floats(row: Sequence[float] | Any) -> list[float]:
    values = row.tolist() if hasattr(row, "tolist") else row
    return [float(value) for value in values]
