"""``python -m praisonsession.demo``: what a Session remembers, across processes.

Runs on the embedded default (SQLite under ./.praisonsession/): no server, no network, no key.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from . import Session

SECOND_PROCESS = textwrap.dedent(
    """
    from praisonsession import Session

    session = Session(session_id="demo_chat", user_id="ada")
    print("  [process 2] restored state:", session.restore_state())
    print("  [process 2] increment_state('turns') ->", session.increment_state("turns"))
    """
)


def main() -> None:
    print("1. A session with state, in this process")
    session = Session(session_id="demo_chat", user_id="ada")
    session.clear_state()
    session.set_state("score", 10)
    print(
        "   set score=10, increment_state('score', increment=5) ->",
        session.increment_state("score", increment=5),
    )
    session.save_state({"profile": {"name": "Ada", "likes": ["tea", "maths"]}, "turns": 1})
    print("   restore_state() ->", session.restore_state())

    print("2. The same session opened by a second, separate process")
    subprocess.run([sys.executable, "-c", SECOND_PROCESS], check=True)
    print("   back in process 1, turns =", session.get_state("turns"))

    print("3. TTL: a session that lives for 1 second")
    short = Session(session_id="demo_short", user_id="ada", session_ttl=1)
    short.set_state("note", "gone soon")
    print(
        f"   time_to_expiry() -> {short.time_to_expiry():.2f} s, is_expired() ->",
        short.is_expired(),
    )
    time.sleep(1.2)
    print("   after 1.2 s: is_expired() ->", short.is_expired())

    print("4. Listing ada's live sessions")
    for info in session.list_sessions():
        print(f"   - {info.session_id} (version {info.version})")
    print(f"Stored in {session.store.url}")
    session.close()
    short.close()


if __name__ == "__main__":
    main()
