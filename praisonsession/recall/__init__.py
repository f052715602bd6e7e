"""The memory floor (the ``[memory]`` extra): long- and short-term memory, knowledge, vector
stores and embedders, and :class:`~praisonsession.recall.core.Recall`, which wires them for one
session.

It stands on the stores, the state modules and the ground floor, and nothing above it imports
it at module level: chromadb, onnxruntime and the model load when a session first uses memory.
This ``__init__`` imports nothing heavy; its names load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import Recall, default_embedder, text_sealer, vector_location

__all__ = ["Recall", "default_embedder", "text_sealer", "vector_location"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(import_module(".core", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
