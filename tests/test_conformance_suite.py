"""The shipped conformance suite works for a backend that is not ours, in a few lines.

A third party's test module (below, as text) defines its own backend and subclasses
``StoreConformance``; pytest runs it in a process of its own, with none of our fixtures. A
correct backend passes every case, its undeclared optional operations fail rather than skip,
and a backend that breaks a promise fails the cases that name that promise.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

import pytest

from praisonsession.stores.testing import StoreConformance

ROOT = Path(__file__).resolve().parent.parent

THIRD_PARTY_TESTS = '''
"""A third party's tests: its own backend, proved by the shipped suite."""

import asyncio
from pathlib import Path
from typing import Any

from praisonsession.stores import StoreBackend
from praisonsession.stores.backends.memory import InMemoryBackend
from praisonsession.stores.testing import StoreConformance


class ForwardingBackend(StoreBackend):
    """Keeps its records in an InMemoryBackend it holds, with only the required operations:
    appends and increments come from the protocol's defaults; it cannot list owners, copy
    records or truncate logs."""

    def __init__(self, **ttl: Any) -> None:
        super().__init__(**ttl)
        self.inner = InMemoryBackend(**ttl)

    async def create_record(self, key, *, ttl, metadata):
        return await self.inner.create_record(key, ttl=ttl, metadata=metadata)

    async def read_record(self, key):
        return await self.inner.read_record(key)

    async def merge_record_metadata(self, key, *, metadata):
        return await self.inner.merge_record_metadata(key, metadata=metadata)

    async def list_records(self, user_id, *, limit, after):
        return await self.inner.list_records(user_id, limit=limit, after=after)

    async def delete_record(self, key):
        return await self.inner.delete_record(key)

    async def touch_record(self, key, *, ttl):
        return await self.inner.touch_record(key, ttl=ttl)

    async def purge_records(self):
        return await self.inner.purge_records()

    async def read_record_state(self, key, *, names, must_exist):
        return await self.inner.read_record_state(key, names=names, must_exist=must_exist)

    async def patch_record_state(
        self, key, *, updates, deletes, replace, expected_version, must_exist
    ):
        return await self.inner.patch_record_state(
            key,
            updates=updates,
            deletes=deletes,
            replace=replace,
            expected_version=expected_version,
            must_exist=must_exist,
        )

    async def write_modules(self, key, *, documents, writes):
        return await self.inner.write_modules(key, documents=documents, writes=writes)

    async def read_modules(self, key, *, names):
        return await self.inner.read_modules(key, names=names)

    async def read_log(self, key, *, path, start, stop):
        return await self.inner.read_log(key, path=path, start=start, stop=stop)


class TestForwarding(StoreConformance):
    supports_owners = False  # no list_record_owners
    supports_copies = False  # no copy_record, read_record_contents
    supports_truncation = False  # no truncate_log
    supports_reopening = False  # its records live in the object

    def make_backend(self, root: Path, **ttl: Any) -> StoreBackend:
        return ForwardingBackend(**ttl)


class TestUndeclared(TestForwarding):
    supports_owners = True  # claimed, yet list_record_owners is not implemented


class LosesIncrements(ForwardingBackend):
    """Reads, waits, then writes: increments racing each other overwrite each other."""

    async def increment_record_value(self, key, *, name, amount, default, must_exist):
        current = await self.inner.increment_record_value(
            key, name=name, amount=0, default=default, must_exist=must_exist
        )
        await asyncio.sleep(0.001)
        await self.inner.patch_record_state(
            key,
            updates={name: current + amount},
            deletes=[],
            replace=False,
            expected_version=None,
            must_exist=must_exist,
        )
        return current + amount


class TestLosesIncrements(TestForwarding):
    def make_backend(self, root: Path, **ttl: Any) -> StoreBackend:
        return LosesIncrements(**ttl)


class NeverExpires(ForwardingBackend):
    """Creates every record without a TTL."""

    async def create_record(self, key, *, ttl, metadata):
        return await self.inner.create_record(key, ttl=None, metadata=metadata)


class TestNeverExpires(TestForwarding):
    def make_backend(self, root: Path, **ttl: Any) -> StoreBackend:
        return NeverExpires(**ttl)
