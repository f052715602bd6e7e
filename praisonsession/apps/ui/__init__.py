"""The session browser: ``praisonsession ui`` and the ``/ui`` page of ``praisonsession serve``.

A read-only web page over any store (users, sessions, state, history with tool calls,
summaries, usage, snapshots, the fork tree, memories), served by Starlette from files in this
package.
Imported only by the command and the server: ``import praisonsession`` never loads it.
"""

from __future__ import annotations

from .app import create_ui_app

__all__ = ["create_ui_app"]
