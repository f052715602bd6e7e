"""What the first hour reads: reports and errors that say exactly what happened.

Counts in the singular when there is one, no doubled full stops, an export that says which of
its entries are messages, store hints that point at a directory one can use, one exit code for
a missing extra whatever the command, and an LLM error that names every way to configure one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from missing_extras import SERVER_EXTRA, run_without
from ports import closed_port
from praisonsession import InvalidValueError, Session, StoreUnavailableError, open_store
from praisonsession.apps.cli import main
from praisonsession.llm import LLMNotConfiguredError, ScriptedChatServer
from praisonsession.recall.knowledge.knowledge_base import KnowledgeAdded


def test_knowledge_added_counts_in_the_singular_and_the_plural() -> None:
    one = KnowledgeAdded(sources=["notes.md"], chunks_added=1, chunks_skipped=0)
    assert repr(one) == "KnowledgeAdded(1 source, 1 chunk added, 0 already known)"
    two = KnowledgeAdded(sources=["a.md", "b.md"], chunks_added=3, chunks_skipped=1)
    assert repr(two) == "KnowledgeAdded(2 sources, 3 chunks added, 1 already known)"
    assert "Knowledge added: 1 chunk new, 0 already known" in one._repr_html_()


def test_an_unreachable_redis_says_connection_refused_with_one_full_stop() -> None:
    with closed_port() as port, pytest.raises(StoreUnavailableError) as caught:
        Session("s", store=f"redis://127.0.0.1:{port}/0").set_state("a", 1)
    message = str(caught.value)
    assert "Connection refused. Check that redis-server is running" in message
    assert ".." not in message


@pytest.mark.parametrize("scheme", ["json", "sqlite"])
def test_a_file_store_url_without_a_path_suggests_one_that_can_be_written(scheme: str) -> None:
    example = "sessions" if scheme == "json" else "sessions.db"
    with pytest.raises(InvalidValueError) as caught:
        open_store(f"{scheme}://")
    assert str(caught.value) == (
        f"Store URL '{scheme}://' names no path; e.g. {scheme}://{example} (in the current "
        f"directory) or {scheme}:///home/me/{example} (an absolute path)."
    )


def test_export_and_import_say_which_entries_are_messages_and_which_usage_records(
    tmp_path: Path,
) -> None:
    store = f"sqlite://{tmp_path}/s.db"
    with ScriptedChatServer(lambda request: "fine") as server:
        agent = Session("chat_1", "ada", store=store).Agent(
            "Tutor", memory=False, llm={"model": "stand-in", "base_url": server.url}
        )
        for text in ("Hi", "How are you?", "Bye"):
            agent.chat(text)
    runner = CliRunner(catch_exceptions=False)
    archive = str(tmp_path / "chat_1.jsonl")
    exported = runner.invoke(main, ["export", "chat_1", archive, "--user", "ada", "--store", store])
    assert exported.exit_code == 0, exported.output
    assert exported.stdout.strip() == (
        "Exported session 'chat_1' of user 'ada': 9 log entries (6 messages, 3 usage records), "
        f"0 snapshots, 0 long-term memories -> {archive}"
    )
    as_json = runner.invoke(
        main, ["export", "chat_1", archive + "2", "--user", "ada", "--store", store, "--json"]
    )
    report = json.loads(as_json.stdout)
    assert report["messages"] == 9
    assert report["log_entries"] == {
        "messages": 6,
        "usage_records": 3,
        "summary_records": 0,
        "vector_records": 0,
    }
    imported = runner.invoke(
        main, ["import", archive, "--session-id", "copy", "--store", f"sqlite://{tmp_path}/c.db"]
    )
    assert imported.stdout.strip().endswith(
        ": 9 log entries (6 messages, 3 usage records), 0 snapshots."
    )


# Every command that finds an extra missing exits 3, whichever extra (docs/pages/cli.md).
MISSING_EXTRA_COMMANDS = {
    "serve": (SERVER_EXTRA, ["serve", "--store", "sqlite://s.db", "--agent", "x:y"]),
    "ui": (SERVER_EXTRA, ["ui", "--store", "sqlite://s.db"]),
    "redis store": (("redis",), ["list", "--store", "redis://127.0.0.1:6379/0"]),
    "postgres store": (("psycopg", "psycopg_pool"), ["list", "--store", "postgresql://a@h/db"]),
}


@pytest.mark.parametrize("case", sorted(MISSING_EXTRA_COMMANDS))
def test_a_missing_extra_exits_3_whatever_the_command(case: str, tmp_path: Path) -> None:
    blocked, args = MISSING_EXTRA_COMMANDS[case]
    done = run_without(
        blocked, f"from praisonsession.apps.cli import main\nmain({args!r})\n", cwd=tmp_path
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1
    assert 'pip install ".[' in done.stderr and "Traceback" not in done.stderr


def test_no_llm_configured_names_the_model_setting_and_the_offline_stand_in() -> None:
    message = str(LLMNotConfiguredError("Tutor"))
    assert "PRAISONSESSION_LLM_MODEL (default gpt-4o-mini)" in message
    assert "PRAISONSESSION_LLM_BASE_URL" in message and "PRAISONSESSION_LLM_API_KEY" in message
    assert message.endswith(
        "To try agents offline with no model and no key, start the local stand-in "
        "praisonsession.llm.ScriptedChatServer and pass llm={'model': 'stand-in', "
        "'base_url': server.url} (docs/pages/agents.md)."
    )


def test_an_agent_with_no_llm_anywhere_raises_it_at_the_first_chat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PRAISONSESSION_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("PRAISONSESSION_LLM_API_KEY", raising=False)
    agent = Session("s", store="memory://").Agent("Tutor", memory=False)
    with pytest.raises(LLMNotConfiguredError, match="PRAISONSESSION_LLM_MODEL"):
        agent.chat("hi")
