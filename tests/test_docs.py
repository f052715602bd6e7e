"""Every Python example in the README and the docs runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "pages").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)

EXAMPLES = [
    pytest.param(code, id=f"{page.name}:{n}")
    for page in PAGES
    for n, code in enumerate(BLOCK.findall(page.read_text("utf-8")), 1)
]


@pytest.mark.parametrize("code", EXAMPLES)
def test_example_runs(code: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_every_page_has_been_found() -> None:
    assert len(PAGES) >= 6 and len(EXAMPLES) >= 6
