"""A program a test runs (an example, a notebook's kernel) gets a temporary directory of its
own, its ``TMPDIR``, and must leave it as it found it: what a reader runs again and again
leaves nothing behind in the system's temporary directory.

    temp = own_tmpdir(tmp_path)            # tmp_path/tmp, made
    subprocess.run(..., env={**os.environ, "TMPDIR": str(temp)})
    assert left_in(temp) == []
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["left_in", "own_tmpdir"]

#: onnxruntime (the memory's embedder) writes one file there, always the same, whoever runs it.
ONNXRUNTIME_FILE = ".ses"


def own_tmpdir(folder: Path) -> Path:
    temp = folder / "tmp"
    temp.mkdir(exist_ok=True)
    return temp


def left_in(temp: Path) -> list[str]:
    """What a program left in ``temp``, but onnxruntime's own file."""
    return sorted(path.name for path in temp.iterdir() if path.name != ONNXRUNTIME_FILE)
