"""The sync-to-async bridge: one private loop, usable from any thread, cleanly stopped."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading

import pytest

from praisonsession import Session, runtime


async def where() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


def test_coroutines_run_on_the_private_loop_thread() -> None:
    assert runtime.run(where()) == "praisonsession-loop"
    assert runtime.is_running()


def test_run_works_from_many_threads_at_once() -> None:
    results: list[int] = []

    async def square(n: int) -> int:
        await asyncio.sleep(0.001)
        return n * n

    def worker(n: int) -> None:
        results.append(runtime.run(square(n)))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == sorted(n * n for n in range(20))


def test_run_works_while_the_caller_runs_its_own_loop() -> None:
    async def cell() -> str:
        return runtime.run(where())  # a sync call from inside a running loop, as in Jupyter

    assert asyncio.run(cell()) == "praisonsession-loop"


def test_a_sync_call_from_the_loop_itself_explains_instead_of_deadlocking() -> None:
    async def nested() -> None:
        runtime.run(where())

    with pytest.raises(RuntimeError, match="await"):
        runtime.run(nested())


def test_inline_stores_run_on_the_callers_thread(tmp_path) -> None:
    seen: list[str] = []

    async def probe() -> None:
        await runtime.pause(0)
        seen.append(threading.current_thread().name)

    runtime.run(probe(), inline=True)
    assert seen == [threading.current_thread().name]


def test_inline_runs_use_the_loop_when_the_caller_has_one() -> None:
    async def cell() -> str:
        return runtime.run(where(), inline=True)

    assert asyncio.run(cell()) == "praisonsession-loop"


def test_shutdown_joins_the_thread_and_the_next_call_restarts_it() -> None:
    runtime.run(where())
    runtime.shutdown()
    assert not runtime.is_running()
    assert not [t for t in threading.enumerate() if t.name == "praisonsession-loop"]
    assert runtime.run(where()) == "praisonsession-loop"


def test_the_interpreter_exits_cleanly_with_the_loop_running(tmp_path) -> None:
    code = (
        "from praisonsession import Session, runtime\n"
        "import asyncio\n"
        f"s = Session('s', store='json://{tmp_path}/j')\n"
        "s.set_state('a', 1)\n"
        "async def ping(): return 'pong'\n"
        "print(runtime.run(ping()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout.strip() == "pong"
    assert done.stderr == ""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork exists on POSIX only")
def test_a_forked_child_gets_its_own_loop(tmp_path) -> None:
    url = f"sqlite://{tmp_path}/s.db"
    Session("s", store=url).set_state("n", 1)
    runtime.run(where())  # the parent's loop thread is running
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: threads do not survive fork, so the runtime must restart
        try:
            name = runtime.run(where())
            value = Session("s", store=url).increment_state("n")
            os.write(writer, f"{name} {value}".encode())
        finally:
            os._exit(0)
    os.close(writer)
    _, status = os.waitpid(pid, 0)
    assert os.read(reader, 100).decode() == "praisonsession-loop 2"
    assert status == 0
