"""Worker processes for ``test_adk.py``: ``python adk_workers.py <job> ...``.

Each job is a separate OS process that imports ADK and praisonsession afresh, as another
program sharing the store would. Jobs:

``append URL BARRIER NAME COUNT``
    At the barrier, COUNT events ``NAME-i`` appended to the session ``("shop", "u",
    "shared")``, each with the state delta ``{"NAME": i}``; a writer refused as stale
    (another process appended first) reloads the session and appends again. Prints how many
    times it was refused (JSON).
``runner-turn URL SESSION_ID MESSAGE``
    One ``Runner.run_async`` of :func:`make_runner` on the session ``("shop", "ada",
    SESSION_ID)`` (created if missing); prints the state the tool saw before it wrote (JSON).

The barrier is a directory: each worker creates ``ready-NAME`` once set up, then waits for
the parent to create ``go``, so that all of them start together.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from praisonsession.integrations.adk import PraisonSessionService
from released_together import wait_for_go

APP = "shop"


def worker_command(*args: str) -> list[str]:
    """The command line running one job of this file in a new Python process."""
    return [sys.executable, str(Path(__file__).resolve()), *args]


class NoteTaker(BaseLlm):
    """An offline model, no key: asked anything, it calls ``take_note`` with the user's
    words; given the tool's answer, it says what was noted."""

    model: str = "note-taker"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        part = llm_request.contents[-1].parts[0]
        if part.function_response is not None:
            noted = part.function_response.response["noted"]
            answer = types.Part(text=f"Noted: {noted}")
        else:
            call = types.FunctionCall(name="take_note", args={"note": part.text or ""})
            answer = types.Part(function_call=call)
        yield LlmResponse(
            content=types.Content(role="model", parts=[answer]),
            usage_metadata=spent(llm_request, answer),
        )


def spent(
    llm_request: LlmRequest, answer: types.Part
) -> types.GenerateContentResponseUsageMetadata:
    """What a call cost, one token a word, reported as a real model does: ADK records every
    call's usage and logs a warning for a model that reports none."""
    asked = sum(
        len((part.text or "").split())
        for content in llm_request.contents
        for part in content.parts or []
    )
    said = len((answer.text or str(answer.function_call and answer.function_call.args)).split())
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=asked, candidates_token_count=said, total_token_count=asked + said
    )


def take_note(note: str, tool_context: ToolContext) -> dict[str, Any]:
    """Take a note of what the user said."""
    state = tool_context.state
    seen = {
        name: state.get(name)
        for name in ("app:notes", "user:last_note", "temp:draft", "notes_here")
    }
    state["app:notes"] = (state.get("app:notes") or 0) + 1  # every user of the app
    state["user:last_note"] = note  # every session of this user
    state["temp:draft"] = note.upper()  # this invocation only
    state["notes_here"] = (state.get("notes_here") or 0) + 1  # this session
    return {"noted": note, "seen": seen}


def make_runner(service: PraisonSessionService) -> Runner:
    agent = LlmAgent(name="notes", model=NoteTaker(), tools=[take_note], instruction="Take notes.")
    return Runner(agent=agent, app_name=APP, session_service=service)


async def append(url: str, barrier: str, name: str, count: str) -> None:
    service = PraisonSessionService(url)
    session = await service.get_session(app_name=APP, user_id="u", session_id="shared")
    assert session is not None
    wait_for_go(Path(barrier), name)
    refused = 0
    for i in range(int(count)):
        while True:
            event = Event(
                invocation_id=f"{name}-{i}",
                author=name,
                actions=EventActions(state_delta={name: i}),
            )
            try:
                await service.append_event(session, event)
                break
            except StaleSessionError:
                refused += 1
                session = await service.get_session(app_name=APP, user_id="u", session_id="shared")
                assert session is not None
    await service.close()
    print(json.dumps(refused))


async def runner_turn(url: str, session_id: str, message: str) -> None:
    service = PraisonSessionService(url)
    if await service.get_session(app_name=APP, user_id="ada", session_id=session_id) is None:
        await service.create_session(app_name=APP, user_id="ada", session_id=session_id)
    seen: dict[str, Any] = {}
    async for event in make_runner(service).run_async(
        user_id="ada",
        session_id=session_id,
        new_message=types.Content(role="user", parts=[types.Part(text=message)]),
    ):
        for part in event.content.parts if event.content else []:
            if part.function_response is not None:
                seen = part.function_response.response["seen"]
    await service.close()
    print(json.dumps(seen))


JOBS = {"append": append, "runner-turn": runner_turn}

if __name__ == "__main__":
    asyncio.run(JOBS[sys.argv[1]](*sys.argv[2:]))
