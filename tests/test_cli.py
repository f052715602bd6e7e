"""The ``praisonsession`` command line, as an operator or a script uses it.

Most tests drive the real command group (``praisonsession.apps.cli.main``) in this process with
Click's ``CliRunner``, against real stores: SQLite files, JSON directories and a Redis server.
A few run the installed ``praisonsession`` script and ``python -m praisonsession`` to check
what only a real process shows: exit codes, one-line errors, a store that is down, Ctrl-C.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from backends import postgres_store_url, redis_store_url
from ports import closed_port
from praisonsession import Session
from praisonsession.apps.cli import main

LOG = "agent.memory"
COMMANDS = [
    "list",
    "show",
    "export",
    "import",
    "fork",
    "delete",
    "purge",
    "erase-user",
    "snapshots",
    "snapshot",
    "restore",
    "serve",
    "ui",
]
SCRIPT = Path(sys.executable).with_name("praisonsession")


def cli(*args: str, input: str | bytes | None = None) -> Result:
    """Run the command line in this process, the way the console script does."""
    return CliRunner(catch_exceptions=False).invoke(main, list(args), input=input)


def cli_json(*args: str, input: str | None = None) -> Any:
    """Run a command with --json: it succeeds and prints exactly one JSON document."""
    result = cli(*args, "--json", input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def say(n: int) -> dict[str, str]:
    return {"role": "user" if n % 2 == 0 else "assistant", "content": f"message {n}"}


def seed(
    store: str, session_id: str = "chat_1", user_id: str = "alice", ttl: float | None = None
) -> None:
    """A session as an application leaves it: state, eight messages in one log."""
    with Session(session_id, user_id, store=store, session_ttl=ttl) as session:
        session.save_state({"score": 15, "name": "Ada"})
        session.append_messages(LOG, [say(n) for n in range(8)])


def url_of(kind: str, request: pytest.FixtureRequest, root: Path) -> str:
    if kind == "redis":
        request.getfixturevalue("redis_url")
        return redis_store_url(root / "redis")
    if kind == "postgres":
        request.getfixturevalue("postgres_url")
        return postgres_store_url(root / "postgres")
    return {"sqlite": f"sqlite://{root}/sessions.db", "json": f"json://{root}/json-store"}[kind]


@pytest.fixture(params=["sqlite", "json", "redis", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL of each persistent backend in turn."""
    return url_of(request.param, request, tmp_path)


@pytest.fixture
def sqlite(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path}/sessions.db"


def run_script(*args: str, cwd: Path, **options: Any) -> subprocess.CompletedProcess[str]:
    """The installed console script, in a process of its own."""
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=60, cwd=cwd, **options
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# -- help ------------------------------------------------------------------------------------


def test_help_lists_every_command_and_what_the_exit_codes_mean() -> None:
    result = cli("--help")
    assert result.exit_code == 0
    for command in COMMANDS:
        assert f"\n  {command} " in result.stdout
    assert "Exit codes:" in result.stdout
    for line in ("0    done", "1    the operation failed", "2    usage", "3    unavailable"):
        assert line in result.stdout
    assert "an extra the command needs is not installed" in " ".join(result.stdout.split())
    assert "130  interrupted" in result.stdout


