"""Per-user access and slow clients, on the real server: ``python -m praisonsession serve``
with an admin token and a secret file, on 127.0.0.1, and real sockets.

- A user token (``praisonsession token``) reaches only its own user's sessions: another
  user's chat, state or listing is refused with 403 and logged without the token; the admin
  token reaches everyone; a forged, damaged or expired token gets 401.
- Slow clients cannot starve the server: 1,100 connections that send a request line and one
  header and then wait do not make new requests fail (the oldest are closed to make room),
  and a request whose headers or body stop coming gets 408 at its timeout.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from held import SAFETY
from llm_server import ScriptedChatServer
from praisonsession import InvalidValueError, RemoteAuthError, Session
from praisonsession.apps.server.access_tokens import (
    SECRET_ENV,
    issue_token,
    load_secret,
    user_of_token,
)
from remote_fixtures import (  # noqa: F401 - fixtures
    HISTORY,
    TOKEN,
    child_env,
    llm,
    llm_connections_end_with_the_test,
    post,
)
from remote_server import SessionServer

SECRET = "s3cret-for-tests-" + "x" * 40
HEADER_TIMEOUT = 3.0
BODY_TIMEOUT = 3.0


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("secret") / "server.secret"
    path.write_text(SECRET + "\n")
    return path


@pytest.fixture(scope="module")
def guarded(
    llm: ScriptedChatServer,  # noqa: F811 - the fixture
    secret_file: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[SessionServer]:
    store = tmp_path_factory.mktemp("guarded") / "sessions.db"
    args = ("--secret-file", str(secret_file), "--header-timeout", str(HEADER_TIMEOUT))
    args += ("--body-timeout", str(BODY_TIMEOUT))
    with SessionServer(f"sqlite:///{store}", llm_url=llm.url, token=TOKEN, args=args) as server:
        yield server


def token_for(user: str, ttl: float = 600, secret_file: Path | None = None) -> str:
    """A user token, issued by the command as an operator would (the secret from the file,
    else from the environment)."""
    command = [sys.executable, "-m", "praisonsession", "token", "--user", user, "--ttl", str(ttl)]
    env = child_env()
    if secret_file is not None:
        command += ["--secret-file", str(secret_file)]
    else:
        env[SECRET_ENV] = SECRET
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# -- tokens ---------------------------------------------------------------------------------


def test_the_token_command_signs_user_and_expiry_with_the_secret(secret_file: Path) -> None:
    before = time.time()
    token = token_for("alice", 3600, secret_file)
    after = time.time()
    assert SECRET not in token
    assert user_of_token(SECRET.encode(), token) == "alice"
    expires = int(token.split(".")[2])
    assert int(before + 3600) <= expires <= int(after + 3600)  # an hour from when it ran
    with pytest.raises(RemoteAuthError, match="does not match"):
        user_of_token(b"another-secret-" + b"y" * 40, token)


def test_the_token_command_takes_the_secret_from_the_environment_never_the_command_line(
    secret_file: Path,
) -> None:
    env = child_env()
    env.pop(SECRET_ENV, None)
    command = [sys.executable, "-m", "praisonsession", "token", "--user", "bob"]
    missing = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode != 0 and "--secret-file" in missing.stderr
    assert "never goes on the command line" in missing.stderr
    env[SECRET_ENV] = SECRET
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert user_of_token(SECRET.encode(), done.stdout.strip()) == "bob"
    refused = subprocess.run(
        [*command, "--secret", SECRET], capture_output=True, text=True, env=env, timeout=60
    )
    assert refused.returncode != 0  # there is no such option


def test_a_short_or_unreadable_secret_is_refused(tmp_path: Path) -> None:
    short = tmp_path / "short.secret"
    short.write_text("tiny\n")
    with pytest.raises(InvalidValueError, match="at least 32"):
        load_secret(short)
    with pytest.raises(InvalidValueError, match="Cannot read the secret file"):
        load_secret(tmp_path / "missing.secret")


def test_forged_damaged_and_expired_tokens_are_401(guarded: SessionServer) -> None:
    secret = SECRET.encode()
    good = issue_token(secret, "alice", 600)
    prefix, user, expires, mac = good.split(".")
    forged_user = issue_token(secret, "mallory", 600).split(".")[1]
    candidates = {
        "forged user": f"{prefix}.{forged_user}.{expires}.{mac}",
        "extended expiry": f"{prefix}.{user}.{int(expires) + 10**6}.{mac}",
        "damaged": good[:-2] + ("AA" if not good.endswith("AA") else "BB"),
        "malformed": "ps1.nonsense",
        "other secret": issue_token(b"z" * 40, "alice", 600),
    }
    for what, token in candidates.items():
        answer = post(guarded.agent_url, {"query": "hi", "user_id": "alice"}, token=token)
        assert answer.status_code == 401, what
        assert token not in answer.text, what
    expired = issue_token(secret, "alice", 1, now=time.time() - 60)
    answer = post(guarded.agent_url, {"query": "hi", "user_id": "alice"}, token=expired)
    assert answer.status_code == 401 and "expired at" in answer.json()["error"]["message"]
    assert expired not in answer.text


def malformed_tokens() -> dict[str, bytes]:
    """Tokens no server issued, in shapes that once crashed the check (500, a traceback)."""
    good = issue_token(SECRET.encode(), "alice", 600)
    prefix, user, expires, mac = good.split(".")
    return {
        "non-Latin-1 bytes in the user": f"{prefix}.\u2603{user}.{expires}.{mac}".encode(),
        "non-Latin-1 bytes in the MAC": f"{prefix}.{user}.{expires}.{mac}\u00e9\u2603".encode(),
        "superscript digits in the expiry": f"{prefix}.{user}.\u00b9\u00b2\u00b3.{mac}".encode(),
        "Arabic-Indic digits in the expiry": f"{prefix}.{user}.\u0661\u0662.{mac}".encode(),
        "a raw high byte": f"{prefix}.{user}.{expires}.".encode() + b"\xff\xfe",
    }


def test_malformed_user_tokens_are_401_on_the_api_and_the_browser(
    guarded: SessionServer,
) -> None:
    for what, token in malformed_tokens().items():
        with pytest.raises(RemoteAuthError) as caught:
            user_of_token(SECRET.encode(), token.decode("latin-1"))
        assert caught.value.status == 401, what
        headers = {"Authorization": b"Bearer " + token}
        answer = requests.post(
            guarded.agent_url, data=b'{"query": "hi"}', headers=headers, timeout=30
        )
        assert answer.status_code == 401, (what, answer.text)
        browsed = requests.get(guarded.base_url + "/ui/api/users", headers=headers, timeout=30)
        assert browsed.status_code == 401, (what, browsed.text)
    assert "Traceback" not in guarded.log


def test_a_token_expires_on_time(guarded: SessionServer) -> None:
    """The same token, accepted while it is valid, is refused once its expiry has passed by
    the clock the server reads (this machine's)."""
    token = issue_token(SECRET.encode(), "erin", 3)
    expires = int(token.split(".")[2])
    body = {"query": "hi", "session_id": "soon", "user_id": "erin"}
    answer = post(guarded.agent_url, body, token=token)
    # refused only if the machine was so slow that the answer came after the expiry
    assert answer.status_code == 200 or time.time() >= expires, answer.text
    while (left := expires - time.time()) > 0:
        time.sleep(left)
    answer = post(guarded.agent_url, body, token=token)
    assert answer.status_code == 401 and "expired" in answer.json()["detail"]


# -- cross-user -----------------------------------------------------------------------------


def test_a_user_token_reaches_its_own_sessions_only(guarded: SessionServer) -> None:
    alice = token_for("alice")
    mine = Session(agent_url=guarded.agent_url, session_id="diary", user_id="alice", api_key=alice)
    assert mine.chat("Dear diary") == "You said: Dear diary"
    mine.set_state("mood", "fine")
    assert mine.increment_state("entries") == 1
    assert mine.get_state("mood") == "fine"

    admin = Session(agent_url=guarded.agent_url, session_id="ledger", user_id="bob", api_key=TOKEN)
    admin.set_state("balance", 100)

    with pytest.raises(RemoteAuthError) as caught:
        Session(agent_url=guarded.agent_url, session_id="ledger", user_id="bob", api_key=alice)
    assert caught.value.status == 403
    said = str(caught.value)  # the server's explanation, kept: the token is valid, not bob's
    assert "this token is for user 'alice'" in said and "Pass the server's token" not in said
    assert alice not in said
    for route, body in (
        ("", {"query": "hi", "session_id": "ledger", "user_id": "bob"}),
        ("/store/get_state", {"session_id": "ledger", "user_id": "bob"}),
        ("/store/patch", {"session_id": "ledger", "user_id": "bob", "updates": {"balance": 0}}),
        ("/store/increment", {"session_id": "ledger", "user_id": "bob", "name": "balance"}),
        ("/store/list", {"user_id": "bob"}),
        ("/store/delete", {"session_id": "ledger", "user_id": "bob"}),
        ("/store/purge", {}),
    ):
        answer = post(guarded.agent_url + route, body, token=alice)
        assert answer.status_code == 403, route
        assert answer.json()["error"]["type"] == "RemoteAuthError", route
        assert "Forbidden" in answer.json()["error"]["message"]
    assert admin.get_state("balance") == 100  # nothing changed
    assert admin.increment_state("balance", 1) == 101

    # the admin token reaches alice's session too
    as_admin = Session(
        agent_url=guarded.agent_url, session_id="diary", user_id="alice", api_key=TOKEN
    )
    assert as_admin.get_state("mood") == "fine"

    log = guarded.log_path.read_text(errors="replace")
    assert "403: a token of user 'alice' asked for" in log and "'bob'" in log
    assert alice not in log and TOKEN not in log and SECRET not in log


def test_the_praisonai_route_works_with_a_user_token(guarded: SessionServer) -> None:
    carol = token_for("carol")
    # PraisonAI's client: X-Auth-Token and a body without user_id: the token's user is used
    answer = requests.post(
        guarded.agent_url,
        json={"query": "hello", "session_id": "p1"},
        headers={"X-Auth-Token": carol},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"response": "You said: hello", "session_id": "p1", "user_id": "carol"}
    bearer = post(guarded.agent_url, {"query": "again", "session_id": "p1"}, token=carol)
    assert bearer.json()["response"] == "You said: again"
    history = Session(
        agent_url=guarded.agent_url, session_id="p1", user_id="carol", api_key=carol
    ).read_messages(HISTORY)
    assert [m["content"] for m in history if m["role"] == "user"] == ["hello", "again"]


# -- slow clients ---------------------------------------------------------------------------


@pytest.fixture
def crowded(
    llm: ScriptedChatServer,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> Iterator[SessionServer]:
    """A server with the default connection cap whose header timeout is :data:`SAFETY`: the
    timeout cannot be what frees a connection while a test runs."""
    store, args = f"sqlite:///{tmp_path}/s.db", ("--header-timeout", str(SAFETY))
    with SessionServer(store, llm_url=llm.url, token=TOKEN, args=args) as server:
        yield server


def test_slow_clients_do_not_starve_the_server(crowded: SessionServer) -> None:
    """1,100 connections each send a request line and one header, then wait: new requests
    keep working, because the oldest waiting connections are closed to make room (the cap,
    1,000), not because the header timeout (SAFETY here) ended them: the newest stay open."""
    slow: list[socket.socket] = []
    try:
        for _ in range(1100):
            sock = socket.create_connection(("127.0.0.1", crowded.port), timeout=SAFETY)
            sock.sendall(b"POST /agent HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(sock)
        with requests.Session() as http:
            for i in range(20):
                answer = http.post(
                    crowded.agent_url,
                    json={"query": f"still here {i}", "session_id": "busy", "user_id": "dave"},
                    headers={"Authorization": f"Bearer {TOKEN}"},
                    timeout=SAFETY,
                )
                assert answer.status_code == 200, answer.text
                assert answer.json()["response"] == f"You said: still here {i}"
        for sock in slow[:100]:  # closed without a word: made room, not timed out (a 408)
            assert first_answer(sock) == b""
        newest = slow[-1]
        newest.setblocking(False)
        with pytest.raises(BlockingIOError):  # still open, nothing said
            newest.recv(4096)
    finally:
        for sock in slow:
            sock.close()
    assert requests.get(crowded.base_url + "/health", timeout=SAFETY).status_code == 200


def first_answer(sock: socket.socket) -> bytes:
    """What the server says on ``sock`` before it closes it or ends its headers (b"" for a
    close without a word, as after a reset); the socket's own timeout is the safety."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        pass
    return data


def test_headers_that_stop_coming_get_408(guarded: SessionServer) -> None:
    with socket.create_connection(("127.0.0.1", guarded.port), timeout=2 * SAFETY) as sock:
        sock.sendall(b"POST /agent HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert first_answer(sock).startswith(b"HTTP/1.1 408")  # the header timeout's answer


def test_a_body_that_stops_coming_gets_408(guarded: SessionServer) -> None:
    with socket.create_connection(("127.0.0.1", guarded.port), timeout=2 * SAFETY) as sock:
        sock.sendall(
            b"POST /agent HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
            + b'Content-Length: 100\r\n\r\n{"query": '
        )
        assert first_answer(sock).startswith(b"HTTP/1.1 408")  # the body timeout's answer
