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


def test_the_demo_runs_and_shows_what_it_promises(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "praisonsession.demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "increment_state('score', increment=5) -> 15" in out
    assert "[process 2] increment_state('turns') -> 2" in out
    assert "after 1.2 s: is_expired() -> True" in out
    assert "-> 'I would like a refund for the broken blender'" in out
    assert "in a new Session: chat('What is my name?') -> 'Your name is Ada.'" in out