@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in ("serve", "ui")])
def test_every_command_explains_itself_with_an_example(command: str) -> None:
    result = cli(command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout and f"praisonsession {command} " in result.stdout
    assert "--store URL" in result.stdout and "--json" in result.stdout


def test_serve_keeps_its_options() -> None:
    result = cli("serve", "--help")
    assert result.exit_code == 0
    for option in ("--store URL", "--agent", "--token", "--port"):
        assert option in result.stdout


@pytest.mark.parametrize(
    ("agent", "takes"), [("os:getcwd", "()"), ("remote_agents:no_session", "()")]
)
def test_serve_refuses_an_agent_that_is_not_a_factory_of_a_session(agent: str, takes: str) -> None:
    result = cli("serve", "--agent", agent, "--port", "0")  # refused before it listens
    assert result.exit_code == 2
    message = one_line(result.stderr)
    assert f"--agent {agent} cannot be called as" in message and f"it takes {takes}" in message
    assert "def factory(session)" in message and "Uvicorn" not in result.output


def test_serve_off_loopback_without_a_token_puts_no_secret_on_the_command_line() -> None:
    result = cli("serve", "--agent", "remote_agents:assistant", "--host", "0.0.0.0")
    message = one_line(result.stderr)
    assert result.exit_code == 2 and "Refusing to serve on '0.0.0.0' without a token" in message
    assert '--token "' not in message and "export PRAISONSESSION_REMOTE_TOKEN=" in message


def test_ui_keeps_its_options_and_reports_a_bad_store_like_every_command() -> None:
    result = cli("ui", "--help")
    assert result.exit_code == 0 and "praisonsession ui --store" in result.stdout
    for option in ("--store URL", "--token", "--user-token USER=TOKEN", "--port"):
        assert option in result.stdout
    result = cli("ui", "--store", "bogus://x")
    assert result.exit_code == 2 and "Unknown store scheme 'bogus'" in one_line(result.stderr)
    result = cli("ui", "--user-token", "alice")
    assert result.exit_code == 2 and "is not USER=TOKEN" in result.stderr


def test_serve_and_ui_declare_host_port_and_token_alike() -> None:
    from praisonsession.apps.cli.serve import serve
    from praisonsession.apps.cli.ui import ui

    def declared(command: click.Command) -> dict[str, tuple]:
        return {
            p.name: (p.opts, p.help, p.envvar, repr(p.type), p.show_default, p.default)
            for p in command.params
            if isinstance(p, click.Option) and p.name in ("host", "port", "token")
        }

    served, browsed = declared(serve), declared(ui)
    assert set(served) == set(browsed) == {"host", "port", "token"}
    assert served["port"][-1] == 8000 and browsed["port"][-1] == 8080  # one default each
    assert served["port"][:-1] == browsed["port"][:-1]
    assert served["host"] == browsed["host"] and served["token"] == browsed["token"]
    assert served["token"][2] == "PRAISONSESSION_REMOTE_TOKEN"
    for command in ("serve", "ui"):
        help_text = " ".join(cli(command, "--help").stdout.split())
        assert "The admin token: it reaches every user's sessions." in help_text


def test_serve_reports_a_bad_store_like_every_command() -> None:
    result = cli("serve", "--store", "bogus://x", "--agent", "remote_agents:assistant")
    assert result.exit_code == 2 and "Unknown store scheme 'bogus'" in one_line(result.stderr)


# -- list ------------------------------------------------------------------------------------


def test_list_shows_every_users_sessions_by_user_then_id(store: str) -> None:
    seed(store, "chat_1", "bob")
    seed(store, "chat_1", "alice")
    with Session("chat_1", "alice", store=store) as session:
        session.fork("chat_2")

    listed = cli_json("list", "--store", store)["sessions"]
    assert [(s["user_id"], s["session_id"]) for s in listed] == [
        ("alice", "chat_1"),
        ("alice", "chat_2"),
        ("bob", "chat_1"),
    ]
    assert listed[1]["metadata"]["parent"] == {"session_id": "chat_1", "user_id": "alice"}
    bobs = cli_json("list", "--store", store, "--user", "bob")["sessions"]
    assert [s["user_id"] for s in bobs] == ["bob"]
    assert len(cli_json("list", "--store", store, "--limit", "2")["sessions"]) == 2


def test_list_prints_an_aligned_table_for_people(sqlite: str) -> None:
    seed(sqlite, "a-rather-long-session-id", "alice")
    seed(sqlite, "b", "bo", ttl=3600)
    lines = cli("list", "--store", sqlite).stdout.splitlines()
    assert (
        lines[0] == "USER   SESSION                   CREATED  UPDATED  EXPIRES    VERSION  PARENT"
    )
    column = lines[0].index("SESSION")
    assert [line[column:].split()[0] for line in lines[1:]] == ["a-rather-long-session-id", "b"]
    assert "never" in lines[1] and "in 59 min" in lines[2]


def test_list_of_an_empty_store_says_so(sqlite: str) -> None:
    seed(sqlite)
    assert cli("delete", "chat_1", "--user", "alice", "--yes", "--store", sqlite).exit_code == 0
    result = cli("list", "--store", sqlite)
    assert result.exit_code == 0 and result.stdout.startswith("No sessions in sqlite://")
    assert cli_json("list", "--store", sqlite)["sessions"] == []


@pytest.mark.parametrize("kind", ["sqlite", "json"])
def test_a_file_store_that_is_not_there_is_a_usage_error_and_is_not_created(
    kind: str, tmp_path: Path
) -> None:
    """A misspelt path must not list nothing and leave an empty database behind."""
    missing = tmp_path / "typo"
    for command in (["list"], ["show", "chat_1"], ["purge", "--yes"]):
        result = cli(*command, "--store", f"{kind}://{missing}")
        assert result.exit_code == 2, result.output
        assert f"There is no store at {missing}" in result.stderr
    assert not missing.exists()


def test_without_store_the_setting_then_the_embedded_default_is_used(
    tmp_path: Path, sqlite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Session("local", "alice"):  # Session()'s default store: SQLite under ./.praisonsession
        pass
    assert [s["session_id"] for s in cli_json("list")["sessions"]] == ["local"]
    seed(sqlite, "configured")
    monkeypatch.setenv("PRAISONSESSION_STORE_URL", sqlite)
    assert [s["session_id"] for s in cli_json("list")["sessions"]] == ["configured"]


# -- show ------------------------------------------------------------------------------------


def test_show_gives_a_sessions_metadata_state_logs_and_snapshots(store: str) -> None:
    seed(store, ttl=3600)
    with Session("chat_1", "alice", store=store) as session:
        session.snapshot("before the refund")
        session.fork("chat_1b")

    shown = cli_json("show", "chat_1", "--user", "alice", "--messages", "3", "--store", store)
    assert shown["session"]["session_id"] == "chat_1" and shown["session"]["ttl"] == 3600
    assert shown["state"] == {"score": 15, "name": "Ada"}
    assert shown["logs"] == [{"log": LOG, "messages": 8, "last": [say(5), say(6), say(7)]}]
    assert shown["children"] == ["chat_1b"]
    assert [(s["label"], s["messages"]) for s in shown["snapshots"]] == [("before the refund", 8)]

    text = cli("show", "chat_1b", "--user", "alice", "--messages", "2", "--store", store).stdout
    assert "parent    chat_1\n" in text
    assert "Last 2 of 8 messages in agent.memory" in text
    assert "  8  assistant  message 7" in text  # messages are numbered from 1
    assert "score  15" in text


def test_show_prints_any_stored_text_as_valid_json(sqlite: str) -> None:
    with Session("odd", store=sqlite) as session:
        session.save_state({"text": "ünï \ud800 lone surrogate", "nested": {"a": [1, 2.5]}})
    shown = cli_json("show", "odd", "--store", sqlite)
    assert shown["state"] == {"text": "ünï \ud800 lone surrogate", "nested": {"a": [1, 2.5]}}
    assert "\\ud800" in cli("show", "odd", "--store", sqlite).stdout


# -- what goes wrong ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["show", "nope"],
        ["export", "nope", "out.jsonl"],
        ["fork", "nope", "new"],
        ["delete", "nope", "--yes"],
    ],
    ids=lambda args: args[0],
)
def test_an_unknown_session_fails_with_exit_1_naming_it(args: list[str], sqlite: str) -> None:
    seed(sqlite)
    result = cli(*args, "--user", "alice", "--store", sqlite, "--json")
    assert result.exit_code == 1 and result.stdout == ""
    message = one_line(result.stderr)
    assert "Session 'nope' of user 'alice' does not exist" in message
    assert "praisonsession list --user alice" in message
    assert not Path("out.jsonl").exists()


