"""Offline text embeddings for praisonsession's memory and knowledge layers.

Importing this package is cheap: numpy, onnxruntime, tokenizers and chromadb are imported only
when a model is first used or a chromadb function is first requested.

    >>> from praisonsession.recall.embeddings import MiniLMEmbedder
    >>> embedder = MiniLMEmbedder()          # nothing loaded yet
    >>> vectors = embedder.embed(["hello"])  # loads the model once, then embeds
"""

from .chroma import as_chroma_embedding_function
from .coerce import ChromaFunctionEmbedder, coerce_embedder
from .minilm import MiniLMEmbedder
from .protocol import Embedder

__all__ = [
    "ChromaFunctionEmbedder",
    "Embedder",
    "MiniLMEmbedder",
    "as_chroma_embedding_function",
    "coerce_embedder",
]
