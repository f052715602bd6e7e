"""The one interface the memory and knowledge layers depend on.

Kept as a structural Protocol so any object with these members works (ours, a wrapped chromadb
function, a user's own class) without inheriting from anything in praisonsession.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Embedder(Protocol):
    """Turns text into fixed-size vectors.

    ``name`` identifies the vector space: vectors from embedders with different names must never
    be compared, so stores persist it and refuse to mix. ``dimension`` is the vector length.
    """

    name: str

    @property
    def dimension(self) -> int:
        """The vector length (a plain attribute will do; a property may measure it lazily)."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed documents, one vector per text, in order; ``[]`` for ``[]``."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Embed one search query (may differ from ``embed`` for asymmetric models)."""
        ...