'''

LIST_USERS = {
    "test_list_users_names_each_user_once_and_sorted",
    "test_list_users_leaves_out_snapshots_and_users_whose_sessions_are_all_gone",
    "test_sessions_of_every_user_are_listed_by_an_id_prefix_page_by_page",
}
REOPENING = {"test_a_store_opened_later_sees_what_was_written"}
#: Cases among those named here that need copies too (the example backend has none).
COPIES = {
    "test_list_users_leaves_out_snapshots_and_users_whose_sessions_are_all_gone",
    "test_forking_what_is_not_there_says_so",
}
EXPIRY = {
    "test_an_expired_session_is_gone_for_every_reader",
    "test_writing_to_an_expired_session_starts_it_afresh",
    "test_without_sliding_the_ttl_counts_from_creation",
    "test_default_ttl_applies_to_new_sessions",
    "test_purge_removes_only_expired_sessions",
    "test_forking_what_is_not_there_says_so",
}

Outcomes = dict[str, dict[str, tuple[str, str]]]


def suite_size() -> int:
    """How many cases one subclass runs: each case once per parametrized value."""
    return sum(
        math.prod(
            len(mark.args[1])
            for mark in getattr(getattr(StoreConformance, name), "pytestmark", [])
            if mark.name == "parametrize"
        )
        for name in dir(StoreConformance)
        if name.startswith("test_")
    )


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Outcomes:
    """Runs the third party's module with pytest in a process of its own; by class, each case's
    outcome (passed, skipped, failed or error) and message."""
    folder = tmp_path_factory.mktemp("third-party")
    (folder / "test_my_backend.py").write_text(THIRD_PARTY_TESTS, "utf-8")
    report = folder / "report.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, f"--junitxml={report}", "test_my_backend.py"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert report.exists(), done.stdout + done.stderr
    found: Outcomes = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
                message = child.get("message", "")
        suite = case.get("classname", "").rsplit(".", 1)[-1]
        found.setdefault(suite, {})[case.get("name", "")] = (outcome, message)
    return found


def named(cases: dict[str, tuple[str, str]], outcome: str) -> set[str]:
    """The case names (parameters left out) with that outcome."""
    return {name.split("[")[0] for name, (got, _) in cases.items() if got == outcome}


def test_a_correct_backend_passes_every_case_it_declares(outcomes: Outcomes) -> None:
    """Only the required operations: every case it declares passes, every other is skipped
    naming the capability it left out."""
    cases = outcomes["TestForwarding"]
    assert len(cases) == suite_size() >= 90
    skipped = named(cases, "skipped")
    assert skipped >= LIST_USERS | REOPENING
    declared = ("supports_owners", "supports_reopening", "supports_copies", "supports_truncation")
    for outcome, message in cases.values():
        if outcome == "skipped":
            assert message.startswith(tuple(f"TestForwarding.{d} is False" for d in declared))
    counts = Counter(outcome for outcome, _ in cases.values())
    assert counts["passed"] >= 60 and set(counts) == {"passed", "skipped"}


def test_a_left_out_capability_is_skipped_naming_its_attribute(outcomes: Outcomes) -> None:
    cases = outcomes["TestForwarding"]
    for name in LIST_USERS:
        assert cases[name][1].startswith("TestForwarding.supports_owners is False")
    (reopening,) = REOPENING
    assert cases[reopening][1].startswith("TestForwarding.supports_reopening is False")


def test_an_undeclared_missing_operation_fails_instead_of_skipping(outcomes: Outcomes) -> None:
    cases = outcomes["TestUndeclared"]
    owners_alone = LIST_USERS - COPIES  # the others need copies as well, left out here
    assert named(cases, "failed") == owners_alone
    assert all("UnsupportedOperationError" in cases[name][1] for name in owners_alone)
    assert named(cases, "skipped") >= REOPENING and not named(cases, "skipped") & owners_alone


def test_lost_increments_fail_the_concurrency_case(outcomes: Outcomes) -> None:
    cases = outcomes["TestLosesIncrements"]
    assert named(cases, "failed") == {"test_increments_from_many_threads_are_all_counted"}
    assert "test_increment_adds_and_returns_the_new_value" in named(cases, "passed")


def test_records_that_never_expire_fail_the_expiry_cases(outcomes: Outcomes) -> None:
    cases = outcomes["TestNeverExpires"]
    assert named(cases, "failed") == EXPIRY - COPIES
    assert "test_state_patch_replace_delete_and_nested_values" in named(cases, "passed")


def test_importing_the_package_imports_neither_pytest_nor_the_suite() -> None:
    code = (
        "import sys, praisonsession, praisonsession.stores\n"
        "praisonsession.stores.SqliteSession\n"
        "assert 'pytest' not in sys.modules, 'pytest imported'\n"
        "assert 'praisonsession.stores.testing' not in sys.modules, 'the suite imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
