"""What gets persisted: state modules and message logs."""

from .message_log import MessageLog
from .module import LoadResult, StateModule

__all__ = ["LoadResult", "MessageLog", "StateModule"]
