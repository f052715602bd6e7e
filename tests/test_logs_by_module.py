"""The index of a session document's log paths by module (the memory store's), against a
scan of every path by the rule (``below.lies_below``), through additions, removals and a
replaced dict; and JSON's pass and the names a range per name reads, against the same rule."""

from __future__ import annotations

import random
from typing import Any

from praisonsession.stores.backends.below import lies_below, outermost, paths_below
from praisonsession.stores.backends.document import LogsByModule

MODULES = ["a", "b", "ab", "a-b", "a/b", "a.b", "a.b.c", "", "."]


def scanned(logs: dict[str, Any], names: list[str]) -> list[str]:
    """Every path lying below a module named, by the rule."""
    return sorted(path for path in logs if any(lies_below(path, name) for name in names))


def test_the_index_answers_as_a_scan_of_every_path_whatever_happened_to_the_dict() -> None:
    rng = random.Random(7)
    index, logs = LogsByModule(), {}
    made_again = 0
    for step in range(5000):
        for _ in range(rng.randint(1, 3)):  # a few changes between two reads
            roll = rng.random()
            if roll < 0.6:  # the stores' only change: a log added (or its messages replaced)
                tail = rng.choice(["", ".log", ".x", ".c.d", "-c", ".", ".."])
                logs[rng.choice(MODULES) + tail + rng.choice(["", str(step % 40)])] = []
            elif roll < 0.65 and logs:
                del logs[rng.choice(list(logs))]
                made_again += 1
            elif roll < 0.67:
                logs = dict(logs) if rng.random() < 0.5 else {}
        names = rng.sample([*MODULES, "ax", "a.", "a.b.c.d", "a..", "x"], 3)
        expected = scanned(logs, names)
        assert sorted(index.below(logs, names)) == expected, step
        assert sorted(paths_below(logs, names)) == expected, step
        ranges = outermost(names)
        assert sorted(p for n in ranges for p in logs if lies_below(p, n)) == expected, step
    assert made_again > 100


def test_each_name_is_answered_once_and_new_logs_join_its_module() -> None:
    index = LogsByModule()
    logs: dict[str, Any] = {"a": [], "a.x": [], "ab.x": [], "a.b.c": []}
    assert index.below(logs, ["a", "a"]) == ["a", "a.x", "a.b.c"]
    logs["a.more"] = []
    assert index.below(logs, ["a.b", "a"]) == ["a.b.c", "a", "a.x", "a.more"]
    assert index.below(logs, ["a.b.c.d", "ab.x.y"]) == []
    assert outermost(["a.b", "a", "a.b", "ab.c", "a.b.c"]) == ["a", "ab.c"]
