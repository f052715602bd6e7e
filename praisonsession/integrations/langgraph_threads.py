"""LangGraph threads on a praisonsession backend: where a checkpointer's data lives.

A thread is one of our sessions, ``(user_id, thread_id)``, marked ``{"langgraph": "thread"}``
in its metadata. Every checkpoint namespace of the thread lives inside that session, so listing,
TTL, forks, archives, erasure and deletion of the session cover all of them. Nothing here knows
LangGraph's types: the adapter (``langgraph.py``) serializes through its ``serde`` and hands over
typed bytes, ``(type, bytes)``; this module stores them and gives them back equal.

The layout of a thread's session:

- the log :data:`CHECKPOINTS`: every checkpoint of every namespace, one record each, in the
  order they were put (a namespace's newest is the last of its records). A record holds the
  checkpoint without its channel values and its metadata (typed bytes), its channel versions,
  and the values of the channels that changed at it (``values``). A channel that did not
  change is not stored again: ``src`` names the position of the record that stored its
  version. So a value is stored once, and a put is one appended record. Records are appended
  with the log's length expected, so that a record's position is known when it is written,
  and each says where it is (``at``): a listing reads the log's tail and starts from there
  when its newest record is of the namespace listed, with no read of the head document;
- the log :data:`WRITES`: one entry per write of a writes document (which task wrote which
  channels): the version the writes documents are compared and set against, and a history;
- documents, read by name: ``langgraph/at/<ns>/<id>`` (a checkpoint's position),
  ``langgraph/at/<ns>/~%head`` (a namespace's newest checkpoint and its position),
  ``langgraph/writes/<ns>/<id>`` (a checkpoint's pending writes: the first few merged, and
  once it is marked ``more``, the log ``langgraph/writes/<ns>/<id>.more`` below it holds every
  later ``put_writes``, one message each, read with it) and ``langgraph/run/<run_id>`` (the
  thread holds checkpoints of that run). Threads written with every write in the document
  read the same, and a document holding none is the same as an absent one.

One row per step: a put writes its record and, now and then, documents. The positions by id
are written a block of :data:`_INDEXED_EVERY` records at a time (a checkpoint of the block not
indexed yet is found among the log's last records, which say where they are); a namespace's
newest is the log's last record when that is of the namespace, and its head document is
written when another namespace's record follows its last one. On SQLite a put then changes
the session's version row and the record's page, not a page of documents as well (WAL frames
per put 5.1 -> 4.1 in ``bench_langgraph.py``'s thread). A thread's first checkpoint makes its
session, marked, in the same step; writes never make or mark a thread. Threads written by
earlier versions (every position and head as a document) are read and continued alike; an
earlier version reading a thread written here could take a stale head document for the
newest.

What a ``Threads`` read or wrote of a thread last (each namespace's newest checkpoint, a
listing's first page, the checkpoints named by id that were asked for before, with their
pending writes; :data:`_VIEWED` at most) is its *view* of the thread, served again
without a read while the backend certifies that nothing in the store changed since
(``StoreBackend.stamped`` / ``unchanged_since``; on SQLite one ``PRAGMA data_version``) and
the thread has no TTL; a put made after a read of the newest leaves the view of its
checkpoint, with the writes stored for it by then. Any change, by any process, drops it; a
backend that cannot certify keeps none.

Bytes are base64 text in our JSON records, zlib-compressed first when that saves space; they
come back byte-equal. Documents cannot be removed from a session one by one, so what
``prune`` and ``delete_for_runs`` drop is overwritten with an empty document in the same step.
One module past 500 lines, on purpose: the layout above and every operation that reads or
rewrites it (put, writes, load, list, delta history, copy, prune) read best together.
"""

from __future__ import annotations

import base64
import binascii
import sys
import threading
import time
import uuid
import zlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from functools import partial
from typing import Any, NamedTuple

from .._internal.identifiers import MAX_KEY_LENGTH
from .._internal.runtime import pause
from .._internal.turns import Turns
from ..errors import (
    ConflictError,
    OperationTimeoutError,
    SessionCorruptedError,
    SessionNotFoundError,
)
from ..stores import UNSET, Branches, Key, LogWrite, SessionInfo, StoreBackend
from ..stores.backend import Stamped, StoredModules

__all__ = [
    "CHECKPOINTS",
    "THREAD_MARK",
    "WRITES",
    "Blob",
    "History",
    "Loaded",
    "Threads",
    "Write",
    "is_thread",
    "pack",
    "unpack",
    "what_of",
]

#: The log of a thread's checkpoints (every namespace), and the log of its writes.
CHECKPOINTS = "langgraph.checkpoints"
WRITES = "langgraph.writes"
#: The metadata that marks a session as a LangGraph thread.
THREAD_MARK = {"langgraph": "thread"}
#: Typed bytes, as a LangGraph serializer makes them: (type, data).
Blob = tuple[str, bytes]
Record = dict[str, Any]

_COMPRESS_FROM = 512  # bytes below which zlib is not tried (it seldom saves a tenth)
_PAGE = 64  # records read at a time when walking back through a thread
_ATTEMPTS = 200  # compare-and-set rounds before a lost race is reported
_REMEMBERED = 4096  # records and runs kept per Threads
_INDEXED_EVERY = 16  # a put writes the by-id documents of the last block of this many records
_VALUE_BUDGET = 16 << 20  # bytes of channel values kept per Threads
_VIEWED = 64  # checkpoints a thread's view holds (and 8 listed pages)
_VIEWS = 1024  # threads viewed per Threads
_WASTED = 4  # views dropped in a row before serving a read: then stamps are taken seldom,
_BACKOFF = 16  # by one read in this many, until a view serves a read again
_MERGED_UP_TO = 16  # writes (or _MERGED_BYTES of their text) a writes document holds merged;
_MERGED_BYTES = 16 << 10  # more go to the log below it (see put_writes)
_MORE = ".more"  # the log below a writes document: writes_name + _MORE
_FRESH = 16  # checkpoints put here a journal holds as fresh (see _Journal), the newest
_MINTED_MARGIN = 10_000_000  # 1 s in 100 ns: a checkpoint id minted this much after a journal's
# start is fresh (a clock stepped back, or LangGraph's ids minted faster than its 100 ns ticks,
# may date an id up to this much late)


class _Journal(NamedTuple):
    """WRITES as known here (see ``Threads.put_writes``)."""

    #: the length of WRITES: a write of writes expects it
    length: int
    #: the writes documents written or read last, by name
    known: dict[str, dict[str, Any]]
    #: the names of every writes document of the thread when this object wrote all of them
    #: (None when it did not: the thread had writes before, or it forgot them)
    every: set[str] | None
    #: when the length was first read, as LangGraph's checkpoint ids tell time (100 ns since
    #: 1582); None when not known
    since: int | None
    #: the writes names of checkpoints put here whose ids were minted after ``since`` and
    #: which were not written to since (oldest first): none of them has a writes document,
    #: since whoever wrote one after ``since`` moved the length (see ``Threads._fresh``)
    fresh: dict[str, None]
    #: the latest id time among them: a checkpoint put again is never fresh again
    top: int


#: CHECKPOINTS as known here: its length, the (position, ns, id) of each record of the block
#: not indexed yet, and of the last record (None for an empty log).
_Tail = tuple[int, list[tuple[int, str, str]], tuple[int, str, str] | None]


class Write(NamedTuple):
    """One pending write: the task, its index (negative for LangGraph's special channels), the
    channel, the value's typed bytes and the task's path."""

    task_id: str
    idx: int
    channel: str
    value: Blob
    task_path: str


class _Call:
    """One ``put_writes`` call: its checkpoint's writes document, what it writes, and whether
    it was stored (by its own turn or another call's) or its caller has gone."""

    __slots__ = ("abandoned", "checkpoint_id", "content", "done", "name", "ns", "writes")

    def __init__(self, ns: str, checkpoint_id: str, writes: Sequence[Write]) -> None:
        self.ns, self.checkpoint_id, self.writes = ns, checkpoint_id, writes
        self.name = writes_name(ns, checkpoint_id)
        self.content = f"{writes[0].task_id} wrote " + ", ".join(w.channel for w in writes)
        self.done = self.abandoned = False

    def entry(self) -> dict[str, Any]:
        """Its entry of :data:`WRITES`, for a call that changed its writes document."""
        return {"role": "writes", "content": self.content, "ns": self.ns,
                "id": self.checkpoint_id, "task": self.writes[0].task_id}  # fmt: skip


class Loaded(NamedTuple):
    """A checkpoint as read: its record, the values of its channels (by channel) and its pending
    writes, in the order they were stored."""

    record: Record
    values: dict[str, Blob]
    writes: list[Write]


