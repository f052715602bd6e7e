"""Embedded Chroma's vector index files, cleared of the stale memory Chroma writes into them.

Embedded Chroma (chromadb 1.x, its hnswlib) keeps each collection's HNSW index in a folder
named by the collection's vector segment: ``header.bin``, ``data_level0.bin`` (one slot per
entry: links, vector, label), ``length.bin`` and ``link_lists.bin``. When it makes an index
(a collection's first write, and again on every new engine until the index is first saved,
which ``SAVED_EVERY`` entries do) it writes all of ``data_level0.bin`` and ``length.bin`` for
100 entries from memory it allocated and never cleared: the slots no entry holds yet carry
whatever that memory held before, any of the process's data (seen: pages of the session
store's SQLite file, with another user's state, in the files of a collection of a kept user,
after the first user's ``erase_user``). Chroma fills a slot, cleared first, when an entry
takes it, and never reads the others, so clearing them on disk changes nothing it reads.

:func:`clear_unused` zeroes, on disk, the slots beyond the entries the header counts. Its
caller holds the store's write lock (the lexical file's), so no index of ours grows meanwhile.
"""

from __future__ import annotations

import struct
from pathlib import Path

__all__ = ["clear_unused"]

#: hnswlib's persisted header: PERSISTENCE_VERSION (int), offsetLevel0, max_elements,
#: cur_element_count, size_data_per_element (size_t), ... (100 bytes in all, version 1).
_HEADER = struct.Struct("<iQQQQ")
_VERSION = 1
_CHUNK = 1 << 20


def clear_unused(folder: Path) -> bool:
    """Zero the slots of ``data_level0.bin`` and ``length.bin`` in an index folder that no
    entry holds (beyond the header's count); True when stale bytes were found and cleared.
    A folder that is not such an index (another version's, a half-written one) is left."""
    try:
        header = (folder / "header.bin").read_bytes()
    except OSError:
        return False
    if len(header) < _HEADER.size:
        return False
    version, _, capacity, count, slot = _HEADER.unpack_from(header)
    if version != _VERSION or slot <= 0 or count > capacity:
        return False
    cleared = _zero_from(folder / "data_level0.bin", count * slot)
    return _zero_from(folder / "length.bin", count * 4) or cleared


def _zero_from(path: Path, start: int) -> bool:
    """Zero ``path`` from byte ``start`` to its end, in place (its size kept), if any of it is
    not zero yet."""
    try:
        with path.open("r+b") as file:
            file.seek(0, 2)
            end = file.tell()
            dirty = False
            at = start
            while at < end and not dirty:
                file.seek(at)
                chunk = file.read(min(_CHUNK, end - at))
                dirty = chunk.count(0) != len(chunk)
                at += len(chunk)
            if not dirty:
                return False
            file.seek(start)
            at = start
            while at < end:
                size = min(_CHUNK, end - at)
                file.write(bytes(size))
                at += size
            file.flush()
    except OSError:
        return False
    return True
