"""LangGraph's own conformance suite (``langgraph-checkpoint-conformance`` 0.0.2) on
PraisonSaver: the required capabilities and every optional one, through the async methods on
every backend, and through the sync methods (from a worker thread, and from inside a running
event loop as a notebook cell calls them) on memory:// and SQLite."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from backends import SERVERS, STORE_BACKENDS, store_url
from praisonsession.integrations.langgraph import PraisonSaver

EVERY_CAPABILITY = sorted(capability.value for capability in ALL_CAPABILITIES)


def _url(kind: str, root: Path, request: pytest.FixtureRequest) -> str:
    if kind == "memory":
        return "memory://"
    if kind in SERVERS:
        request.getfixturevalue(SERVERS[kind])
    return store_url(kind, root)


def _driven(how: str) -> Callable[..., Any]:
    """How the sync methods are called: in a worker thread (no event loop there), or
    directly from the suite's coroutine (a thread running a loop, as in Jupyter)."""

    async def call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if how == "thread":
            return await asyncio.to_thread(function, *args, **kwargs)
        return function(*args, **kwargs)

    return call


def sync_driven(how: str) -> type[PraisonSaver]:
    """PraisonSaver whose async methods are its sync ones, so the suite tests those."""
    call = _driven(how)

    class SyncDriven(PraisonSaver):
        async def aget_tuple(self, config: Any) -> Any:
            return await call(self.get_tuple, config)

        async def aput(self, *args: Any) -> Any:
            return await call(self.put, *args)

        async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
            await call(self.put_writes, *args, **kwargs)

        async def adelete_thread(self, thread_id: str) -> None:
            await call(self.delete_thread, thread_id)

        async def adelete_for_runs(self, run_ids: Any) -> None:
            await call(self.delete_for_runs, run_ids)

        async def acopy_thread(self, source: str, target: str) -> None:
            await call(self.copy_thread, source, target)

        async def aprune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
            await call(self.prune, thread_ids, strategy=strategy)

        async def alist(self, config: Any, **options: Any) -> AsyncIterator[Any]:  # type: ignore[override]
            for item in await call(lambda: builtins.list(self.list(config, **options))):
                yield item

    return SyncDriven


def run_suite(make: Callable[[], PraisonSaver]) -> dict[str, Any]:
    @checkpointer_test(name="PraisonSaver")
    async def factory() -> AsyncIterator[PraisonSaver]:
        saver = make()
        try:
            yield saver
        finally:
            await saver.aclose()

    report = asyncio.run(validate(factory))
    return report.results


def assert_all_passed(results: dict[str, Any]) -> None:
    assert sorted(results) == EVERY_CAPABILITY
    failed = {
        name: result.failures
        for name, result in results.items()
        if not (result.detected and result.passed and result.tests_failed == 0)
    }
    assert not failed, failed
    assert all(result.tests_passed > 0 for result in results.values())


@pytest.mark.parametrize("kind", STORE_BACKENDS)
def test_the_async_methods_pass_every_capability(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _url(kind, tmp_path, request)
    assert_all_passed(run_suite(lambda: PraisonSaver(url)))


@pytest.mark.parametrize("how", ["thread", "in-loop"])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_sync_methods_pass_every_capability(
    kind: str, how: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _url(kind, tmp_path, request)
    saver_class = sync_driven(how)
    assert_all_passed(run_suite(lambda: saver_class(url)))


def test_an_encrypted_store_passes_every_capability(tmp_path: Path) -> None:
    from backends import ENCRYPTION_KEY

    settings = {"encryption_key": ENCRYPTION_KEY}
    url = f"sqlite://{tmp_path}/sealed.db"
    assert_all_passed(run_suite(lambda: PraisonSaver(url, settings=settings)))
