"""The LLM client against a real chat-completions server on 127.0.0.1.

Every test asserts on what the server received: the exact URL, headers and body, and how many
attempts arrived; and on the waits the client asked for between them. No request ever leaves
the machine.
"""

from __future__ import annotations

import subprocess
import sys
import time
from email.utils import parsedate_to_datetime
from typing import Any, NamedTuple

import pytest

from held import SAFETY
from llm_server import Reply, ScriptedChatServer, http_date, serving
from praisonsession import RemoteError
from praisonsession._internal.retry import RetryPolicy
from praisonsession.errors import InvalidValueError
from praisonsession.llm import (
    DEFAULT_BASE_URL,
    OLLAMA_BASE_URL,
    ChatClient,
    LLMAuthError,
    LLMConfig,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailableError,
    ToolCall,
    resolve_llm,
)
from praisonsession.llm.retry import retry_after_seconds
from praisonsession.settings import Settings

HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture(autouse=True, params=["thread", "loop"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on both paths: ``complete`` on the calling thread (requests), and
    ``acomplete`` on an event loop (what agents use: on the loop itself for http://)."""
    if request.param == "loop":
        from praisonsession._internal import runtime

        def on_the_loop(self, messages, tools=None, tool_choice=None):  # type: ignore[no-untyped-def]
            return runtime.run(ChatClient.acomplete(self, messages, tools, tool_choice))

        monkeypatch.setattr(ChatClient, "complete", on_the_loop)
    return request.param


def client_for(server: ScriptedChatServer, **options) -> ChatClient:
    """A client with fast retries, so that retry tests take milliseconds."""
    fields = {"model": "test-model", "base_url": server.url, "retry_backoff": 0.01}
    return ChatClient(LLMConfig(**{**fields, **options}))


class Pause(NamedTuple):
    """One wait the client asked for between two attempts."""

    seconds: float
    asked_at: float  # time.time() when it asked
    requests_before: int  # requests the server had received by then


@pytest.fixture
def pauses(server: ScriptedChatServer, monkeypatch: pytest.MonkeyPatch) -> list[Pause]:
    """The waits the client asks for between attempts, recorded instead of slept.

    Every client hands its pause (``time.sleep``, or ``asyncio.sleep`` on a loop) to
    ``RetryPolicy.retrying``; this takes its place there. When the server saw the next
    attempt would measure how busy the machine is, not what the client decided.
    """
    asked: list[Pause] = []
    retrying = RetryPolicy.retrying

    def recording(
        self: RetryPolicy, retry_on: Any, *, asynchronous: bool = False, **options: Any
    ) -> Any:
        def pause(seconds: float) -> None:
            asked.append(Pause(seconds, time.time(), len(server.requests)))

        async def apause(seconds: float) -> None:
            pause(seconds)

        options["sleep"] = apause if asynchronous else pause
        return retrying(self, retry_on, asynchronous=asynchronous, **options)

    monkeypatch.setattr(RetryPolicy, "retrying", recording)
    return asked


# -- the request ---------------------------------------------------------------------------


def test_the_request_is_exactly_the_openai_protocol(server: ScriptedChatServer) -> None:
    server.say("Hi there")
    with client_for(server, api_key="sk-test", params={"temperature": 0.2}) as client:
        reply = client.complete(HELLO)

    assert reply.content == "Hi there"
    assert reply.tool_calls == []
    (request,) = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("praisonsession/")
    assert request.body == {"model": "test-model", "messages": HELLO, "temperature": 0.2}


def test_a_local_server_needs_no_key_and_gets_no_authorization_header(
    server: ScriptedChatServer,
) -> None:
    server.say("ok")
    with client_for(server) as client:
        client.complete(HELLO)
    assert "authorization" not in server.requests[0].headers


def test_tools_are_sent_only_when_there_are_some(server: ScriptedChatServer) -> None:
    schema = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    server.say("a", "b")
    with client_for(server) as client:
        client.complete(HELLO, tools=[])
        client.complete(HELLO, tools=[schema], tool_choice="none")
    assert "tools" not in server.requests[0].body
    assert server.requests[1].body["tools"] == [schema]
    assert server.requests[1].body["tool_choice"] == "none"


def test_tool_calls_in_the_reply_are_parsed(server: ScriptedChatServer) -> None:
    server.call(("add", {"a": 1, "b": 2}), ("shout", {"text": "hi"}))
    with client_for(server) as client:
        reply = client.complete(HELLO)
    assert reply.content is None
    assert reply.tool_calls == [
        ToolCall("call_1_0", "add", '{"a": 1, "b": 2}'),
        ToolCall("call_1_1", "shout", '{"text": "hi"}'),
    ]
    assert reply.to_message()["tool_calls"][0] == {
        "id": "call_1_0",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
    }


def test_ollama_style_object_arguments_and_missing_ids_are_normalised(
    server: ScriptedChatServer,
) -> None:
    call = {"function": {"name": "add", "arguments": {"a": 1}}}
    server.queue(Reply(payload={"message": {"role": "assistant", "tool_calls": [call]}}))
    # the scripted server fills in missing ids; strip it to see the client's fallback
    server.queue(
        Reply(
            raw=b'{"choices": [{"message": {"tool_calls": [{"function": '
            b'{"name": "add", "arguments": {"a": 1}}}]}}]}'
        )
    )
    with client_for(server) as client:
        first = client.complete(HELLO)
        second = client.complete(HELLO)
    assert first.tool_calls == [ToolCall("call_1_0", "add", '{"a": 1}')]
    assert second.tool_calls == [ToolCall("call_0", "add", '{"a": 1}')]


def test_one_client_reuses_its_connection(server: ScriptedChatServer) -> None:
    server.say("1", "2", "3")
    with client_for(server) as client:
        for _ in range(3):
            client.complete(HELLO)
    assert len({r.client_port for r in server.requests}) == 1


# -- retries -------------------------------------------------------------------------------


def test_429_is_retried_until_it_succeeds(server: ScriptedChatServer) -> None:
    server.fail(429, "Rate limit reached", times=2)
    server.say("finally")
    with client_for(server) as client:
        assert client.complete(HELLO).content == "finally"
    assert len(server.requests) == 3
    assert all(r.body == server.requests[0].body for r in server.requests)


def test_500_is_retried_and_the_retries_stop_at_the_bound(server: ScriptedChatServer) -> None:
    server.fail(500, "upstream exploded", times=3)
    with client_for(server, max_retries=2) as client, pytest.raises(LLMUnavailableError) as err:
        client.complete(HELLO)

    assert len(server.requests) == 3  # the first attempt and exactly two retries
    assert err.value.attempts == 3
    assert err.value.status == 500
    assert "after 3 attempts" in str(err.value)
    assert "HTTP 500: upstream exploded" in str(err.value)
    assert isinstance(err.value, RemoteError)


def test_no_retries_at_all_with_max_retries_zero(server: ScriptedChatServer) -> None:
    server.fail(503)
    with client_for(server, max_retries=0) as client, pytest.raises(LLMUnavailableError):
        client.complete(HELLO)
    assert len(server.requests) == 1


def test_the_total_wait_is_bounded_too(server: ScriptedChatServer) -> None:
    server.fail(503, retry_after=0.3, times=3)
    client = client_for(server, max_retries=10, max_retry_wait=0.7)
    with client, pytest.raises(LLMUnavailableError) as err:
        client.complete(HELLO)
    # two waits of 0.3 s fit in 0.7 s; a third would not, so it gives up after 3 attempts
    assert len(server.requests) == 3
    assert "more than the retry budget" in str(err.value)


def test_retry_after_in_seconds_is_honoured(
    server: ScriptedChatServer, pauses: list[Pause]
) -> None:
    server.fail(429, retry_after=7)  # not the backoff (0.01 s): the server's own figure
    server.say("ok")
    with client_for(server) as client:
        assert client.complete(HELLO).content == "ok"
    assert [(p.seconds, p.requests_before) for p in pauses] == [(7.0, 1)]  # between the two
    assert len(server.requests) == 2


def test_retry_after_as_an_http_date_is_honoured(
    server: ScriptedChatServer, pauses: list[Pause]
) -> None:
    date = http_date(30)  # whole seconds; far enough ahead that no backoff could match it
    due = parsedate_to_datetime(date).timestamp()
    server.fail(429, retry_after=date)
    server.say("ok")
    called = time.time()
    with client_for(server) as client:
        assert client.complete(HELLO).content == "ok"
    (pause,) = pauses
    assert pause.requests_before == 1 and len(server.requests) == 2
    # the wait ends at the date: counted from the client's clock between the call and the pause
    assert called <= due - pause.seconds <= pause.asked_at


def test_retry_after_longer_than_the_budget_fails_at_once(server: ScriptedChatServer) -> None:
    server.fail(429, retry_after=120)
    with client_for(server, max_retry_wait=5) as client, pytest.raises(LLMUnavailableError) as err:
        client.complete(HELLO)
    assert len(server.requests) == 1
    assert "asked to retry after 120 s" in str(err.value)
    assert "rate limited" in str(err.value)


def test_retry_after_header_forms() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds({"Retry-After": "3"}, now) == 3.0
    assert retry_after_seconds({"retry-after": "0.25"}, now) == 0.25
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}, now) == 1.5
    assert retry_after_seconds({"Retry-After": "Tue, 14 Nov 2023 22:13:25 GMT"}, now) == 5.0
    assert retry_after_seconds({"Retry-After": "Tue, 14 Nov 2023 22:13:10 GMT"}, now) == 0.0
    assert retry_after_seconds({"Retry-After": "-4"}, now) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}, now) is None
    assert retry_after_seconds({}, now) is None


