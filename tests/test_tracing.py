"""OpenTelemetry spans, captured with the SDK's InMemorySpanExporter: store operations,
memory, LLM calls, agent turns and server requests, with GenAI attribute names; no message
content unless asked; nothing at all while tracing is off.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from llm_server import ScriptedChatServer
from praisonsession import Session, tracing

sdk = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

SECRET = "my card number is 4111"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(tracer_provider=provider)
    try:
        yield exporter
    finally:
        tracing.disable()


def named(exporter: InMemorySpanExporter, prefix: str) -> list[Any]:
    return [span for span in exporter.get_finished_spans() if span.name.startswith(prefix)]


def every_attribute(exporter: InMemorySpanExporter) -> str:
    return json.dumps([dict(s.attributes) for s in exporter.get_finished_spans()], default=str)


def test_store_operations_are_database_spans(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    with Session("chat", "ada", store=f"sqlite://{tmp_path}/s.db") as session:
        session.set_state("score", 10)
        assert session.increment_state("score", increment=5) == 15
    (increment,) = named(spans, "increment_state")
    assert increment.name == "increment_state sqlite"
    assert increment.attributes["db.system.name"] == "sqlite"
    assert increment.attributes["db.operation.name"] == "increment_state"
    assert increment.attributes["gen_ai.conversation.id"] == "chat"
    assert increment.kind.name == "CLIENT"


def test_an_agent_turn_holds_its_llm_call_without_content(
    spans: InMemorySpanExporter, server: ScriptedChatServer, tmp_path: Path
) -> None:
    session = Session("chat", "ada", store=f"sqlite://{tmp_path}/s.db")
    agent = session.Agent(
        name="Tutor", memory=False, llm={"base_url": server.url, "model": "test-model"}
    )
    server.say("Noted.")
    assert agent.chat(SECRET) == "Noted."
    session.close()

    (turn,) = named(spans, "invoke_agent")
    assert turn.name == "invoke_agent Tutor"
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.agent.name"] == "Tutor"
    assert turn.attributes["gen_ai.conversation.id"] == "chat"
    (call,) = named(spans, "chat ")
    assert call.parent is not None and call.parent.span_id == turn.context.span_id
    assert call.attributes["gen_ai.operation.name"] == "chat"
    assert call.attributes["gen_ai.provider.name"] == "openai"
    assert call.attributes["gen_ai.request.model"] == "test-model"
    assert call.attributes["server.address"] == "127.0.0.1"
    assert call.attributes["gen_ai.usage.input_tokens"] > 0
    assert call.attributes["gen_ai.usage.output_tokens"] >= 0
    assert tuple(call.attributes["gen_ai.response.finish_reasons"]) == ("stop",)
    saves = [s for s in named(spans, "save_modules") if s.parent is not None]
    assert any(s.parent.span_id == turn.context.span_id for s in saves)  # the turn's save
    assert SECRET not in every_attribute(spans)  # no content unless asked


def test_content_is_recorded_only_when_asked(server: ScriptedChatServer, tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(content=True, tracer_provider=provider)
    try:
        with Session("chat", "ada", store=f"sqlite://{tmp_path}/s.db") as session:
            agent = session.Agent(
                name="Tutor", memory=False, llm={"base_url": server.url, "model": "m"}
            )
            server.say("Noted.")
            agent.chat(SECRET)
    finally:
        tracing.disable()
    (call,) = named(exporter, "chat ")
    sent = json.loads(call.attributes["gen_ai.input.messages"])
    assert sent[-1] == {"role": "user", "content": SECRET}
    assert json.loads(call.attributes["gen_ai.output.messages"])[0]["content"] == "Noted."


def test_memory_operations_carry_genai_memory_names(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    pytest.importorskip("chromadb")

    class Tiny:
        name = "tiny-tracing-embedder"
        dimension = 4

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, float(len(t)), 0.5, 0.25] for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return self.embed([text])[0]

    with Session(
        "chat",
        "ada",
        store=f"sqlite://{tmp_path}/s.db",
        settings={"data_dir": str(tmp_path / "data")},
        memory_config={"embedder": Tiny()},
    ) as session:
        session.add_memory(SECRET)
        assert session.search_memory("card")[0]["text"] == SECRET
    (added,) = named(spans, "update_memory add_memory")
    (searched,) = named(spans, "search_memory search_memory")
    assert added.attributes["gen_ai.operation.name"] == "update_memory"
    assert searched.attributes["gen_ai.operation.name"] == "search_memory"
    assert SECRET not in every_attribute(spans)


def test_a_server_request_is_a_server_span_in_the_callers_trace(
    spans: InMemorySpanExporter, server: ScriptedChatServer, tmp_path: Path
) -> None:
    uvicorn = pytest.importorskip("uvicorn")
    from praisonsession.apps.server import runner

    os.environ["REMOTE_TEST_LLM_URL"] = server.url
    app = runner.prepare(f"sqlite://{tmp_path}/s.db", ["remote_agents:assistant"])
    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    try:
        while not web.started:
            time.sleep(0.05)
        port = web.servers[0].sockets[0].getsockname()[1]  # port 0: the one it was given
        server.say("Hello there.")
        trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
        answer = requests.post(
            f"http://127.0.0.1:{port}/agent",
            json={"query": "Hi", "session_id": "s1", "user_id": "u1"},
            headers={"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"},
            timeout=30,
        )
        assert answer.status_code == 200 and answer.json()["response"] == "Hello there."
    finally:
        web.should_exit = True
        thread.join(timeout=30)
        os.environ.pop("REMOTE_TEST_LLM_URL", None)
    (request,) = named(spans, "POST /agent")
    assert request.kind.name == "SERVER"
    assert request.attributes["http.request.method"] == "POST"
    assert request.attributes["http.response.status_code"] == 200
    assert format(request.context.trace_id, "032x") == trace_id  # continues the caller's
    (turn,) = named(spans, "invoke_agent")
    assert turn.context.trace_id == request.context.trace_id


def test_tracing_off_makes_no_span(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(tracer_provider=provider)
    tracing.disable()
    with Session("chat", "ada", store=f"sqlite://{tmp_path}/s.db") as session:
        session.set_state("score", 1)
    assert exporter.get_finished_spans() == ()
    assert tracing.on is False


def test_tracing_is_switched_on_by_the_environment(tmp_path: Path) -> None:
    code = (
        "import sys; from praisonsession import tracing; print(tracing.on);"
        "print('opentelemetry' in sys.modules)"
    )
    import subprocess
    import sys

    for value, expected in (("1", "True"), ("", "False")):
        env = {**os.environ, "PRAISONSESSION_TRACING": value}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.stdout.split() == [expected, "False"]  # imported only at the first span


def test_the_tracing_setting_switches_it_on(tmp_path: Path) -> None:
    code = (
        "from praisonsession import Session, tracing\n"
        "print(tracing.on)\n"
        "Session('s', store='memory://').close()\n"
        "print(tracing.on)\n"
    )
    import subprocess
    import sys

    (tmp_path / ".env").write_text("PRAISONSESSION_TRACING=true\n", "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRAISONSESSION_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]  # the .env file, read by the session
