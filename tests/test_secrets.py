"""Secrets stay out of what is printed and logged: redacted URLs, keys read from files, tokens in
an ``agent_url``'s query."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from llm_server import serving
from praisonsession import InvalidValueError, Session
from praisonsession._internal.redaction import redact_text, redact_url
from praisonsession.llm import ChatClient, LLMConfig

KEY = "sk-planted-key-0123456789"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("sqlite:///x.db?token=abc", "sqlite:///x.db?token=***"),
        ("json:///data/sessions", "json:///data/sessions"),
        ("redis://:pw@h:6379/0", "redis://:***@h:6379/0"),
        ("u:pw@h", "u:***@h"),
        ("http://h/a?auth_token=1&page=2", "http://h/a?auth_token=***&page=2"),
        ("http://h/?client_secret=1", "http://h/?client_secret=***"),
        ("http://h/?x-api-key=1", "http://h/?x-api-key=***"),
        ("http://h/?access-token=1#top", "http://h/?access-token=***#top"),
        (
            "https://s3/b?X-Amz-Signature=1&X-Amz-Credential=2",
            "https://s3/b?X-Amz-Signature=***&X-Amz-Credential=***",
        ),
        ("http://h/?sig=1&design=2", "http://h/?sig=***&design=2"),
        ("http://h/?key=1&apiKey=2&private_key=3", "http://h/?key=***&apiKey=***&private_key=***"),
        ("http://h/?password=1&secret=2", "http://h/?password=***&secret=***"),
        # names that merely contain a secret's word describe it: shown as written
        ("redis://h:6379/0?key_prefix=app:", "redis://h:6379/0?key_prefix=app:"),
        ("redis://h:6379/0?key_ttl=60&keyPrefix=a", "redis://h:6379/0?key_ttl=60&keyPrefix=a"),
        ("http://h/?token_type=bearer&token=1", "http://h/?token_type=bearer&token=***"),
    ],
)
def test_a_redacted_url_masks_every_secret_and_keeps_the_rest_as_written(
    url: str, shown: str
) -> None:
    assert redact_url(url) == shown


def test_a_redis_stores_printed_url_shows_its_key_prefix_and_hides_its_password() -> None:
    from praisonsession.stores.backends.redis.url import display_url

    shown = display_url("h", 6379, 0, "pw", ssl=False, key_prefix="app:")
    assert redact_url(shown) == shown == "redis://:***@h:6379/0?key_prefix=app:"
    assert redact_text(f"store {shown}?") == f"store {shown}?"


def test_urls_inside_text_are_redacted() -> None:
    text = "failed: http://u:pw@h/x?api_key=K; retry"
    assert redact_text(text) == "failed: http://u:***@h/x?api_key=***; retry"


def test_a_key_read_from_a_file_loses_its_newline(tmp_path: Path) -> None:
    (tmp_path / "key").write_text(KEY + "\n")
    with serving(api_key=KEY) as server:
        server.say("ok")
        key = (tmp_path / "key").read_text()
        config = LLMConfig(model="m", base_url=server.url, api_key=key)
        with ChatClient(config) as client:
            assert client.complete([{"role": "user", "content": "hi"}]).content == "ok"
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("bad", ["\u2013", "\u00e9", "\x00", "\n\n"[0] + "x"])
def test_a_key_that_cannot_be_a_header_is_refused_without_being_shown(bad: str) -> None:
    with pytest.raises(InvalidValueError) as caught:
        LLMConfig(model="m", api_key=KEY[:6] + bad + KEY[6:])
    assert KEY[:6] not in str(caught.value) and KEY[6:] not in str(caught.value)
    with pytest.raises(InvalidValueError) as caught:
        Session("s", agent_url="http://127.0.0.1:9/agent", api_key=KEY[:6] + bad + KEY[6:])
    assert KEY[6:] not in str(caught.value)


class _Recorder(BaseHTTPRequestHandler):
    """A PraisonAI-style agent: ``GET /agent/health`` answers 200; it records each request."""

    seen: ClassVar[list[tuple[str, str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, self.headers.get("Authorization")))
        body = json.dumps({"status": "ok"}).encode()
        ok = self.path.split("?")[0] == "/agent/health"
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def agent_server() -> Iterator[str]:
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_an_agent_url_with_a_query_keeps_its_health_check_and_logs_no_token(
    agent_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="urllib3"):
        session = Session("s", agent_url=f"{agent_server}/agent?team=blue&token={KEY}")
        session.close()
    assert _Recorder.seen[0] == ("GET", "/agent/health?team=blue", f"Bearer {KEY}")
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "/agent/health?team=blue" in logged  # the debug log is on, and shows the request
    assert KEY not in logged
    assert KEY not in repr(session) and KEY not in str(session.agent_url)


def test_an_agent_url_token_and_another_api_key_are_refused(agent_server: str) -> None:
    with pytest.raises(InvalidValueError) as caught:
        Session("s", agent_url=f"{agent_server}/agent?token={KEY}", api_key="another-token")
    assert KEY not in str(caught.value)
    assert _Recorder.seen == []
