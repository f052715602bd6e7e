"""Portable session archives: one versioned JSON Lines file, written and read as a stream.

An archive holds a session's metadata, state, module documents, message logs (in pages of
messages), its snapshots (each the same sections again) and the long-term memories it added,
one JSON object per line, and ends with a line that counts the lines before it and gives their
SHA-256. Writing streams page by page, so a 100,000-message session exports in bounded memory;
the export reads from an atomic copy of the session, so it is consistent while others write.

Reading checks the whole file first (every line, the count, the digest, the version) and only
then writes, into hidden staging sessions that atomic copies put in place, the session last: a
corrupt or truncated archive imports nothing, and neither does a crash halfway. Staging
sessions expire (:data:`STAGING_TTL`), so a process killed while exporting or importing leaves
nothing that ``purge_expired`` does not remove in time.

A service floor: it works on a store's backend (``StoreBackend``) and imports only the stores
and the ground.
"""

from .exporting import export_session
from .importing import import_session
from .layout import ARCHIVE_VERSION, ArchiveSummary
from .staging import STAGING_TTL

__all__ = ["ARCHIVE_VERSION", "STAGING_TTL", "ArchiveSummary", "export_session", "import_session"]
