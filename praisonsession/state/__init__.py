"""The state floor: what gets persisted. ``StateModule`` (AgentScope's state modules, fixed:
detached state, transactional loads), ``MessageLog`` (an append-only log that tells appends
from edits), the protocol foreign modules meet (``protocol.py``) and the codec that turns a
module tree into stored documents (``codec.py``).

It imports only the ground floor; the stores and everything above them import it.
"""

from .message_log import MessageLog
from .module import LoadResult, StateModule

__all__ = ["LoadResult", "MessageLog", "StateModule"]