class _View:
    """What was read or written of one thread while the store certifies that nothing changed
    since ``stamp`` (``StoreBackend.stamped``): each namespace's newest checkpoint (its id),
    checkpoints as loaded, by (ns, id), and the first pages of listings, by (ns, size). A
    stamp the store no longer certifies drops the view whole; one more read makes another."""

    __slots__ = ("heads", "loaded", "pages", "served", "stamp")

    def __init__(self, stamp: Any) -> None:
        self.stamp = stamp
        self.served = False  # whether it answered a read
        self.heads: dict[str, str] = {}
        self.loaded: dict[tuple[str, str], Loaded] = {}
        # (ns, size) -> the records chosen (newest first), their writes documents, the
        # position of the first record read
        self.pages: dict[tuple[str, int], tuple[list[Any], dict[str, Any], int]] = {}

    def keep(self, ns: str, loaded: Loaded, head: bool) -> None:
        if len(self.loaded) >= _VIEWED:
            self.loaded.clear()
        self.loaded[ns, loaded.record["id"]] = loaded
        if head:
            self.heads[ns] = loaded.record["id"]


class History(NamedTuple):
    """What one channel contributed along a checkpoint's ancestors: the writes, oldest
    checkpoint first, and the value stored at the nearest ancestor holding one (None: none)."""

    writes: list[Write]
    seed: Blob | None


def is_thread(info: SessionInfo) -> bool:
    """True for a session that holds a LangGraph thread."""
    return info.metadata.get("langgraph") == THREAD_MARK["langgraph"]


# -- names and bytes ------------------------------------------------------------------------


def _part(text: str) -> str:
    """A name component that cannot be taken for a separator: ``%`` and ``/`` escaped."""
    if "%" not in text and "/" not in text:
        return text
    return text.replace("%", "%25").replace("/", "%2F")


def head_name(ns: str) -> str:
    """Sorts right after the namespace's newest position document (ids grow), so that a put
    changes one page of the store's index of documents; no escaped id can be ``~%head``."""
    return f"langgraph/at/{_part(ns)}/~%head"


def at_name(ns: str, checkpoint_id: str) -> str:
    return f"langgraph/at/{_part(ns)}/{_part(checkpoint_id)}"


def writes_name(ns: str, checkpoint_id: str) -> str:
    return f"langgraph/writes/{_part(ns)}/{_part(checkpoint_id)}"


def run_name(run_id: str) -> str:
    return f"langgraph/run/{_part(run_id)}"


#: 1970 in 100 ns since 1582, the epoch of a version 6 UUID's time.
_UUID_EPOCH = 0x01B21DD213814000


def _now_as_minted() -> int:
    """The time now as a checkpoint id minted now would tell it."""
    return time.time_ns() // 100 + _UUID_EPOCH


def _minted(checkpoint_id: str) -> int | None:
    """When a checkpoint id was minted (100 ns since 1582), if it is a version 6 UUID, as
    LangGraph mints them; None for any other id."""
    if len(checkpoint_id) != 36:
        return None
    try:
        value = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if value.version != 6:
        return None
    high = value.int >> 64  # time's 48 high bits, the version (4 bits), its 12 low bits
    return (high >> 16) << 12 | high & 0x0FFF


def pack(blob: Blob) -> list[str]:
    """Typed bytes as JSON: ``[type, base64]``, or ``[type, base64, "z"]`` when zlib made the
    bytes smaller."""
    kind, data = blob
    if len(data) >= _COMPRESS_FROM:
        packed = _deflate(data)
        if len(packed) < len(data) * 0.9:
            return [kind, _to_base64(packed), "z"]
    return [kind, _to_base64(data)]


def _to_base64(data: bytes) -> str:
    """Base64 text of ``data``, made in one C call (``base64.b64encode`` is a Python layer)."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


if sys.version_info >= (3, 11):

    def _from_base64(text: str) -> bytes:
        """Base64 text as bytes, any character outside the alphabet refused (in C)."""
        return binascii.a2b_base64(text, strict_mode=True)

else:  # pragma: no cover - Python 3.10

    def _from_base64(text: str) -> bytes:
        return base64.b64decode(text.encode("ascii"), validate=True)


def _deflate(data: bytes) -> bytes:
    """``data`` as a zlib stream (level 1) with a window and memory sized to it: zlib's
    defaults set up 256 KiB of tables for every call, most of a put's time for a small value
    (0.18 ms against 7 µs here for 225 bytes); the stream is the same format, read back by
    ``zlib.decompress`` as any other."""
    window = min(15, max(9, (len(data) - 1).bit_length()))
    deflater = zlib.compressobj(1, zlib.DEFLATED, window, max(1, min(8, window - 7)))
    return deflater.compress(data) + deflater.flush()


def unpack(value: Any, what: str | Callable[[], str]) -> Blob:
    """The typed bytes :func:`pack` made, exactly; ``SessionCorruptedError`` for anything else
    (``what`` names the value, or makes its name: only an error formats it)."""
    if type(value) is list and len(value) == 2:  # the common form: no flag, read in C
        kind, text = value
        if type(kind) is str and type(text) is str:
            try:
                return kind, _from_base64(text)
            except ValueError:
                pass  # the full path below says what is wrong
    try:
        kind, text, *flag = value
        data = _from_base64(text)
        if flag == ["z"]:
            data = zlib.decompress(data)
        elif flag:
            raise ValueError(f"unknown flag {flag!r}")
        if not isinstance(kind, str):
            raise ValueError("no type")
    except (ValueError, TypeError, AttributeError, zlib.error) as exc:
        raise SessionCorruptedError(_named(what), f"not typed bytes as stored ({exc})") from None
    return kind, data


def _named(what: str | Callable[[], str]) -> str:
    return what if isinstance(what, str) else what()


def _write_item(write: Write) -> list[Any]:
    return [write.task_id, write.idx, write.channel, write.task_path, *pack(write.value)]


def _more(content: str, writes: Sequence[Write]) -> dict[str, Any]:
    """One ``put_writes`` as a message of the log below a writes document."""
    return {"role": "writes", "content": content, "w": [_write_item(write) for write in writes]}


def _write_of(item: Any, what: str | Callable[[], str]) -> Write:
    try:
        task_id, idx, channel, task_path, *value = item
    except (ValueError, TypeError):
        raise SessionCorruptedError(_named(what), "a pending write that is not as stored") from None
    return Write(task_id, idx, channel, unpack(value, what), task_path)


def _merged(held: list[Any], new: Sequence[Write]) -> list[Any]:
    """Writes held plus new ones, as LangGraph's savers merge them (:func:`_folded`)."""
    return _folded(held, ([_write_item(write) for write in new],))


def _folded(held: list[Any], batches: Iterable[list[Any]]) -> list[Any]:
    """Stored writes ``held`` with ``batches`` of stored writes merged in, in order, as
    LangGraph's savers merge them: a regular write of a (task, index) already held is kept as
    it was, a special one (negative index) replaced where it stands."""
    merged = list(held)
    where = {(item[0], item[1]): n for n, item in enumerate(merged)}
    for batch in batches:
        for item in batch:
            slot = (item[0], item[1])
            if slot in where:
                if item[1] >= 0:
                    continue
                merged[where[slot]] = item
            else:
                where[slot] = len(merged)
                merged.append(item)
    return merged


def _overflows(name: str) -> bool:
    """Whether a writes document may move further writes into the log below it: its name has
    no ``.`` and the log's path is not too long for a key. A name that cannot (an id or
    namespace holding a dot) keeps every write merged in the document: every backend finds
    its log now (``stores/backends/below.py``), but memory, JSON and Redis before that rule
    took a log's module to be its path up to the first dot, and a process of such a version
    sharing the store would miss the writes."""
    return "." not in name and len(name) + len(_MORE) <= MAX_KEY_LENGTH


def _full(merged: list[Any]) -> bool:
    """Whether a writes document holds enough that further writes go to its log."""
    if len(merged) >= _MERGED_UP_TO:
        return True
    return sum([len(item[5]) for item in merged if len(item) > 5]) >= _MERGED_BYTES


def _gathered(stored: StoredModules | None) -> dict[str, Any]:
    """The documents read, each writes document that moved writes into its log (``more``)
    holding them too, merged in the order they were stored: what a reader takes the
    checkpoint's pending writes from. A log below a document that is absent, emptied or not
    marked is not read (a checkpoint pruned since)."""
    if stored is None:
        return {}
    if not stored.logs:
        return stored.documents
    documents = dict(stored.documents)
    for path, entries in stored.logs.items():
        if not path.endswith(_MORE):
            continue
        name = path[: -len(_MORE)]
        held = documents.get(name)
        if type(held) is not dict or not held.get("more"):
            continue
        try:
            batches = [entry["w"] for entry in entries if type(entry["w"]) is list]
            if len(batches) != len(entries):
                raise TypeError("a batch of writes that is not a list")
            documents[name] = {"w": _folded(held.get("w", []), batches), "more": True}
        except (TypeError, KeyError, IndexError) as exc:
            raise SessionCorruptedError(
                f"log {path!r}", f"writes that are not as stored ({exc})"
            ) from None
    return documents