@pytest.mark.parametrize(
    "args",
    [["show", "chat_1"], ["delete", "chat_1", "--yes"], ["restore", "chat_1", "1-ab", "--yes"]],
    ids=lambda args: args[0],
)
def test_a_session_of_other_users_only_is_named_with_its_users(args: list[str], store: str) -> None:
    for user in ("bob", "alice"):
        seed(store, "chat_1", user)
    seed(store, "chat_10", "carol")  # a longer id with the same start is another session
    result = cli(*args, "--store", store)  # no --user: default_user's, who has none
    assert result.exit_code == 1 and result.stdout == ""
    message = one_line(result.stderr)
    assert message.endswith(
        "exists for users 'alice', 'bob' (sessions are scoped by user; without --user the "
        "user is 'default_user'): pass --user, e.g. --user alice"
    ), message
    assert "of user 'default_user'" in message and "carol" not in message
    assert cli_json("list", "--store", store)["sessions"][0]["user_id"] == "alice"  # untouched


def test_a_session_of_one_other_user_is_named_in_the_singular(sqlite: str) -> None:
    seed(sqlite, "counter", "ada")
    result = cli("show", "counter", "--store", sqlite)
    assert one_line(result.stderr) == (
        f"Error: Session 'counter' of user 'default_user' does not exist. It is not in "
        f"{sqlite} (or it has expired), but a session "
        "'counter' exists for user 'ada' (sessions are scoped by user; without --user the user "
        "is 'default_user'): pass --user, e.g. --user ada"
    )


