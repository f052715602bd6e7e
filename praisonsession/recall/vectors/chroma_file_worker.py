"""The other side of ``chroma_file.py``: a process of its own that runs SQL on embedded Chroma's
``chroma.sqlite3`` files for the process that started it.

Run by path with the standard library only (``python -I -S chroma_file_worker.py``). It reads
one JSON request per line on stdin and answers each with one line on stdout:

- ``{"path": p, "statements": [[sql, params], ...]}``: runs them in turn on its connection to
  ``p`` (opened at first use, never created), answered ``{"rows": [rows of each]}``, or
  ``{"error": name, "message": text}`` at the first that fails;
- ``{"path": p, "close": true}``: closes that connection, answered ``{"rows": []}``.

It ends when stdin does (the process that started it closed the pipe, or ended).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any


def _cell(value: Any) -> Any:
    """A value JSON carries: bytes (an older Chroma's ``seq_id``) as a tagged hex string."""
    return "hex:" + value.hex() if isinstance(value, bytes) else value


def _answer(connections: dict[str, sqlite3.Connection], request: dict[str, Any]) -> dict[str, Any]:
    path = request["path"]
    if request.get("close"):
        conn = connections.pop(path, None)
        if conn is not None:
            conn.close()
        return {"rows": []}
    conn = connections.get(path)
    if conn is None:
        uri = Path(path).resolve().as_uri() + "?mode=rw"
        conn = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
        connections[path] = conn
    results = []
    for sql, params in request["statements"]:
        rows = conn.execute(sql, params).fetchall()
        results.append([[_cell(value) for value in row] for row in rows])
    return {"rows": results}


def main() -> None:
    # Ctrl+C in a terminal reaches the whole process group: the process that started this one
    # decides whether to stop, and this one ends with its stdin
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    connections: dict[str, sqlite3.Connection] = {}
    for line in sys.stdin:
        try:
            reply = _answer(connections, json.loads(line))
        except Exception as exc:  # every failure is the caller's to report
            reply = {"error": type(exc).__name__, "message": str(exc)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
