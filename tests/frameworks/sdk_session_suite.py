"""The OpenAI Agents SDK's own session tests, run on :class:`PraisonSession`.

The SDK's tests build ``SQLiteSession(session_id, db_path)`` themselves; this pytest plugin
puts a ``PraisonSession`` over ``sqlite:///<db_path>`` behind that name before they are
collected, so every Runner variant and every direct call they make reaches our adapter. The
tests that reach into ``SQLiteSession``'s own machinery (its connections, locks, tables and
private helpers) are left out by name: they test that class, not the protocol.

Run against a checkout of openai-agents-python at the installed version::

    .venv-frameworks/bin/python tests/frameworks/sdk_session_suite.py /path/to/openai-agents-python

It prints pytest's summary and exits with pytest's status.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from own_suites import keep_only, main

#: The SDK's test files of the session protocol.
FILES = ["tests/memory/test_session.py", "tests/memory/test_session_limit.py"]

#: The SDK's tests of SQLiteSession's internals: its worker connections, file locks, SQL
#: tables and rollback of a transaction, corrupt rows written with raw SQL, and the private
#: ``_await_mutation``; none of them calls the session protocol only.
INTERNALS = [
    "test_await_mutation_cancellation_hides_later_failure_without_loop_error",
    "test_sqlite_session_close_closes_worker_thread_connections",
    "test_sqlite_session_pop_item_skips_corrupt_most_recent",
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows",
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows",
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows",
    "test_sqlite_session_file_lock_is_shared_across_instances",
    "test_sqlite_session_failed_add_items_releases_write_lock",
    "test_sqlite_session_failed_clear_session_rolls_back",
    "test_sqlite_session_failed_pop_item_releases_write_lock",
    "test_sqlite_session_rollback_failure_evicts_connection",
    "test_sqlite_session_close_retries_quarantined_connection",
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome",
]


def _install() -> None:
    """``agents.SQLiteSession`` becomes a PraisonSession taking SQLiteSession's arguments."""
    import agents
    import agents.memory

    from praisonsession.integrations.openai_agents import PraisonSession

    class SQLiteSessionOnPraison(PraisonSession):
        def __init__(
            self,
            session_id: str,
            db_path: str | Path = ":memory:",
            sessions_table: str = "agent_sessions",
            messages_table: str = "agent_messages",
            session_settings: Any = None,
        ) -> None:
            path = str(db_path)
            store = "memory://" if path == ":memory:" else f"sqlite://{path}"  # as written
            super().__init__(session_id, store=store, session_settings=session_settings)

    agents.SQLiteSession = SQLiteSessionOnPraison  # type: ignore[misc,assignment]
    agents.memory.SQLiteSession = SQLiteSessionOnPraison  # type: ignore[misc,assignment]


def pytest_configure(config: Any) -> None:
    _install()


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    keep_only(config, items, lambda item: item.originalname not in INTERNALS)


if __name__ == "__main__":
    main("sdk_session_suite", FILES, __doc__ or "")