@pytest.mark.parametrize(
    "store_url",
    ["bogus://x", "sqlite://", "json:///tmp/x?durability=never", "redis://h:notaport/0"],
)
def test_a_bad_store_url_is_a_usage_error(store_url: str) -> None:
    result = cli("list", "--store", store_url)
    assert result.exit_code == 2 and result.stdout == ""
    assert one_line(result.stderr).startswith("Error: ")


def test_a_bad_id_is_a_usage_error(sqlite: str) -> None:
    seed(sqlite)
    result = cli("show", "tab\there", "--store", sqlite)
    assert result.exit_code == 2
    assert "control character" in one_line(result.stderr)


def test_a_bad_argument_is_a_usage_error(sqlite: str) -> None:
    seed(sqlite)
    assert cli("fork", "chat_1", "--at", "agent.memory", "--store", sqlite).exit_code == 2
    result = cli("fork", "chat_1", "--user", "alice", "--at", "agent.history:2", "--store", sqlite)
    assert result.exit_code == 2
    assert "no message log 'agent.history' to cut; its logs: agent.memory" in result.stderr
    assert cli("export", "chat_1", "-", "--json", "--store", sqlite).exit_code == 2
    assert cli("export", "chat_1", "no/such/dir/x.jsonl", "--store", sqlite).exit_code == 2


