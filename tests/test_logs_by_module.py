"""The index of a session document's log paths by module (the memory store's), against a
scan of every path, through additions, removals and a replaced dict."""

from __future__ import annotations

import random
from typing import Any

from praisonsession.stores.backends.document import LogsByModule

MODULES = ["a", "b", "ab", "a-b", "a/b", "a.b", ""]


def scanned(logs: dict[str, Any], names: list[str]) -> list[str]:
    """What the stores answered before the index: every path whose module is named."""
    wanted = set(names)
    return sorted(path for path in logs if path.split(".")[0] in wanted)


def test_the_index_answers_as_a_scan_of_every_path_whatever_happened_to_the_dict() -> None:
    rng = random.Random(7)
    index, logs = LogsByModule(), {}
    made_again = 0
    for step in range(5000):
        for _ in range(rng.randint(1, 3)):  # a few changes between two reads
            roll = rng.random()
            if roll < 0.6:  # the stores' only change: a log added (or its messages replaced)
                logs[rng.choice(MODULES) + rng.choice(["", ".log", ".x"]) + str(step % 40)] = []
            elif roll < 0.65 and logs:
                del logs[rng.choice(list(logs))]
                made_again += 1
            elif roll < 0.67:
                logs = dict(logs) if rng.random() < 0.5 else {}
        names = rng.sample([*MODULES, "ax", "a."], 3)
        assert sorted(index.below(logs, names)) == scanned(logs, names), step
    assert made_again > 100


def test_each_name_is_answered_once_and_new_logs_join_its_module() -> None:
    index = LogsByModule()
    logs: dict[str, Any] = {"a": [], "a.x": [], "ab.x": [], "a.b.c": []}
    assert index.below(logs, ["a", "a"]) == ["a", "a.x", "a.b.c"]
    logs["a.more"] = []
    assert index.below(logs, ["a.b", "a"]) == ["a", "a.x", "a.b.c", "a.more"]  # a.b: none