def test_a_timeout_is_retried_then_reported_as_unavailable(server: ScriptedChatServer) -> None:
    # a client that waited for these replies (held back SAFETY s) would get "too late"
    server.queue(Reply.text("too late", delay=SAFETY), Reply.text("too late", delay=SAFETY))
    client = client_for(server, timeout=0.2, max_retries=1)
    with client, pytest.raises(LLMUnavailableError) as err:
        client.complete(HELLO)
    assert len(server.requests) == 2
    assert "no answer within timeout=0.2 s" in str(err.value)
    assert "Raise timeout" in str(err.value)


def test_a_server_that_is_down_is_retried_then_unavailable() -> None:
    with ScriptedChatServer() as gone:
        url = gone.url
    client = ChatClient(LLMConfig(model="m", base_url=url, retry_backoff=0.01, max_retries=2))
    with client, pytest.raises(LLMUnavailableError) as err:
        client.complete(HELLO)
    assert err.value.attempts == 3
    assert "could not connect" in str(err.value)
    assert "Check that the server is running" in str(err.value)


# -- errors that are not retried -----------------------------------------------------------


def test_401_raises_a_clear_auth_error_without_retrying() -> None:
    with serving(api_key="right-key") as server:
        with client_for(server, api_key="wrong-key") as client, pytest.raises(LLMAuthError) as err:
            client.complete(HELLO)
        assert len(server.requests) == 1
    message = str(err.value)
    assert err.value.status == 401
    assert "HTTP 401 (Incorrect API key provided.)" in message
    assert "an API key was sent" in message
    assert "OPENAI_API_KEY" in message
    assert "wrong-key" not in message