# -- export and import -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"), [("sqlite", "json"), ("json", "redis"), ("redis", "sqlite")]
)
def test_an_exported_session_imports_into_another_backend_unchanged(
    source: str, target: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    origin, destination = url_of(source, request, tmp_path), url_of(target, request, tmp_path)
    seed(origin)
    with Session("chat_1", "alice", store=origin) as session:
        session.snapshot("kept")
    archive = tmp_path / "chat_1.jsonl"

    exported = cli_json("export", "chat_1", str(archive), "--user", "alice", "--store", origin)
    assert exported["messages"] == 8 and exported["snapshots"] == 1 and archive.is_file()
    imported = cli_json("import", str(archive), "--store", destination)
    assert imported["session"]["session_id"] == "chat_1"
    assert imported["session"]["user_id"] == "alice"
    assert imported["messages"] == 8 and imported["snapshots"] == 1

    with Session("chat_1", "alice", store=destination) as copy:
        assert copy.restore_state() == {"score": 15, "name": "Ada"}
        assert copy.read_messages(LOG) == [say(n) for n in range(8)]
        assert [s.label for s in copy.snapshots()] == ["kept"]


def test_export_to_stdout_pipes_into_import_from_stdin(sqlite: str, tmp_path: Path) -> None:
    seed(sqlite)
    exported = cli("export", "chat_1", "-", "--user", "alice", "--store", sqlite)
    assert exported.exit_code == 0
    assert json.loads(exported.stdout_bytes.splitlines()[0])["archive"]["version"] == 1
    assert "Exported session 'chat_1' of user 'alice': 8 messages" in exported.stderr

    other = f"json://{tmp_path}/other"
    result = cli(
        "import", "-", "--session-id", "copy", "--user", "carol", "--store", other,
        input=exported.stdout_bytes,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Imported session 'copy' of user 'carol'" in result.stdout
    assert cli_json("show", "copy", "--user", "carol", "--store", other)["logs"][0]["messages"] == 8


def test_a_damaged_archive_imports_nothing(sqlite: str, tmp_path: Path) -> None:
    seed(sqlite)
    archive = tmp_path / "chat_1.jsonl"
    cli("export", "chat_1", str(archive), "--user", "alice", "--store", sqlite)
    archive.write_text(archive.read_text().replace("message 3", "message 9"))
    other = f"sqlite://{tmp_path}/other.db"
    result = cli("import", str(archive), "--store", other)
    assert result.exit_code == 1
    message = one_line(result.stderr)
    assert f"The archive {archive} is damaged (its checksum does not match" in message
    assert "Nothing was imported" in message and "backup" not in message
    assert not (tmp_path / "other.db").exists()  # checked before anything was written


def test_an_archive_of_brackets_nested_100k_deep_is_a_typed_error(
    sqlite: str, tmp_path: Path
) -> None:
    archive = tmp_path / "deep.jsonl"
    archive.write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    result = cli("import", str(archive), "--store", f"sqlite://{tmp_path}/other.db")
    assert result.exit_code == 1
    assert "line 1 is not JSON" in one_line(result.stderr)
    assert "Traceback" not in result.stderr


def test_importing_onto_a_session_that_exists_is_refused(sqlite: str, tmp_path: Path) -> None:
    seed(sqlite)
    archive = tmp_path / "chat_1.jsonl"
    cli("export", "chat_1", str(archive), "--user", "alice", "--store", sqlite)
    result = cli("import", str(archive), "--store", sqlite)
    assert result.exit_code == 1 and "already exists" in one_line(result.stderr)
    assert "--session-id ID" in one_line(result.stderr)
    assert "_id" not in one_line(result.stderr).replace("--session-id", "")  # no Python names


# -- fork, snapshots, restore ------------------------------------------------------------------


def test_fork_at_a_message_keeps_that_many_and_records_its_parent(sqlite: str) -> None:
    seed(sqlite)
    forked = cli_json(
        "fork", "chat_1", "retry", "--user", "alice", "--at", f"{LOG}:3", "--store", sqlite
    )
    assert forked["session"]["session_id"] == "retry"
    assert forked["session"]["metadata"]["parent"] == {"session_id": "chat_1", "user_id": "alice"}
    child = cli_json("show", "retry", "--user", "alice", "--store", sqlite, "--messages", "8")
    assert child["logs"][0]["last"] == [say(0), say(1), say(2)]
    assert child["state"] == {"score": 15, "name": "Ada"}
    parent = cli_json("show", "chat_1", "--user", "alice", "--store", sqlite)
    assert parent["logs"][0]["messages"] == 8 and parent["children"] == ["retry"]


def test_fork_errors_speak_in_the_commands_own_words(sqlite: str) -> None:
    seed(sqlite)
    cli("fork", "chat_1", "retry", "--user", "alice", "--store", sqlite)
    taken = cli("fork", "chat_1", "retry", "--user", "alice", "--store", sqlite)
    assert taken.exit_code == 1
    assert one_line(taken.stderr) == (
        "Error: Session 'retry' of user 'alice' already exists: name another NEW_ID (or none, "
        "for a fresh id), or delete that session first (praisonsession delete retry --user "
        "alice)."
    )
    no_log = cli("fork", "chat_1", "--user", "alice", "--at", "nolog:2", "--store", sqlite)
    assert no_log.exit_code == 2
    assert one_line(no_log.stderr) == (
        "Error: Session 'chat_1' has no message log 'nolog' to cut; its logs: agent.memory."
    )


def test_fork_at_a_readable_agent_log_name(sqlite: str) -> None:
    with Session("chat_1", "alice", store=sqlite) as session:
        session.append_messages("agent:Assistant.history", [say(n) for n in range(4)])
    shown = cli("show", "chat_1", "--user", "alice", "--store", sqlite)
    assert "agent:Assistant.history" in shown.stdout
    forked = cli_json(
        "fork", "chat_1", "--user", "alice", "--at", "agent:Assistant.history:2", "--store", sqlite
    )
    with Session(forked["session"]["session_id"], "alice", store=sqlite) as child:
        assert child.list_logs() == {"agent:Assistant.history": 2}


def test_fork_into_another_users_sessions_under_a_fresh_id(sqlite: str) -> None:
    seed(sqlite, user_id="guest")
    result = cli("fork", "chat_1", "--user", "guest", "--to-user", "ada", "--store", sqlite)
    assert result.exit_code == 0 and "of user 'ada'" in result.stdout
    (child,) = cli_json("list", "--user", "ada", "--store", sqlite)["sessions"]
    assert len(child["session_id"]) == 32  # a fresh full-entropy id
    assert child["metadata"]["parent"] == {"session_id": "chat_1", "user_id": "guest"}


def test_a_deleted_session_comes_back_from_its_snapshot(sqlite: str) -> None:
    seed(sqlite)
    taken = cli_json("snapshot", "chat_1", "--user", "alice", "--label", "safe", "--store", sqlite)
    assert taken["label"] == "safe" and taken["messages"] == 8

    deleted = cli("delete", "chat_1", "--user", "alice", "--yes", "--store", sqlite)
    assert "Its snapshots stay (1)" in deleted.stdout
    (listed,) = cli_json("snapshots", "chat_1", "--user", "alice", "--store", sqlite)["snapshots"]
    assert listed["snapshot_id"] == taken["snapshot_id"]
    restored = cli_json(
        "restore", "chat_1", taken["snapshot_id"], "--user", "alice", "--yes", "--store", sqlite
    )
    assert restored["restored_from"] == taken["snapshot_id"]
    shown = cli_json("show", "chat_1", "--user", "alice", "--store", sqlite)
    assert shown["state"] == {"score": 15, "name": "Ada"} and shown["logs"][0]["messages"] == 8


def test_restoring_a_snapshot_that_is_not_there_fails(sqlite: str) -> None:
    seed(sqlite)
    result = cli("restore", "chat_1", "123-abc", "--user", "alice", "--yes", "--store", sqlite)
    assert result.exit_code == 1
    assert one_line(result.stderr) == (
        "Error: Session 'chat_1' of user 'alice' has no snapshot '123-abc'; list its "
        "snapshots with: praisonsession snapshots chat_1 --user alice"
    )


# -- confirmations -----------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["n\n", "\n", ""], ids=["no", "enter", "no-stdin"])
def test_delete_asks_first_and_anything_but_yes_aborts(answer: str, sqlite: str) -> None:
    seed(sqlite)
    result = cli("delete", "chat_1", "--user", "alice", "--store", sqlite, "--json", input=answer)
    assert result.exit_code == 1 and result.stdout == ""
    assert "Delete session 'chat_1' of user 'alice' (8 messages)" in result.stderr
    assert "Aborted" in result.stderr
    assert ("--yes" in result.stderr) == (answer == "")  # no answer at all: no terminal
    assert cli_json("show", "chat_1", "--user", "alice", "--store", sqlite)["state"]["score"] == 15


@pytest.mark.parametrize(
    "command",
    [
        ["delete", "chat_1", "--user", "alice"],
        ["purge"],
        ["erase-user", "alice"],
        ["restore", "chat_1", "123-abc", "--user", "alice"],
    ],
    ids=["delete", "purge", "erase-user", "restore"],
)
def test_without_a_terminal_a_question_says_to_pass_yes(command: list[str], tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path}/s.db"
    seed(store)
    done = run_script(*command, "--store", store, cwd=tmp_path, input="")
    assert done.returncode == 1
    assert "no terminal to ask on" in done.stderr and "Pass --yes" in done.stderr
    assert cli_json("show", "chat_1", "--user", "alice", "--store", store)["state"]["score"] == 15


def test_delete_goes_ahead_on_yes_or_with_dash_dash_yes(sqlite: str) -> None:
    seed(sqlite, "one")
    seed(sqlite, "two")
    asked = cli_json("delete", "one", "--user", "alice", "--store", sqlite, input="y\n")
    assert asked == {"deleted": {"session_id": "one", "user_id": "alice"}, "snapshots": 0}
    told = cli("delete", "two", "--user", "alice", "--store", sqlite, "--yes")
    assert told.exit_code == 0 and told.stderr == ""  # no question asked
    assert cli_json("list", "--store", sqlite)["sessions"] == []


def test_purge_removes_expired_sessions_once_confirmed(store: str, frozen_clock) -> None:
    seed(store, "short", ttl=10)
    seed(store, "long")
    frozen_clock.advance(11)
    assert cli("purge", "--store", store, input="n\n").exit_code == 1
    assert cli_json("purge", "--store", store, input="y\n") == {"purged": 1}
    assert cli_json("purge", "--store", store, "--yes") == {"purged": 0}
    assert [s["session_id"] for s in cli_json("list", "--store", store)["sessions"]] == ["long"]


def test_erase_user_removes_one_of_two_users_sharing_session_ids(store: str) -> None:
    for user in ("alice", "bob"):
        seed(store, "chat_1", user)
        seed(store, "chat_2", user)
    with Session("chat_1", "alice", store=store) as session:
        session.snapshot()

    refused = cli("erase-user", "alice", "--store", store, input="n\n")
    assert refused.exit_code == 1 and "Erase user 'alice'" in refused.stderr
    assert "2 sessions" in refused.stderr

    report = cli_json("erase-user", "alice", "--store", store, "--yes")
    assert report["user_id"] == "alice" and report["sessions"] == 2 and report["snapshots"] == 1
    assert sorted(report["session_ids"]) == ["chat_1", "chat_2"]
    assert report["leftovers"] == []  # nothing stays beneath the API on any of them
    listed = cli_json("list", "--store", store)["sessions"]
    assert [(s["user_id"], s["session_id"]) for s in listed] == [
        ("bob", "chat_1"),
        ("bob", "chat_2"),
    ]
    assert cli_json("show", "chat_1", "--user", "bob", "--store", store)["state"]["score"] == 15


# -- real processes ----------------------------------------------------------------------------


def test_the_script_and_python_dash_m_are_the_same_command_line(tmp_path: Path) -> None:
    assert SCRIPT.is_file()
    for command in ([str(SCRIPT)], [sys.executable, "-m", "praisonsession"]):
        done = subprocess.run(
            [*command, "--help"], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        assert done.returncode == 0 and "Exit codes:" in done.stdout and "erase-user" in done.stdout


@pytest.mark.slow
def test_every_command_in_a_real_process(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path}/sessions.db"
    seed(store)

    def run(*args: str, input: str | None = None) -> Any:
        done = run_script(*args, "--store", store, "--json", cwd=tmp_path, input=input)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert run("list")["sessions"][0]["session_id"] == "chat_1"
    assert run("show", "chat_1", "--user", "alice")["logs"][0]["messages"] == 8
    taken = run("snapshot", "chat_1", "--user", "alice")
    assert run("snapshots", "chat_1", "--user", "alice")["snapshots"] == [taken]
    forked = run("fork", "chat_1", "b", "--user", "alice", "--at", f"{LOG}:2")["session"]
    assert forked["metadata"]["parent"] == {"session_id": "chat_1", "user_id": "alice"}
    archive = str(tmp_path / "b.jsonl")
    assert run("export", "b", archive, "--user", "alice", "--progress")["messages"] == 2
    assert run("import", archive, "--session-id", "c", "--user", "bob")["messages"] == 2
    restored = run("restore", "chat_1", taken["snapshot_id"], "--user", "alice", input="y\n")
    assert restored["session"]["session_id"] == "chat_1"
    assert run("delete", "b", "--user", "alice", "--yes")["deleted"]["session_id"] == "b"
    assert run("purge", "--yes") == {"purged": 0}
    assert run("erase-user", "bob", "--yes")["session_ids"] == ["c"]
    assert [s["session_id"] for s in run("list")["sessions"]] == ["chat_1"]


@pytest.mark.parametrize(
    "command", [[str(SCRIPT)], [sys.executable, "-m", "praisonsession"]], ids=["script", "-m"]
)
def test_a_bad_store_url_is_one_line_and_exit_2(command: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [*command, "list", "--store", "bogus://x"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert one_line(done.stderr) == (
        "Error: Unknown store scheme 'bogus' in 'bogus://x'; use one of: memory://, "
        "json:///path/to/dir, sqlite:///path/to/file.db, redis://host:6379/0, "
        "postgresql://user@host:5432/db."
    )


def test_a_store_that_is_down_is_exit_3_after_bounded_retries_and_keeps_its_password(
    tmp_path: Path,
) -> None:
    with closed_port() as port:  # nothing listens there
        down = f"redis://:hunter2@127.0.0.1:{port}/0"
        done = run_script("show", "chat_1", "--store", down, "--json", cwd=tmp_path)
    assert done.returncode == 3 and done.stdout == ""
    message = one_line(done.stderr)
    made, took = re.search(r"(\d+) attempt\(s\) in ([\d.]+) s", message).groups()
    # the store's default retries: 6 attempts (waits of 0.05 to 0.8 s), fewer only when the
    # next wait would end past retry_max_delay=2 s by the store's own count (to 0.1 s)
    assert int(made) == 6 or float(took) + 0.05 * 2 ** (int(made) - 1) > 1.95, message
    assert "could not be reached" in message and "Traceback" not in done.stderr
    assert "write" not in message and "nothing reached the server" in message
    assert "hunter2" not in message and "redis://:***@127.0.0.1" in message


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_exits_130(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [str(SCRIPT), "import", "-", "--store", f"sqlite://{tmp_path}/s.db"],
        # a suite run as a background job (`pytest &`) hands its children SIGINT ignored,
        # and Python then never raises KeyboardInterrupt: give the child Ctrl-C back
        preexec_fn=_default_sigint,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        # the child's copy of stdin (a temporary file, made before its message) goes here
        env={**os.environ, "TMPDIR": str(tmp_path)},
        text=True,
    )
    try:
        assert process.stderr.readline().startswith("Reading the archive from stdin")
        os.kill(process.pid, signal.SIGINT)  # while it waits for the archive
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130
    assert "Interrupted." in stderr and "Traceback" not in stderr