def _in_order(writes: list[Write]) -> list[Write]:
    """Writes in the order LangGraph applies them: by task path, task id and index."""
    return sorted(writes, key=lambda w: (w.task_path, w.task_id, w.idx))


def what_of(key: Key, record: Record) -> Callable[[], str]:
    """What names a record in an error: formatted only when one is raised."""
    return lambda: f"checkpoint {record.get('id')!r} of thread {key.session_id!r}"


def _document(documents: dict[str, Any], name: str, key: Key) -> dict[str, Any] | None:
    """One of our documents as read: a dict, or None when absent or emptied (dropped);
    anything else is not ours (``SessionCorruptedError``), e.g. sealed text read without its
    encryption key."""
    held = documents.get(name)
    if held is None or held == {} or held == []:
        return None
    if not isinstance(held, dict):
        raise SessionCorruptedError(
            f"document {name!r} of thread {key.session_id!r}",
            "not a document this library wrote (sealed by an encryption key not given?)",
        )
    return held


def _writes(records: list[Any], ns: str) -> list[str]:
    """The names of the writes documents of the records of namespace ``ns`` (anything else,
    such as a sealed record read without its key, names none)."""
    return [
        writes_name(ns, record["id"])
        for record in records
        if type(record) is dict and record.get("ns") == ns and type(record.get("id")) is str
    ]


def _heads_writes(tail: list[Any], ns: str) -> list[str]:
    """What a read of the newest checkpoint of ``ns`` wants beside the log's last record: its
    writes document when that record is of ``ns``, else the namespace's head document."""
    if not tail:
        return []
    last = tail[-1]
    if type(last) is dict and last.get("ns") == ns and type(last.get("at")) is int:
        return _writes(tail[-1:], ns)
    return [head_name(ns)]


def _indexed(name: str, documents: dict[str, Any]) -> tuple[int, int] | None:
    """Where the position document ``name`` says its checkpoint is, as a span of the log; None
    when it is absent, emptied or not ours (read as a document, that says why)."""
    held = documents.get(name)
    at = held.get("at") if type(held) is dict else None
    return (at, at + 1) if type(at) is int and at >= 0 else None


def _record_of(read: list[Any], key: Key, ns: str, checkpoint_id: str) -> Record:
    """The record read at a checkpoint's position, which must be that checkpoint; else the
    thread was rewritten (pruned, deleted) since the position was read: ``_Moved`` (the
    thread is forgotten, then read anew)."""
    found = _checked(read, key)
    if not found or found[0].get("id") != checkpoint_id or found[0].get("ns") != ns:
        raise _Moved
    return found[0]


def _checked(records: list[Any], key: Key) -> list[Record]:
    """Records as read from :data:`CHECKPOINTS`, each checked to be one of ours."""
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("versions"), dict):
            raise SessionCorruptedError(
                f"log {CHECKPOINTS!r} of thread {key.session_id!r}",
                "a record this library did not write (sealed by an encryption key not given?)",
            )
    return records


def _sources(
    versions: dict[str, Any], stored: Iterable[str], parent: tuple[int, Record] | None
) -> dict[str, int]:
    """Where the values of the channels not ``stored`` now are: the parent's position for a
    channel whose version the parent stored, or the parent's own reference to an earlier one;
    a channel at a version the parent does not hold has no value."""
    if parent is None:
        return {}
    at, record = parent
    held, sources = record.get("values", {}), record.get("src", {})
    now = set(stored)
    found: dict[str, int] = {}
    for channel, version in versions.items():
        if channel in now or record["versions"].get(channel) != version:
            continue
        if channel in held:
            found[channel] = at
        elif channel in sources:
            found[channel] = sources[channel]
    return found


# -- the threads of one backend -------------------------------------------------------------