def test_403_without_a_key_says_no_key_was_sent(server: ScriptedChatServer) -> None:
    server.fail(403, "Project does not have access to model")
    with client_for(server) as client, pytest.raises(LLMAuthError) as err:
        client.complete(HELLO)
    assert "no API key was sent" in str(err.value)
    assert "Project does not have access to model" in str(err.value)


def test_404_points_at_the_base_url(server: ScriptedChatServer) -> None:
    server.fail(404, "model 'llama9' not found")
    with client_for(server) as client, pytest.raises(LLMRequestError) as err:
        client.complete(HELLO)
    assert len(server.requests) == 1
    assert "model 'llama9' not found" in str(err.value)
    assert "http://localhost:11434/v1" in str(err.value)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"<html>Sign in</html>", "not JSON ('<html>Sign in</html>')"),
        (b'{"choices": [', "not JSON"),
        (b"[1, 2]", "JSON list, not an object"),
        (b'{"choices": []}', "no 'choices' list"),
        (b'{"choices": [{"text": "legacy completion"}]}', "no 'message' object"),
        (b'{"error": {"message": "overloaded"}}', "answered with an error: overloaded"),
        (b'{"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]}', "no function name"),
    ],
)
def test_a_malformed_response_raises_a_typed_error(
    server: ScriptedChatServer, body: bytes, says: str
) -> None:
    server.queue(Reply.malformed(body))
    with client_for(server) as client, pytest.raises(LLMResponseError) as err:
        client.complete(HELLO)
    assert says in str(err.value)
    assert len(server.requests) == 1


# -- configuration -------------------------------------------------------------------------


def test_resolution_defaults_to_openai() -> None:
    config = resolve_llm(None, None, environ={})
    assert (config.model, config.base_url, config.api_key) == (
        "gpt-4o-mini",
        DEFAULT_BASE_URL,
        None,
    )
    assert config.endpoint == "https://api.openai.com/v1/chat/completions"


