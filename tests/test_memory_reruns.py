"""Running a docs example or a notebook's cells again leaves memory and knowledge as they were.

Each Python block of the docs that uses memory or knowledge runs twice in one directory; the
memory notebook's cells run, then all but the first (which makes a fresh directory) run again
in the same interpreter, as "Run all" twice in a kernel does. Between runs, the vector store
(every memory and knowledge collection: ids, texts, metadata) and the short-term notes in the
session store are compared. Histories are left out: they record what was done, not what is.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
USES_MEMORY = re.compile(r"add_memor|add_knowledge|update_memory|delete_memory")

SNAPSHOT = textwrap.dedent(
    """
    def _snapshot(data_dir):
        import json, sqlite3
        from pathlib import Path
        import chromadb
        from chromadb.config import Settings

        found = {}
        chroma = Path(data_dir) / "chroma"
        if chroma.is_dir():
            client = chromadb.PersistentClient(str(chroma), Settings(anonymized_telemetry=False))
            for collection in client.list_collections():
                if "_memory_history_" in collection.name:
                    continue
                got = collection.get(include=["documents", "metadatas"])
                metadatas = [json.dumps(m, sort_keys=True) for m in got["metadatas"]]
                found[collection.name] = sorted(zip(got["ids"], got["documents"], metadatas))
        database = Path(data_dir) / "sessions.db"
        if database.exists():
            rows = sqlite3.connect(database).execute(
                "SELECT user_id, session_id, seq, message FROM ps_messages"
                " WHERE log = '$memory/short_term' ORDER BY 1, 2, 3"
            )
            from praisonsession.recall.memory.short_term import fold

            by_session = {}
            for user, session, _, message in rows:
                by_session.setdefault(f"{user}/{session}", []).append(json.loads(message))
            found["short-term notes"] = {
                key: sorted((i, n["content"], json.dumps(n.get("metadata"), sort_keys=True))
                            for i, n in fold(log).items())
                for key, log in by_session.items()
            }
        return json.dumps(found, sort_keys=True)
    """
)

EXAMPLES = [
    pytest.param(code, id=f"{page.name}:{n}")
    for page in [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").glob("*.md"))]
    for n, code in enumerate(BLOCK.findall(page.read_text("utf-8")), 1)
    if USES_MEMORY.search(code)
]


def run(code: str, cwd: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("code", EXAMPLES)
def test_a_docs_example_run_twice_changes_no_memory(code: str, tmp_path: Path) -> None:
    snapshot = SNAPSHOT + "\nprint('SNAPSHOT', _snapshot('.praisonsession'))\n"
    first = run(code + "\n" + snapshot, tmp_path).rsplit("SNAPSHOT ", 1)[1]
    second = run(code + "\n" + snapshot, tmp_path).rsplit("SNAPSHOT ", 1)[1]
    assert json.loads(first) == json.loads(second)
    assert json.loads(first)  # the example did store something


@pytest.mark.slow
def test_the_memory_notebook_run_twice_changes_no_memory(tmp_path: Path) -> None:
    notebook = json.loads((ROOT / "notebooks" / "02_memory_knowledge.ipynb").read_text("utf-8"))
    cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    cells = [cell for cell in cells if not cell.lstrip().startswith(("%", "!"))]
    cells = [cell for cell in cells if "import require" not in cell]  # the extras' check
    # the last cell closes the sessions and removes the folder: run once, after both runs
    cleanup = [i for i, cell in enumerate(cells) if ".cleanup()" in cell or "rmtree" in cell]
    body = cells[1 : cleanup[0]] if cleanup else cells[1:]
    code = "\n".join(
        [
            SNAPSHOT,
            cells[0],
            *body,
            "first = _snapshot(workdir)",
            *body,
            "print('SAME' if first == _snapshot(workdir) else 'CHANGED', len(first))",
            *(cells[cleanup[0] :] if cleanup else []),
        ]
    )
    out = run(code, tmp_path)
    assert out.strip().splitlines()[-1].startswith("SAME"), out[-2000:]
