"""AgentScope's session API reference (the older, bound API), with the import swapped.

    from agentscope.session import JSONSession, SessionBase
        ->  from praisonsession import JSONSession, SessionBase

Every call the reference lists: ``SessionBase.__init__(session_id)`` and ``session_id``;
``JSONSession.__init__(session_id, save_dir)``, ``save_path``, and ``save_session_state`` /
``load_session_state`` taking only the state modules. The file at ``save_path`` is AgentScope's
own format, so AgentScope itself reads it back.
"""

import asyncio
import json
import os
import tempfile

from praisonsession import JSONSession, SessionBase, StateModule


class Counter(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.register_state("turns")


async def main() -> None:
    counter = Counter()
    counter.turns = 3
    await session.save_session_state(counter=counter)
    with open(session.save_path, encoding="utf-8") as file:
        print("saved:", json.load(file))

    restored = Counter()
    await session.load_session_state(counter=restored)
    print("loaded turns:", restored.turns)

    fresh = JSONSession(session_id="never_saved", save_dir=save_dir)
    await fresh.load_session_state(counter=restored)  # a missing file is skipped
    print("after loading a session never saved:", restored.turns)


with tempfile.TemporaryDirectory(prefix="agentscope-000-") as save_dir:  # removed at the end
    session = JSONSession(session_id="session_2025-08-08", save_dir=save_dir)
    print("is a SessionBase:", isinstance(session, SessionBase))
    print("session_id:", session.session_id)
    print("save_path:", os.path.relpath(session.save_path, save_dir))
    asyncio.run(main())