def test_resolution_order_argument_then_settings_then_environment() -> None:
    env = {"OPENAI_BASE_URL": "http://env:1/v1", "OPENAI_API_KEY": "env-key"}
    settings = Settings(llm_base_url="http://settings:2/v1", llm_model="s-model")

    assert resolve_llm(None, None, env).base_url == "http://env:1/v1"
    assert resolve_llm(None, None, env).api_key == "env-key"
    from_settings = resolve_llm(None, settings, env)
    assert (from_settings.model, from_settings.base_url) == ("s-model", "http://settings:2/v1")
    assert from_settings.api_key == "env-key"  # settings has none, so the environment's
    named = resolve_llm("gpt-4o", settings, env)
    assert (named.model, named.base_url) == ("gpt-4o", "http://settings:2/v1")
    full = resolve_llm(
        {"model": "llama3.2", "base_url": "http://arg:3/v1", "api_key": "arg-key"}, settings, env
    )
    assert (full.model, full.base_url, full.api_key) == ("llama3.2", "http://arg:3/v1", "arg-key")


def test_resolution_accepts_praisonai_and_litellm_spellings() -> None:
    assert resolve_llm({"api_base": "http://h:1/v1/"}, None, {}).base_url == "http://h:1/v1"
    pasted = resolve_llm({"base_url": "http://h:1/v1/chat/completions"}, None, {})
    assert pasted.base_url == "http://h:1/v1"
    assert resolve_llm(None, None, {"OPENAI_API_BASE": "http://y/v1"}).base_url == "http://y/v1"
    ollama = resolve_llm("ollama/llama3.2", None, {})
    assert (ollama.model, ollama.base_url) == ("llama3.2", OLLAMA_BASE_URL)
    assert resolve_llm("ollama/qwen", None, {"OPENAI_BASE_URL": "http://gpu:8/v1"}).base_url == (
        "http://gpu:8/v1"
    )
    options = resolve_llm({"temperature": 0, "max_tokens": 50, "timeout": 5, "max_retries": 1})
    assert options.params == {"temperature": 0, "max_tokens": 50}
    assert (options.timeout, options.max_retries) == (5, 1)


def test_resolution_refuses_what_it_cannot_use() -> None:
    with pytest.raises(InvalidValueError, match=r"unknown keys \['temprature'\]"):
        resolve_llm({"temprature": 0.1})
    with pytest.raises(InvalidValueError, match="http"):
        resolve_llm({"base_url": "localhost:11434"})
    with pytest.raises(InvalidValueError, match="model name"):
        resolve_llm(42)  # type: ignore[arg-type]


def test_the_config_repr_never_shows_the_key() -> None:
    config = LLMConfig(model="m", api_key="sk-secret")
    assert "sk-secret" not in repr(config)
    assert "api_key=set" in repr(config)


def test_environment_endpoint_and_key_reach_the_server(
    server: ScriptedChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.say("ok")
    with ChatClient(resolve_llm("env-model")) as client:
        client.complete(HELLO)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-from-env"
    assert request.body["model"] == "env-model"


def test_settings_win_over_the_environment_on_the_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    with serving() as from_env, serving() as from_settings:
        monkeypatch.setenv("OPENAI_BASE_URL", from_env.url)
        settings = Settings(llm_base_url=from_settings.url, llm_api_key="sk-settings")
        from_settings.say("ok")
        with ChatClient(resolve_llm(None, settings)) as client:
            client.complete(HELLO)
        assert from_env.requests == []
        (request,) = from_settings.requests
        assert request.headers["authorization"] == "Bearer sk-settings"
        assert request.body["model"] == "gpt-4o-mini"


def test_importing_praisonsession_loads_no_http_stack() -> None:
    code = (
        "import sys, praisonsession, praisonsession.llm, praisonsession.agents\n"
        "print(sorted(m for m in ('requests', 'tenacity', 'urllib3') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def test_on_a_loop_an_http_endpoint_is_called_without_a_thread(
    server: ScriptedChatServer, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    """The server's agents chat on the event loop: no worker thread holds the GIL the loop
    needs. An https:// endpoint (or one behind a proxy) keeps the thread path."""
    import praisonsession.llm.client as client_module
    from praisonsession._internal import runtime

    def no_thread(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the LLM request went to a worker thread")

    monkeypatch.setattr(client_module, "offload", no_thread)
    server.say("one", "two")
    with client_for(server) as client:
        for expected in ("one", "two"):
            reply = runtime.run(ChatClient.acomplete(client, HELLO))
            assert reply.content == expected
    assert len({r.client_port for r in server.requests}) == 1  # kept alive
    assert "accept-encoding" not in server.requests[0].headers
    assert not client_for(server, base_url="https://llm.example/v1")._on_loop
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert not client_for(server, base_url="http://llm.example/v1")._on_loop
