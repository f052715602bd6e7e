"""Shared fixtures for the embedder tests: one real model per test session, and subprocesses.

Importing praisonsession.recall.embeddings needs none of the model's dependencies; each test module
skips itself when the ``memory`` extra is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import praisonsession.recall.embeddings as embeddings_package
from praisonsession.recall.embeddings import MiniLMEmbedder

# The directory that holds the praisonsession package under test (the repo, or a temp copy).
PROJECT_ROOT = Path(embeddings_package.__file__).resolve().parents[2]

TOPICS = {
    "refunds": "Customers can get their money back within 30 days of purchase.",
    "shipping": "Orders are delivered by courier within three to five business days.",
    "password": "To reset your password, click 'Forgot password' on the login page.",
    "weather": "Tomorrow will be sunny with a light breeze and warm temperatures.",
    "cooking": "Simmer the tomato sauce for twenty minutes, then add fresh basil.",
    "football": "The striker scored twice in the second half to win the match.",
    "medicine": "Take one tablet twice a day after meals for a week.",
    "astronomy": "Jupiter is the largest planet in our solar system.",
    "music": "She plays the violin in the city's symphony orchestra.",
    "finance": "The central bank raised interest rates by a quarter point.",
}
# Paraphrases that share (almost) no words with their topic's document.
QUERIES = {
    "refunds": "How do I get reimbursed for something I bought?",
    "shipping": "How long until my parcel arrives?",
    "password": "I forgot my login credentials",
    "weather": "Will it rain tomorrow?",
    "cooking": "recipe for pasta sauce",
    "football": "who won the soccer game",
    "medicine": "what dose of the pills should I take",
    "astronomy": "what is the biggest planet",
    "music": "classical musician playing a string instrument",
    "finance": "borrowing costs went up",
}


@pytest.fixture(scope="session")
def topics() -> dict[str, str]:
    """One short document per topic."""
    return dict(TOPICS)


@pytest.fixture(scope="session")
def queries() -> dict[str, str]:
    """A paraphrased question per topic."""
    return dict(QUERIES)


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    """The default embedder, loaded once for the whole session."""
    model = MiniLMEmbedder()
    model.load()
    return model


@pytest.fixture
def run_python(tmp_path: Path) -> Callable[[str], subprocess.CompletedProcess[str]]:
    """Run a snippet in a fresh interpreter that imports the praisonsession under test."""

    def run(code: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(PROJECT_ROOT), *filter(None, [env.get("PYTHONPATH")])]
        )
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert result.returncode == 0, result.stderr
        return result

    return run
