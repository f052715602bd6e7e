"""AgentScope 1.0's session API reference, with the import swapped.

    from agentscope.session import JSONSession, RedisSession
        ->  from praisonsession import JSONSession, RedisSession

``save_session_state(session_id, user_id="", **modules)`` and ``load_session_state(session_id,
user_id="", allow_not_exist=True, **modules)`` on ``JSONSession(save_dir)`` and on
``RedisSession(host, port, db, password, connection_pool, key_ttl, key_prefix)``, plus
``get_client()``. The Redis half runs against the server at $REDIS_URL (tests start one on
127.0.0.1); without it, it says so and stops.
"""

import asyncio
import os
import sys
import tempfile
from urllib.parse import urlsplit

from praisonsession import JSONSession, RedisSession, StateModule


class Notebook(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.pages = []
        self.register_state("pages")


async def json_session() -> None:
    with tempfile.TemporaryDirectory(prefix="agentscope-001-") as save_dir:  # removed at the end
        session = JSONSession(save_dir=save_dir)
        notebook = Notebook()
        notebook.pages = ["first page"]
        await session.save_session_state("session_1", user_id="alice", notebook=notebook)

        alices, bobs = Notebook(), Notebook()
        await session.load_session_state("session_1", user_id="alice", notebook=alices)
        await session.load_session_state("session_1", user_id="bob", notebook=bobs)
        print("JSONSession, alice:", alices.pages, "bob:", bobs.pages)
        try:
            await session.load_session_state("nothing", allow_not_exist=False, notebook=bobs)
        except ValueError as error:  # what AgentScope raised too
            print("allow_not_exist=False:", type(error).__name__)


async def redis_session() -> None:
    url = os.environ.get("REDIS_URL")
    if not url:
        print("RedisSession: set REDIS_URL=redis://host:port/0 to run this part")
        return
    where = urlsplit(url)
    session = RedisSession(
        host=where.hostname,
        port=where.port,
        db=0,
        password=None,
        connection_pool=None,
        key_ttl=3600,  # a sliding TTL, refreshed on every save and load
        key_prefix="example-001:",
    )
    notebook = Notebook()
    notebook.pages = ["kept in Redis"]
    await session.save_session_state("session_1", user_id="alice", notebook=notebook)
    loaded = Notebook()
    await session.load_session_state("session_1", user_id="alice", notebook=loaded)
    print("RedisSession, alice:", loaded.pages)
    client = session.get_client()
    print("get_client() answers PING:", await client.ping())
    await session.delete_session("session_1", "alice")
    await session.close()


asyncio.run(json_session())
asyncio.run(redis_session())
sys.exit(0)