class Threads:
    """Checkpoints and writes of LangGraph threads in one backend.

    Every write is one atomic step of the backend. A checkpoint is appended with the length of
    :data:`CHECKPOINTS` expected, and a set of writes with the length of :data:`WRITES`
    expected: what this object remembers of a thread (those lengths, the writes documents it
    wrote) saves a read while it is still true, and a lost race (another process wrote first)
    costs a read and another try. A record never changes once written, and a channel version
    names one value for good, so both are remembered too (within bounds); a head or a
    position remembered is a hint, checked against what the store says.
    """

    def __init__(self, backend: StoreBackend) -> None:
        self.backend = backend
        self._lock = threading.Lock()  # guards the dicts below; never held across an await
        self._writing = Turns("put_writes of this thread")  # one put_writes a thread at a time
        self._queued: dict[Key, list[_Call]] = {}  # put_writes waiting for their thread's turn
        # CHECKPOINTS as last written or read here: its length, the (at, ns, id) of its
        # records since the last indexed block, and of its last record
        self._tails: dict[Key, _Tail] = {}
        # WRITES as last written here: its length, the writes documents written last, and the
        # names of every writes document the thread holds when all were written here (None
        # when unknown): see put_writes
        self._journals: dict[Key, _Journal] = {}
        # Each slot below names its thread's generation: forgetting a thread moves it to the
        # next one (no walk over every slot kept), and the old slots age out unread.
        self._generations: dict[Key, int] = {}
        self._generation = 0
        # The slots' thread is its user and session id, not the Key: a tuple of plain str and
        # int is left out of the garbage collector's walks (a named tuple never is), and
        # these hold thousands of slots.
        # (user, session, generation, ns, id) -> (position, record without its values)
        self._records: OrderedDict[tuple[str, str, int, str, str], tuple[int, Record]] = (
            OrderedDict()
        )
        self._runs: set[tuple[str, str, int, str]] = set()
        # (user, session, generation, ns, id) -> position: more of them than records, a
        # checkpoint named by id is then read with its writes in one read (a hint, checked)
        self._positions: OrderedDict[tuple[str, str, int, str, str], int] = OrderedDict()
        # (user, session, generation, ns, channel, version) -> the value's typed bytes
        # (unpacked once)
        self._values: OrderedDict[tuple[str, str, int, str, str, str], Blob] = OrderedDict()
        self._value_bytes = 0
        # each thread's view (_View), when its backend stamps what it reads and writes, and
        # the threads whose newest was read since their last put (_note_read)
        self._views: dict[Key, _View] = {}
        self._read_after_put: set[Key] = set()
        # the checkpoints asked for by id last, oldest first (_asked_before): a second read of
        # one of them is viewed
        self._asked: dict[tuple[Key, str, str], None] = {}
        # views dropped in a row before they served a read, and reads made since without a
        # stamp (_stamps_pay): where the store changes between every two reads (many
        # writers on one file), a stamp costs more than the views it makes save
        self._wasted = 0
        self._unstamped = 0

    # -- what this object remembers -----------------------------------------------------------

    def forget(self, key: Key) -> None:
        """Drop what is remembered of a thread (after it was deleted, rewritten or copied
        onto, or when a write lost a race)."""
        with self._lock:
            self._tails.pop(key, None)
            self._journals.pop(key, None)
            self._views.pop(key, None)
            if len(self._generations) >= _REMEMBERED:  # start afresh rather than grow
                self._generations.clear()
                self._records.clear()
                self._positions.clear()
                self._runs.clear()
                self._values.clear()
                self._value_bytes = 0
            self._generation += 1
            self._generations[key] = self._generation

    def _remember(
        self,
        key: Key,
        at: int,
        record: Record,
        blobs: dict[str, Blob] | None = None,
    ) -> None:
        """A record read or written, at its position: its values kept by version (``blobs``:
        those values unpacked already), the rest by id."""
        ns, versions, own = record["ns"], record["versions"], record.get("values", {})
        light = dict(record)
        light["values"] = dict.fromkeys(own, True)
        with self._lock:
            generation = self._generations.get(key, 0)
            slot = (*key, generation, ns, record["id"])
            for channel, packed in own.items():
                held = (*key, generation, ns, channel, str(versions.get(channel)))
                if held in self._values:
                    self._values.move_to_end(held)
                elif blobs is not None:
                    self._keep_value(held, blobs[channel])
                else:  # unpacked once
                    self._keep_value(held, unpack(packed, what_of(key, record)))
            self._records[slot] = (at, light)
            self._records.move_to_end(slot)
            if len(self._records) > _REMEMBERED:
                self._records.popitem(last=False)
            self._positions[slot] = at
            self._positions.move_to_end(slot)
            if len(self._positions) > 8 * _REMEMBERED:
                self._positions.popitem(last=False)

    def _known(self, key: Key, ns: str, checkpoint_id: str) -> tuple[int, Record] | None:
        with self._lock:
            return self._records.get((*key, self._generations.get(key, 0), ns, checkpoint_id))

    def _keep_value(self, slot: tuple[str, str, int, str, str, str], value: Blob) -> None:
        """Keep a value not kept yet (called holding the lock)."""
        size = len(value[1])
        if size > _VALUE_BUDGET // 8:
            return
        self._values[slot] = value
        self._value_bytes += size
        while self._value_bytes > _VALUE_BUDGET or len(self._values) > 8 * _REMEMBERED:
            self._value_bytes -= len(self._values.popitem(last=False)[1][1])

    def _kept(self, key: Key, ns: str, versions: dict[str, Any]) -> dict[str, Blob]:
        """The values of these channel versions kept here, by channel."""
        with self._lock:
            values, generation = self._values, self._generations.get(key, 0)
            return {
                channel: found
                for channel, version in versions.items()
                if (found := values.get((*key, generation, ns, channel, str(version)))) is not None
            }

    def _note_read(self, key: Key) -> None:
        """The thread's newest is read: its next put leaves a view of what it wrote (a stamp
        costs the put a statement, which pays only when a read follows: a graph's steps put
        and write with one read of the newest at the start of a run)."""
        with self._lock:
            if len(self._read_after_put) >= _VIEWS:
                self._read_after_put.clear()
            self._read_after_put.add(key)

    def _asked_before(self, key: Key, ns: str, checkpoint_id: str) -> bool:
        """Whether a checkpoint named by id was among the last :data:`_VIEWED` asked for by id:
        only then is its read stamped and kept in the view. A stamp costs a read of an older
        checkpoint about a tenth more, which pays where it is read again soon (a graph resumed
        from it, a page showing it), not where each of many is read once."""
        asked = (key, ns, checkpoint_id)
        with self._lock:
            if asked in self._asked:
                return True
            self._asked[asked] = None
            if len(self._asked) > _VIEWED:
                del self._asked[next(iter(self._asked))]
            return False

    def _certified(self, key: Key, view: _View) -> bool:
        """Whether the store still certifies the thread's view (one cheap check) before it
        answers a read; a view it does not is dropped."""
        if self.backend.unchanged_since(view.stamp):
            view.served = True
            self._wasted = 0
            return True
        if not view.served:
            self._wasted += 1
        with self._lock:
            if self._views.get(key) is view:
                del self._views[key]
        return False

    def _stamps_pay(self) -> bool:
        """Whether a read takes a stamp (and leaves a view): always, unless the last
        ``_WASTED`` views were dropped before they served a read; then one read in
        ``_BACKOFF`` does, to find out whether views serve again."""
        if self._wasted < _WASTED:
            return True
        self._unstamped += 1
        if self._unstamped < _BACKOFF:
            return False
        self._unstamped = 0
        return True

    def _viewed(self, key: Key, stamp: Any) -> _View | None:
        """The view of what a stamped read or write saw: the thread's view if it has that
        stamp, else a new one in its place; None for no stamp."""
        if stamp is None:
            return None
        with self._lock:
            view = self._views.get(key)
            if view is None or view.stamp != stamp:
                if len(self._views) >= _VIEWS:
                    self._views.clear()
                view = self._views[key] = _View(stamp)
            return view

    async def _mark(self, key: Key) -> None:
        """Make sure the thread's live session is marked as a thread (a read, and a write only
        where the mark is missing: a session another writer made, or one not made here)."""
        info = await self.backend.read_record(key)
        if info is None or not is_thread(info):
            await self.backend.create_record(key, ttl=UNSET, metadata=dict(THREAD_MARK))

    # -- checkpoints ----------------------------------------------------------------------------

    async def put(self, key: Key, record: Record, changed: dict[str, Blob]) -> None:
        """Append a checkpoint ``record`` (``ns``, ``id``, ``parent`` and ``versions`` set) to
        the thread, storing the values of the channels that ``changed`` (a value typed
        ``"empty"`` stores none) and referring to the parent's record for the others, in one
        atomic step."""
        ns, checkpoint_id = record["ns"], record["id"]
        blobs = {channel: value for channel, value in changed.items() if value[0] != "empty"}
        record["values"] = {channel: pack(value) for channel, value in blobs.items()}
        run_id: str | None = record.get("run")
        parent_id: str | None = record.get("parent")
        create = True  # a thread with no checkpoint is created with its first one, in one step
        for _ in range(_ATTEMPTS):
            with self._lock:  # what is remembered of the thread, read at once
                generation = self._generations.get(key, 0)
                parent = (
                    None
                    if parent_id is None
                    else self._records.get((*key, generation, ns, parent_id))
                )
                tail = self._tails.get(key)
                run = (*key, generation, run_id or "")
                new_run = run_id if run_id is not None and run not in self._runs else None
            if parent is None and parent_id is not None:
                parent = await self._find(key, ns, parent_id)
            record["src"] = _sources(record["versions"], changed, parent)
            new_thread = False
            if tail is None:
                try:
                    length = await self.backend.count_log(key, path=CHECKPOINTS)
                    if length == 0 and create:
                        new_thread = True
                    elif length == 0:  # its session was live, made by another writer
                        await self._mark(key)
                    tail = await self._read_tail(key, length)
                except ConflictError:
                    await pause(0)
                    continue
            length, block, last = tail
            record["at"] = length
            documents: dict[str, Any] = {}
            if last is not None and last[1] != ns:  # it stops being the log's last record
                documents[head_name(last[1])] = {"at": last[0], "id": last[2]}
            if len(block) + 1 >= _INDEXED_EVERY:  # a full block: every position in it by id
                for at, block_ns, block_id in block:
                    documents[at_name(block_ns, block_id)] = {"at": at}
                documents[at_name(ns, checkpoint_id)] = {"at": length}
                block = []
            else:
                block = [*block, (length, ns, checkpoint_id)]
            if new_run is not None:
                documents[run_name(new_run)] = {"run": new_run}
            write = LogWrite(CHECKPOINTS, [record], length)
            with self._lock:  # stamped only where the newest is read between puts
                read = key in self._read_after_put and self._wasted < _WASTED
                self._read_after_put.discard(key)
            done: Stamped | None = None
            began = _now_as_minted() if new_thread else 0  # a new thread's journal starts here
            try:
                if read or new_thread:
                    writes_of = writes_name(ns, checkpoint_id)
                    stored: Callable[[], Awaitable[Any]]
                    if new_thread:  # the session, its mark and the record: one commit
                        stored = partial(
                            self.backend.create_record_with_modules,
                            key,
                            metadata=dict(THREAD_MARK),
                            documents=documents,
                            writes=[write],
                        )
                    elif documents:
                        stored = partial(
                            self.backend.write_modules, key, documents=documents, writes=[write]
                        )
                    else:
                        stored = partial(self.backend.append_log, key, write=write)
                    if read:
                        done = await self.backend.stamped(key, stored, [writes_of])
                    else:
                        await stored()
                elif documents:
                    await self.backend.write_modules(key, documents=documents, writes=[write])
                else:  # most puts: the record alone
                    await self.backend.append_log(key, write=write)
            except ConflictError:
                # another writer moved the thread, or made its session first (then it is
                # marked and written to as any): positions are read again
                create = create and not new_thread
                self.forget(key)
                await pause(0)
                continue
            with self._lock:
                self._tails[key] = (length + 1, block, (length, ns, checkpoint_id))
                if new_thread:  # made here, with no writes: its first put_writes reads nothing
                    self._journals.setdefault(key, _Journal(0, {}, set(), began, {}, 0))
                else:
                    self._fresh(key, ns, checkpoint_id)
                if new_run is not None:
                    self._runs.add(run)
                    if len(self._runs) > _REMEMBERED:
                        self._runs.clear()
            self._remember(key, length, record, blobs=blobs)
            if done is None:  # no read of the newest since the last put: no view to leave
                return
            view = self._viewed(key, done.stamp)
            if view is not None:  # the newest of its namespace, with its writes as stored
                held = _document(done.documents or {}, writes_of, key)
                what = what_of(key, record)
                writes = [_write_of(item, what) for item in held.get("w", [])] if held else []
                values, wanted = self._values_here(key, length, record, None, None)
                if not wanted and not (held and held.get("more")):  # else some in its log
                    view.keep(ns, Loaded(record, values, writes), head=True)
            return
        raise ConflictError(
            f"Thread {key.session_id!r}: {_ATTEMPTS} other writers appended checkpoints while "
            "this one tried to; try again."
        )

    async def _read_tail(self, key: Key, length: int) -> _Tail:
        """What a put needs to know of the log holding ``length`` records: the records of
        the block not indexed yet, and the last record (read from the log)."""
        start = length - length % _INDEXED_EVERY
        first = min(start, length - 1)
        if first < 0:
            return (0, [], None)
        records = _checked(
            await self.backend.read_log(key, path=CHECKPOINTS, start=first, stop=length), key
        )
        if len(records) != length - first:
            raise ConflictError(f"Thread {key.session_id!r} changed while it was written.")
        found = [(at, r["ns"], r["id"]) for at, r in enumerate(records, first)]
        return (length, [entry for entry in found if entry[0] >= start], found[-1])

    async def _find(self, key: Key, ns: str, checkpoint_id: str) -> tuple[int, Record] | None:
        """A checkpoint's position and record, by id; None if the thread has none such."""
        name = at_name(ns, checkpoint_id)
        stored = await self.backend.read_modules(key, names=[name])
        doc = None if stored is None else _document(stored.documents, name, key)
        if doc is None:
            return await self._find_in_tail(key, ns, checkpoint_id)
        return doc["at"], await self._record_at(key, ns, checkpoint_id, doc["at"])

    async def _find_in_tail(
        self, key: Key, ns: str, checkpoint_id: str
    ) -> tuple[int, Record] | None:
        """A checkpoint not indexed yet: among the log's last records, which say where they
        are (every record of a block not yet indexed does)."""
        tail = _checked(
            await self.backend.read_log(key, path=CHECKPOINTS, start=-_INDEXED_EVERY, stop=None),
            key,
        )
        for record in reversed(tail):
            at = record.get("at")
            if record.get("id") == checkpoint_id and record.get("ns") == ns and type(at) is int:
                self._remember(key, at, record)
                return at, record
        return None

    async def _head(self, key: Key, ns: str) -> tuple[int, str, Record | None] | None:
        """A namespace's newest checkpoint: its position, id and, when it was read here, its
        record. The log's last record when it is of the namespace; else the namespace's
        head document, written when another namespace's record followed its last one."""
        last = _checked(
            await self.backend.read_log(key, path=CHECKPOINTS, start=-1, stop=None), key
        )
        if not last:
            return None
        at = last[0].get("at")
        if last[0].get("ns") == ns and type(at) is int:
            return at, last[0]["id"], last[0]
        stored = await self.backend.read_modules(key, names=[head_name(ns)])
        head = None if stored is None else _document(stored.documents, head_name(ns), key)
        return None if head is None else (head["at"], head["id"], None)

    async def _record_at(
        self, key: Key, ns: str, checkpoint_id: str, at: int, remember: bool = True
    ) -> Record:
        """The record at position ``at``, which must be checkpoint ``checkpoint_id``; else the
        thread was rewritten (pruned) since the position was read: ``_Moved``."""
        read = await self.backend.read_log(key, path=CHECKPOINTS, start=at, stop=at + 1)
        record = _record_of(read, key, ns, checkpoint_id)
        if remember:
            self._remember(key, at, record)
        return record

    async def load(self, key: Key, ns: str, checkpoint_id: str | None) -> Loaded | None:
        """A checkpoint with its values and pending writes (the namespace's newest for None):
        from the thread's view while the store certifies it, else read (and viewed: the
        newest always, a checkpoint named by id when it was asked for before)."""
        if checkpoint_id is None:
            self._note_read(key)
            stamping = True
        else:
            stamping = self._asked_before(key, ns, checkpoint_id)
        view = self._views.get(key)
        if view is not None:
            wanted = view.heads.get(ns) if checkpoint_id is None else checkpoint_id
            found = None if wanted is None else view.loaded.get((ns, wanted))
            if found is not None and self._certified(key, view):
                return found
        for _ in range(_ATTEMPTS):
            try:
                if not stamping or not self._stamps_pay():
                    if checkpoint_id is None:
                        return await self._load_head(key, ns)
                    return await self._load_one(key, ns, checkpoint_id)
                read: Callable[[], Awaitable[Loaded | None]]
                if checkpoint_id is None:
                    read = partial(self._load_head, key, ns)
                else:
                    read = partial(self._load_one, key, ns, checkpoint_id)
                done = await self.backend.stamped(key, read)
            except _Moved:
                self.forget(key)
                await pause(0)
                continue
            loaded: Loaded | None = done.value
            view = None if loaded is None else self._viewed(key, done.stamp)
            if view is not None and loaded is not None:
                view.keep(ns, loaded, head=checkpoint_id is None)
            return loaded
        raise ConflictError(f"Thread {key.session_id!r} kept changing while it was read.")

    async def _load_head(self, key: Key, ns: str) -> Loaded | None:
        """The newest checkpoint: the log's last record (or the namespace's head document),
        then its pending writes."""
        tail, stored = await self.backend.read_log_and_modules(
            key, path=CHECKPOINTS, start=-1, stop=None, names=lambda tail: _heads_writes(tail, ns)
        )
        if not _checked(tail, key):
            return None
        documents = _gathered(stored)
        at, last = tail[0].get("at"), tail[0]
        full: Record | None = last
        if last.get("ns") == ns and type(at) is int:  # the log's last: its writes read with it
            checkpoint_id = last["id"]
        else:  # another namespace's record is the last: this one's head says where it is
            head = _document(documents, head_name(ns), key)
            if head is None:
                return None
            at, checkpoint_id, full = head["at"], head["id"], None
            stored = await self.backend.read_modules(key, names=[writes_name(ns, checkpoint_id)])
            documents = _gathered(stored)
        known = self._known(key, ns, checkpoint_id)
        if known is not None and known[0] == at:
            full = None  # remembered here, with its values
        return await self._loaded(key, ns, checkpoint_id, at, documents, full)

    async def _load_one(self, key: Key, ns: str, checkpoint_id: str) -> Loaded | None:
        """A checkpoint by id: its record and pending writes in one read when its position is
        remembered here (the record not), else its position and pending writes in one read
        with the record at that position unless it is remembered here (``read_modules_and_log``:
        one transaction on SQLite); one not indexed yet is found in the log's tail."""
        with self._lock:
            slot = (*key, self._generations.get(key, 0), ns, checkpoint_id)
            remembered = slot in self._records
            at = None if remembered else self._positions.get(slot)
        if at is not None:
            name = writes_name(ns, checkpoint_id)
            tail, stored = await self.backend.read_log_and_modules(
                key, path=CHECKPOINTS, start=at, stop=at + 1, names=lambda _: [name]
            )
            record = _record_of(tail, key, ns, checkpoint_id)
            documents = _gathered(stored)
            return await self._loaded(key, ns, checkpoint_id, at, documents, record)
        index = at_name(ns, checkpoint_id)
        names = [index, writes_name(ns, checkpoint_id)]
        records: list[Any]
        if remembered:  # its position and writes: the record is remembered here
            stored, records = await self.backend.read_modules(key, names=names), []
        else:  # the record too, at the position its document names, in the same read
            stored, records = await self.backend.read_modules_and_log(
                key, names=names, path=CHECKPOINTS, span=partial(_indexed, index)
            )
        if stored is None:
            return None
        at = (_document(stored.documents, index, key) or {}).get("at")
        if at is None:
            found = await self._find_in_tail(key, ns, checkpoint_id)
            if found is None:
                return None
            documents = _gathered(stored)
            return await self._loaded(key, ns, checkpoint_id, found[0], documents, found[1])
        full = _record_of(records, key, ns, checkpoint_id) if records else None
        return await self._loaded(key, ns, checkpoint_id, at, _gathered(stored), full)

    async def _loaded(
        self,
        key: Key,
        ns: str,
        checkpoint_id: str,
        at: int,
        documents: dict[str, Any],
        full: Record | None = None,
    ) -> Loaded:
        """The record at ``at`` (given in ``full``, remembered, or read) with its values and
        the pending writes in ``documents``; a record given is remembered, with the values
        unpacked here."""
        known = self._known(key, ns, checkpoint_id)
        if full is None and (known is None or known[0] != at):
            full = await self._record_at(key, ns, checkpoint_id, at, remember=False)
        record = full if full is not None else known[1]  # type: ignore[index]
        values, wanted = self._values_here(key, at, record, full, None)
        if full is not None:
            self._remember(key, at, full, blobs=values)
        if wanted:
            await self._read_values(key, record, values, wanted)
        held = _document(documents, writes_name(ns, checkpoint_id), key) if documents else None
        what = what_of(key, record)
        return Loaded(
            record, values, [_write_of(item, what) for item in held.get("w", [])] if held else []
        )

    async def _values_of(
        self,
        key: Key,
        at: int,
        record: Record,
        full: Record | None,
        nearby: dict[int, Record] | None = None,
    ) -> dict[str, Blob]:
        """A record's channel values: its own (from ``full`` when read, else kept here, else
        read) and those its ``src`` refers to (kept here, else in the records read with it,
        ``nearby`` by position, else read: neighbouring positions in one read)."""
        values, wanted = self._values_here(key, at, record, full, nearby)
        if wanted:
            await self._read_values(key, record, values, wanted)
        return values

    def _values_here(
        self,
        key: Key,
        at: int,
        record: Record,
        full: Record | None,
        nearby: dict[int, Record] | None,
    ) -> tuple[dict[str, Blob], dict[int, list[str]]]:
        """:meth:`_values_of` without a read: the values found, and the channels to read by
        position (none, almost always: no coroutine is made for them)."""
        ns, versions = record["ns"], record["versions"]
        what = what_of(key, record)
        values: dict[str, Blob] = {}
        wanted: dict[int, list[str]] = {}
        own, sources = record.get("values", {}), record.get("src", {})
        held = {} if full is None else full.get("values", {})
        missing = {c: v for c, v in versions.items() if c not in held} if held else versions
        kept = self._kept(key, ns, missing) if missing else {}
        for channel, version in versions.items():
            if channel in held:
                values[channel] = unpack(held[channel], what)
                continue
            value = kept.get(channel)
            if value is not None:
                values[channel] = value
            elif channel in own:
                wanted.setdefault(at, []).append(channel)  # its own, no longer kept here
            elif channel in sources:
                source_at = sources[channel]
                source = None if nearby is None else nearby.get(source_at)
                if source is None:
                    wanted.setdefault(source_at, []).append(channel)
                else:
                    values[channel] = _source_value(key, source, ns, channel, version)
        return values, wanted

    async def _read_values(
        self, key: Key, record: Record, values: dict[str, Blob], wanted: dict[int, list[str]]
    ) -> None:
        """The values ``wanted`` (channels by position) read into ``values``: neighbouring
        positions in one read."""
        ns, versions = record["ns"], record["versions"]
        for start, stop in _runs_of(sorted(wanted)):
            found = _checked(
                await self.backend.read_log(key, path=CHECKPOINTS, start=start, stop=stop), key
            )
            for position, source in enumerate(found, start):
                self._remember(key, position, source)
                for channel in wanted.get(position, []):
                    values[channel] = _source_value(key, source, ns, channel, versions[channel])

    async def load_many(
        self,
        key: Key,
        records: Sequence[tuple[int, Record]],
        documents: dict[str, Any] | None = None,
        view: _View | None = None,
    ) -> list[Loaded]:
        """The values and pending writes of records read from the log, their writes read in one
        step (unless ``documents`` holds them, read with the records); a value one of them
        refers to is taken from the others when it is there. ``view``: the view the records
        and ``documents`` were read under (or taken from), which holds what is loaded here."""
        if view is not None and documents is not None:
            known = view.loaded
            found = [known.get((record["ns"], record["id"])) for _, record in records]
            if None not in found:
                return found  # type: ignore[return-value]
        names = [writes_name(record["ns"], record["id"]) for _, record in records]
        if documents is None:
            view = None  # its writes are read below, apart from the records
            stored = await self.backend.read_modules(key, names=names)
            documents = _gathered(stored)
        nearby = dict(records)
        loaded = []
        for name, (at, record) in zip(names, records, strict=True):
            try:
                values, wanted = self._values_here(key, at, record, record, nearby)
                if wanted:
                    await self._read_values(key, record, values, wanted)
            except _Moved:
                self.forget(key)
                raise ConflictError(
                    f"Thread {key.session_id!r} changed while it was listed."
                ) from None
            held = _document(documents, name, key) if documents else None
            what = what_of(key, record)
            writes = [_write_of(item, what) for item in held.get("w", [])] if held else []
            loaded.append(Loaded(record, values, writes))
            if view is not None:
                view.keep(record["ns"], loaded[-1], head=False)
        return loaded

    async def newest_first(
        self, key: Key, ns: str | None, before: str | None, before_ns: str, first: int
    ) -> AsyncIterator[tuple[list[tuple[int, Record]], dict[str, Any] | None, _View | None]]:
        """The thread's records with their positions, newest first, a page at a time (the
        first of ``first`` records): only namespace ``ns`` unless None, and only those put
        before checkpoint ``before`` (of namespace ``before_ns``) when given. Each page comes
        with its records' writes documents when they were read with it (the first), else
        None: :meth:`load_many` reads them; and the view it was read under (the first page
        of a namespace, when the store stamps it), taken from it while it holds."""
        size = max(1, min(first, _PAGE))
        end: int | None = None
        if before is None and ns is not None:
            # the log's tail first, with the writes documents of its records: a record says
            # where it is, so when the newest is of this namespace the walk starts here, with
            # no read of the head document
            view = self._views.get(key)
            held = None if view is None else view.pages.get((ns, size))
            if held is not None and not self._certified(key, view):  # type: ignore[arg-type]
                held = None
            if held is None:
                read = partial(
                    self.backend.read_log_and_modules,
                    key,
                    path=CHECKPOINTS,
                    start=-size,
                    stop=None,
                    names=lambda tail: _writes(tail, ns),
                )
                if self._stamps_pay():
                    done = await self.backend.stamped(key, read)
                else:
                    done = Stamped(await read(), None, None)
                tail, stored = done.value
                if not _checked(tail, key):
                    return
                documents = _gathered(stored)
                start = _start_of(tail)
                if start is None or tail[-1].get("ns") != ns:
                    chosen = None
                else:
                    chosen = [
                        (at, record)
                        for at, record in reversed(list(enumerate(tail, start)))
                        if record.get("ns") == ns
                    ]
                    view = self._viewed(key, done.stamp)
                    if view is not None:
                        if len(view.pages) >= 8:
                            view.pages.clear()
                        view.pages[ns, size] = (chosen, documents, start)
            else:
                chosen, documents, start = held
            if chosen is not None:
                if chosen:
                    yield chosen, documents, view
                end, size = start, _PAGE
        if end is None:
            end = await self._end(key, ns, before, before_ns)
        while end > 0:
            start = max(0, end - size)
            page = _checked(
                await self.backend.read_log(key, path=CHECKPOINTS, start=start, stop=end), key
            )
            if len(page) != end - start:  # the log was rewritten meanwhile
                self.forget(key)
                raise ConflictError(f"Thread {key.session_id!r} changed while it was listed.")
            chosen = [
                (at, record)
                for at, record in reversed(list(enumerate(page, start)))
                if ns is None or record.get("ns") == ns
            ]
            if chosen:
                yield chosen, None, None
            end, size = start, _PAGE

    async def _end(self, key: Key, ns: str | None, before: str | None, before_ns: str) -> int:
        """Where a newest-first walk starts: past the namespace's head, or at ``before``."""
        if before is not None:
            found = await self._find(key, before_ns, before)
            return 0 if found is None else found[0]
        if ns is not None:
            head = await self._head(key, ns)
            return 0 if head is None else head[0] + 1
        return await self.backend.count_log(key, path=CHECKPOINTS)

    # -- pending writes -------------------------------------------------------------------------

    async def put_writes(
        self, key: Key, ns: str, checkpoint_id: str, writes: Sequence[Write]
    ) -> None:
        """Store pending writes of a checkpoint so that concurrent writers (parallel tasks,
        other processes) never lose each other's writes, in one write whatever the checkpoint
        holds already.

        The first writes of a checkpoint are merged into its writes document, with the length
        of :data:`WRITES` expected (each such write appends an entry to it, as a prune does):
        anyone else's write meanwhile moved the length, so the write is refused, and read
        again. Once the document holds ``_MERGED_UP_TO`` writes (or ``_MERGED_BYTES`` of
        text), the write that fills it marks it ``more``, and every later set of writes is
        appended to the log below it (``writes_name + _MORE``), one message per call, with
        the length of :data:`WRITES` checked but not moved: appends never conflict with each
        other, and a prune or a delete meanwhile refuses them. Readers merge the log into the
        document in order (:func:`_gathered`), LangGraph's rule for repeats applied there. So
        the hundreds of tasks of a map-reduce step cost one append each, not a rewrite of
        every write stored before theirs.

        Every writes document is written with an entry of :data:`WRITES` (here, and a prune's
        marker), so a thread whose :data:`WRITES` was empty when this object first wrote to it
        holds only the writes documents written here since, as long as its length is still
        the one expected: the writes of a checkpoint not among them are none, with no read (a
        checkpoint just put, the common case). On a thread that held writes before, a
        checkpoint put here with an id minted after this object read that length holds none
        either (``_fresh``).

        In this process the calls for one thread take turns (``Turns``), and the calls that
        queued while another wrote are stored together by the next of them, in one write:
        LangGraph saves a step's writes in the background while the next step runs, and
        the tasks of a step finish at once, so such calls overlap as a rule. Without turns,
        each would be refused by the length another one moved and read everything again;
        together, they share one commit (one fsync at ``synchronous=FULL``). A call returns
        once its writes are stored; a write of several calls that fails is made again by
        each of them alone, so each gets the outcome of its own writes."""
        call = _Call(ns, checkpoint_id, writes)
        with self._lock:
            self._queued.setdefault(key, []).append(call)
        try:
            await self._writing.take(key)
        except BaseException as exc:
            with self._lock:  # its caller is gone: not written later by another call
                call.abandoned = True
                queued = self._queued.get(key, [])
                if call in queued:
                    queued.remove(call)
                    if not queued:
                        del self._queued[key]
            if call.done and isinstance(exc, OperationTimeoutError):
                return  # another call's write stored it before the deadline
            raise
        try:
            with self._lock:
                if call.done:  # stored by the call that had the turn before
                    return
                calls = self._queued.pop(key, [])
            if call not in calls:  # never so: a call is queued until it is stored
                calls.insert(0, call)
            await self._write_calls(key, call, calls)
        finally:
            self._writing.give(key)

    async def _write_calls(self, key: Key, mine: _Call, calls: list[_Call]) -> None:
        """Store ``calls`` (``mine`` among them) in one write; if that fails, ``mine`` alone,
        the others queued again for their own callers' turns."""
        try:
            await self._put_writes(key, calls)
        except BaseException as exc:
            with self._lock:
                others = [c for c in calls if c is not mine and not c.abandoned]
                if others:
                    self._queued[key] = others + self._queued.get(key, [])
            if len(calls) == 1 or not isinstance(exc, Exception):
                raise  # its own outcome, or a cancellation
        else:
            for call in calls:
                call.done = True
            return
        await self._put_writes(key, [mine])
        mine.done = True

    async def _put_writes(self, key: Key, calls: Sequence[_Call]) -> None:
        """The writes of ``calls`` merged in order into their documents (or appended to the
        logs below them), in one write, as if each call had written alone one after another:
        each call that changes a document adds its entry to :data:`WRITES`."""
        for _ in range(_ATTEMPTS):
            with self._lock:
                journal = self._journals.get(key)
            since = None
            if journal is None:  # writes need no mark: a thread is marked by its checkpoints
                since = _now_as_minted()
                length = await self.backend.count_log(key, path=WRITES)
                known: dict[str, dict[str, Any]] = {}
                every: set[str] | None = set() if length == 0 else None
                fresh: dict[str, None] = {}
            else:
                length, known, every, _, fresh, _ = journal
            docs: dict[str, dict[str, Any]] = {}
            unread: list[str] = []
            for name in dict.fromkeys(call.name for call in calls):
                doc = known.get(name)
                if doc is None and (
                    (every is not None and name not in every) or name in fresh
                ):  # every writes document is one written here, or it was put since: none yet
                    doc = {}
                if doc is None:
                    unread.append(name)
                else:
                    docs[name] = doc
            if unread:
                stored = await self.backend.read_modules(key, names=unread)
                for name in unread:
                    found = None if stored is None else _document(stored.documents, name, key)
                    docs[name] = found or {}
            documents: dict[str, Any] = {}
            entries: list[dict[str, Any]] = []
            below: dict[str, list[dict[str, Any]]] = {}
            for call in calls:
                doc = docs[call.name]
                if doc.get("more"):  # WRITES checked, not moved: no prune, no delete since
                    below.setdefault(call.name, []).append(_more(call.content, call.writes))
                    continue
                held = doc.get("w", [])
                merged = _merged(held, call.writes)
                if merged == held:
                    continue  # nothing new: a repeat of writes stored already
                doc = {"w": merged}
                if _full(merged) and _overflows(call.name):
                    doc["more"] = True  # the writes after these go to the log below it
                docs[call.name] = documents[call.name] = doc
                entries.append(call.entry())
            if not documents and not below:
                return
            logged = [LogWrite(WRITES, entries, length)]
            logged.extend(LogWrite(name + _MORE, messages, -1) for name, messages in below.items())
            try:
                await self.backend.write_modules(key, documents=documents, writes=logged)
            except ConflictError:
                with self._lock:
                    self._journals.pop(key, None)
                await pause(0)
                continue
            self._journaled(key, journal, every, docs, length + len(entries), since)
            return
        raise ConflictError(
            f"Thread {key.session_id!r}: {_ATTEMPTS} other writers stored writes while this "
            "one tried to; try again."
        )

    def _fresh(self, key: Key, ns: str, checkpoint_id: str) -> None:
        """A checkpoint put here: fresh in the thread's journal (called holding the lock)
        when its id was minted after the journal's start, later than any fresh before it.

        Nobody could write writes for a checkpoint before its id was minted, and whoever
        wrote some after the journal's start moved the length of WRITES: the next write of
        writes, expecting the journal's length, is refused and reads again. So a checkpoint
        fresh here has no writes document, and its first ``put_writes`` reads nothing, on a
        thread with writes stored before this object knew it (resumed by another process, or
        past the :data:`_REMEMBERED` names ``every`` holds). An id put again, or minted
        before the journal's start, is not fresh: its writes are read. While ``every`` lists
        the thread's writes documents, it says as much, with nothing to do here."""
        journal = self._journals.get(key)
        if journal is None or journal.since is None or journal.every is not None:
            return
        minted = _minted(checkpoint_id)
        if minted is None or minted <= max(journal.since + _MINTED_MARGIN, journal.top):
            return
        fresh = dict(journal.fresh)  # a new dict: readers hold the one they took, unchanged
        fresh[writes_name(ns, checkpoint_id)] = None
        if len(fresh) > _FRESH:
            del fresh[next(iter(fresh))]
        self._journals[key] = journal._replace(fresh=fresh, top=minted)

    def _journaled(
        self,
        key: Key,
        journal: _Journal | None,
        every: set[str] | None,
        docs: dict[str, dict[str, Any]],
        length: int,
        since: int | None,
    ) -> None:
        """Remember writes documents as written (or found marked ``more``) and the length of
        :data:`WRITES` after them; ``every`` is what the write started from when the thread
        had no journal here, ``since`` when it read the length."""
        with self._lock:
            current = self._journals.get(key)
            kept: dict[str, dict[str, Any]] = {}
            fresh: dict[str, None] = {}
            top = 0
            if current is not None:
                kept, every, since, fresh, top = current[1:]
            elif journal is not None:  # forgotten meanwhile: what else it holds is unknown
                every = since = None
            if any(name in fresh for name in docs):  # written: never fresh again
                fresh = {name: None for name in fresh if name not in docs}
            known = dict(kept)  # a new dict: readers hold the one they took, unchanged
            for name in docs:
                known.pop(name, None)
            while known and len(known) + len(docs) > 8:  # the few checkpoints being written
                del known[next(iter(known))]
            known.update(docs)
            if every is not None and len(every) + len(docs) <= _REMEMBERED:
                every.update(docs)
            else:
                every = None
            self._journals[key] = _Journal(length, known, every, since, fresh, top)

    # -- delta channels -------------------------------------------------------------------------

    async def history(
        self, key: Key, ns: str, checkpoint_id: str | None, channels: Sequence[str]
    ) -> dict[str, History]:
        """For each channel, the writes along the ancestors of a checkpoint (not its own),
        oldest first, up to and including the nearest ancestor that stores a value of it,
        which is the seed. Ancestors are read a page at a time, their writes in one step per
        page."""
        for _ in range(_ATTEMPTS):
            try:
                return await self._history(key, ns, checkpoint_id, channels)
            except _Moved:
                self.forget(key)
                await pause(0)
        raise ConflictError(f"Thread {key.session_id!r} kept changing while it was read.")

    async def _history(
        self, key: Key, ns: str, checkpoint_id: str | None, channels: Sequence[str]
    ) -> dict[str, History]:
        if checkpoint_id is None:
            head = await self._head(key, ns)
            checkpoint_id = None if head is None else head[1]
        target = None if checkpoint_id is None else self._known(key, ns, checkpoint_id)
        if target is None and checkpoint_id is not None:
            target = await self._find(key, ns, checkpoint_id)
        collected: dict[str, list[Write]] = {channel: [] for channel in channels}
        seeds: dict[str, Blob] = {}
        remaining = set(channels)
        parent = None if target is None else target[1].get("parent")
        pages: dict[str, tuple[int, Record]] = {}
        walked: set[str] = set()
        while parent is not None and remaining and parent not in walked:
            chain = await self._chain(key, ns, parent, pages)
            if not chain:
                break
            walked.update(record["id"] for _, record in chain)
            names = [writes_name(ns, record["id"]) for _, record in chain]
            stored = await self.backend.read_modules(key, names=names)
            documents = _gathered(stored)
            for at, record in chain:
                if not remaining:
                    break
                what = what_of(key, record)
                held = _document(documents, writes_name(ns, record["id"]), key) or {}
                writes = [_write_of(item, what) for item in held.get("w", [])]
                for write in reversed(_in_order(writes)):
                    if write.channel in remaining:
                        collected[write.channel].append(write)
                stores = [
                    c for c in remaining if c in record["values"] or c in record.get("src", {})
                ]
                if stores:
                    self._remember(key, at, record)
                    values = await self._values_of(key, at, record, record)
                    for channel in stores:
                        seeds[channel] = values[channel]
                        remaining.discard(channel)
            parent = chain[-1][1].get("parent")
        return {
            channel: History(list(reversed(collected[channel])), seeds.get(channel))
            for channel in channels
        }

    async def _chain(
        self, key: Key, ns: str, first: str, pages: dict[str, tuple[int, Record]]
    ) -> list[tuple[int, Record]]:
        """Ancestors from ``first`` up, as far as one page of the log reaches."""
        if first not in pages:
            found = await self._find(key, ns, first)
            if found is None:
                return []
            at = found[0]
            start = max(0, at - _PAGE + 1)
            for offset, record in enumerate(
                _checked(
                    await self.backend.read_log(key, path=CHECKPOINTS, start=start, stop=at + 1),
                    key,
                ),
                start,
            ):
                if record.get("ns") == ns:
                    pages[record["id"]] = (offset, record)
        chain: list[tuple[int, Record]] = []
        current: str | None = first
        while current is not None and current in pages and len(chain) < _PAGE:
            chain.append(pages[current])
            current = pages[current][1].get("parent")
        return chain

    # -- whole threads ------------------------------------------------------------------------

    async def delete(self, key: Key) -> bool:
        self.forget(key)
        return await self.backend.delete_record(key)

    async def copy(self, source: Key, target: Key) -> bool:
        """Fork the thread ``source`` onto ``target`` (a new thread): every checkpoint and
        write of every namespace, in one atomic step, the fork recording its parent. False
        when there is no such thread."""
        self.forget(target)
        try:
            await Branches(self.backend).fork(
                source.session_id, source.user_id, target.session_id, target.user_id
            )
        except SessionNotFoundError:
            return False
        return True

    async def has_runs(self, key: Key, run_ids: Iterable[str]) -> bool:
        """Whether the thread holds checkpoints of any of these runs (one read)."""
        names = [run_name(run_id) for run_id in run_ids]
        stored = await self.backend.read_modules(key, names=names)
        return stored is not None and any(_document(stored.documents, name, key) for name in names)

    async def keep(self, key: Key, keeping: Callable[[list[Record]], Awaitable[set[int]]]) -> int:
        """Rewrite the thread keeping the records ``keeping(records)`` chooses (a set of
        positions), in one atomic step, as long as nobody appended meanwhile (else it reads
        and chooses again). A value a kept record refers to moves into it if the record
        holding it goes; what goes is overwritten with empty documents, and the logs of its
        writes (``more``) emptied. How many went."""
        for _ in range(_ATTEMPTS):
            length = await self.backend.count_log(key, path=CHECKPOINTS)
            records = _checked(
                await self.backend.read_log(key, path=CHECKPOINTS, start=0, stop=length), key
            )
            if len(records) != length:
                await pause(0)
                continue
            kept_at = await keeping(records)
            if len(kept_at) == length:
                return 0
            moved = {old: new for new, old in enumerate(sorted(kept_at))}
            kept = [_rehomed(records[at], records, moved, at) for at in sorted(kept_at)]
            documents: dict[str, Any] = {}
            for at, record in enumerate(records):
                if at not in kept_at:
                    documents[at_name(record["ns"], record["id"])] = {}
                    documents[writes_name(record["ns"], record["id"])] = {}
                    documents[head_name(record["ns"])] = {}
                    if record.get("run"):
                        documents[run_name(record["run"])] = {}
            for at, record in enumerate(kept):
                documents[at_name(record["ns"], record["id"])] = {"at": at}
                documents[head_name(record["ns"])] = {"at": at, "id": record["id"]}
                if record.get("run"):
                    documents[run_name(record["run"])] = {"run": record["run"]}
            dropped = length - len(kept)
            marker = {"role": "writes", "content": f"{dropped} checkpoints removed"}
            gone = [
                writes_name(r["ns"], r["id"]) for at, r in enumerate(records) if at not in kept_at
            ]
            emptied = [LogWrite(name + _MORE, [], None) for name in await self._more(key, gone)]
            try:
                await self.backend.write_modules(
                    key,
                    documents=documents,
                    writes=[
                        LogWrite(CHECKPOINTS, [], length),  # nobody appended since the read
                        LogWrite(CHECKPOINTS, kept, None),
                        LogWrite(WRITES, [marker], -1),
                        *emptied,
                    ],
                )
            except ConflictError:
                await pause(0)
                continue
            finally:
                self.forget(key)
            return dropped
        raise ConflictError(f"Thread {key.session_id!r} kept changing while it was rewritten.")

    async def _more(self, key: Key, names: list[str]) -> list[str]:
        """Which of these writes documents moved writes into their log (``more``). One marked
        after this read keeps its log: no read takes it, its checkpoint being gone."""
        names = [name for name in names if _overflows(name)]
        stored = await self.backend.read_modules(key, names=names) if names else None
        documents = {} if stored is None else stored.documents
        return [name for name in names if (_document(documents, name, key) or {}).get("more")]

    async def keep_latest(self, key: Key) -> int:
        """Keep each namespace's newest checkpoint and the ancestors its delta channels are
        rebuilt from: every ancestor up to the nearest one storing a value for each channel
        the newest stores none of (what ``get_delta_channel_history`` walks)."""

        async def keeping(records: list[Record]) -> set[int]:
            heads = {record["ns"]: at for at, record in enumerate(records)}
            return set(heads.values()) | _replayed_from(records, heads.values())

        return await self.keep(key, keeping)


