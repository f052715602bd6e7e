"""The terms a lexical index keeps of a text: its words, lower-cased, stemmed, without the
words every sentence has, and, with a key, each one as a keyed hash.

BM25 needs only that the same word gives the same term in a text and in a question, so a
keyed hash (HMAC-SHA256 of the term, cut to 16 hex digits) ranks exactly as the word would:
an encrypted store's lexical index then holds no readable word, and a new key re-hashes it.
The stemmer is a light suffix stripper ("painted", "painting" and "paints" meet at "paint"),
tuned on real chats (REALTALK) for recall, not a linguist's Porter stemmer.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata

__all__ = ["COMMON", "Terms", "selective", "words"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_APOSTROPHE = re.compile(r"['’]")
#: Words that say nothing a search can use (English): they would match every turn of a chat.
_STOPWORDS = """a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each few for from further had hadn has hasn have haven having he her here
    hers herself him himself his how i if in into is isn it its itself just let ll me more most
    mustn my myself no nor not of off on once only or other ought our ours ourselves out over
    own re s same shan she should shouldn so some such t than that the their theirs them
    themselves then there these they this those through to too under until up ve very was
    wasn we were weren what when where which while who whom why will with won would wouldn
    you your yours yourself yourselves d m o y im ive id youre thats dont didnt doesnt cant
    isnt wasnt wont ill also really yeah yes oh ok okay lol like get got go going gonna one
    much well even still way thing things know think shes hes theyre weve youve theyve"""
STOPWORDS = frozenset(_STOPWORDS.split())
_SUFFIXES = (
    ("ational", "ate"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("ization", "ize"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("ments", ""),
    ("ment", ""),
    ("ness", ""),
    ("ings", ""),
    ("ing", ""),
    ("edly", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ers", ""),
    ("er", ""),
    ("ed", ""),
    ("ly", ""),
    ("es", ""),
    ("s", ""),
)
_VOWEL = re.compile(r"[aeiouy]")


def words(text: str) -> list[str]:
    """The words of ``text``, folded (NFKC, lower case, apostrophes dropped: "don't" is
    "dont"), stopwords out, each stemmed."""
    folded = unicodedata.normalize("NFKC", text).lower()
    found = []
    for match in _WORD.finditer(folded):
        word = _APOSTROPHE.sub("", match.group())
        if word in STOPWORDS:
            continue
        found.append(stem(word))
    return found


def stem(word: str) -> str:
    """``word`` without one inflectional suffix, when what stays is a word (three letters or
    more, with a vowel); a doubled final consonant is undone ("running" -> "run")."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ss") or word.endswith("us") or word.endswith("is"):
        return word
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix):
            base = word[: -len(suffix)] + replacement
            if len(base) < 3 or not _VOWEL.search(base):
                return word
            if (
                suffix in ("ing", "ed", "er", "ings", "ers")
                and len(base) > 3
                and base[-1] == base[-2]
                and base[-1] not in "lsz"
            ):
                base = base[:-1]
            if suffix in ("es",) and not base.endswith(("sh", "ch", "x", "z", "s", "o")):
                base = word[:-1]  # "games" -> "game", "boxes" -> "box"
            return base.rstrip("e") if len(base) > 4 and base.endswith("e") else base
    return word.rstrip("e") if len(word) > 4 and word.endswith("e") else word


class Terms:
    """What a lexical index stores and searches for a text: its words, or with ``key`` their
    keyed hashes (the same key gives the same hash in every process)."""

    def __init__(self, key: bytes | None = None) -> None:
        self.key = key
        #: What names these terms where they are saved: "words", or a digest of the key (a
        #: term saved under another key, or as a word, is never compared with these)
        self.tag = (
            "words"
            if key is None
            else "h" + hmac.new(key, b"praisonsession terms", hashlib.sha256).hexdigest()[:16]
        )

    def of(self, text: str) -> list[str]:
        """The terms of ``text``, in order, repeats kept (BM25 counts them)."""
        found = words(text)
        if self.key is None:
            return found
        key = self.key
        return [
            "h" + hmac.new(key, word.encode("utf-8"), hashlib.sha256).hexdigest()[:16]
            for word in found
        ]

    def query(self, text: str) -> list[str]:
        """The distinct terms of a question, first seen first."""
        return list(dict.fromkeys(self.of(text)))


#: A term that more entries than this hold, and more than a tenth of them, does not find
#: candidates for a search: its BM25 weight is small, and scoring every entry that holds it
#: would read much of the index (at 100,000 memories, tens of ms). With no other term, the
#: search is by meaning alone.
COMMON = 2000


def selective(counts: dict[str, int], entries: int) -> list[str]:
    """The terms of a question (with how many entries hold each) that find candidates."""
    common = max(COMMON, entries // 10)
    return [term for term, count in counts.items() if 0 < count <= common]