def _source_value(key: Key, source: Record, ns: str, channel: str, version: Any) -> Blob:
    """The value of ``channel`` at ``version`` stored in the record ``source``; ``_Moved`` if
    it holds none such (the thread was rewritten since the reference was made: read again)."""
    held = source.get("values", {}).get(channel)
    if held is None or source.get("ns") != ns or source["versions"].get(channel) != version:
        raise _Moved
    return unpack(held, what_of(key, source))


def _runs_of(positions: list[int]) -> list[tuple[int, int]]:
    """Sorted positions as (start, stop) ranges, neighbours joined: one read each."""
    ranges: list[tuple[int, int]] = []
    for at in positions:
        if ranges and at - ranges[-1][1] <= 1:
            ranges[-1] = (ranges[-1][0], at + 1)
        else:
            ranges.append((at, at + 1))
    return ranges


def _start_of(records: list[Record]) -> int | None:
    """The position of the first of consecutive records read from the log's end, from where
    the last says it is (``at``); None when it does not say (written by an earlier version)
    or the records disagree with it."""
    last = records[-1].get("at")
    if type(last) is not int:
        return None
    start = last - len(records) + 1
    for at, record in enumerate(records, start):
        if record.get("at", at) != at:
            return None
    return start


def _rehomed(record: Record, records: list[Record], moved: dict[int, int], at: int) -> Record:
    """A kept record (at position ``at``) with its references and its own position
    renumbered; a value whose record goes moves in."""
    copy = dict(record)
    copy["at"] = moved[at]
    values = dict(record.get("values", {}))
    sources: dict[str, int] = {}
    for channel, at in record.get("src", {}).items():
        if at in moved:
            sources[channel] = moved[at]
        elif channel in records[at].get("values", {}):
            values[channel] = records[at]["values"][channel]
    copy["values"], copy["src"] = values, sources
    return copy


def _replayed_from(records: list[Record], heads: Iterable[int]) -> set[int]:
    """Positions of the ancestors each head's delta channels are rebuilt from: for every delta
    channel (``delta``, as LangGraph's metadata names them) a head stores no value of, its
    ancestors up to the nearest one storing a value of it."""
    by_id = {(record["ns"], record["id"]): at for at, record in enumerate(records)}
    needed: set[int] = set()
    for head in heads:
        record = records[head]
        remaining = {
            channel
            for channel in record.get("delta", ())
            if channel not in record.get("values", {}) and channel not in record.get("src", {})
        }
        parent = record.get("parent")
        while remaining and parent is not None and (record["ns"], parent) in by_id:
            at = by_id[record["ns"], parent]
            needed.add(at)
            ancestor = records[at]
            remaining -= set(ancestor.get("values", {})) | set(ancestor.get("src", {}))
            parent = ancestor.get("parent")
    return needed


class _Moved(Exception):
    """A position read no longer holds the record it named: the thread was rewritten (pruned)
    meanwhile; read again."""
