"""``MessageLog``: a conversation as a list of JSON dicts that stores can append to cheaply.

A store saves a log by appending only the messages it has not acknowledged yet, so saving one
new turn costs the same at 10,000 messages as at 10. What each store has acknowledged is the
store's business (see ``stores/acks.py``); the log only says whether it was changed other than
by appending, through :attr:`MessageLog.revision`. Every such change, including an edit made
in place to a message it handed out (``log[0]["content"] = "EDITED"``), moves the revision,
and the next save then writes the log exactly as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from ..errors import InvalidValueError
from .module import Apply, StateModule, detach
from .tracked import TrackedDict, track

__all__ = ["MessageLog"]

Message = dict[str, Any]


class MessageLog(StateModule):
    """A list of messages (JSON dicts such as ``{"role": "user", "content": "hi"}``).

    It holds its own copies: appending copies the message, and changes made through the dicts
    it hands out are seen by the next save.
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__()
        # plain dicts until handed out; then tracked ones that report in-place edits
        self._messages: list[Message] = []
        self._revision = 0
        self.extend(messages)

    # -- what stores read ---------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """A number that changes whenever the log changes other than by appending."""
        return self._revision

    def messages_since(self, start: int) -> list[Message]:
        """The messages from index ``start`` on, for a store to write (read them, never change
        them)."""
        return self._messages[start:]

    def view(self) -> Sequence[Message]:
        """Every message, without a copy: for reading on a hot path (an agent's turn at 10,000
        messages would copy and free 10,000 references), never for changing."""
        return self._messages

    def absorb(self, start: int, messages: list[Message]) -> None:
        """Insert messages another writer stored at ``start``, before this log's unsaved tail.

        A store calls this to bring the log into the order the store holds; it is not an edit
        (the revision stays), since the store already has these messages there.
        """
        self._messages[start:start] = messages

    def reset(self, messages: list[Message]) -> None:
        """Replace every message with ``messages`` as a store holds them (trusted JSON data)."""
        self._messages = messages
        self._revision += 1

    def _edited(self) -> None:
        self._revision += 1

    # -- list behaviour -------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """Add one message at the end (a save appends it, rewriting nothing)."""
        self._messages.append(_checked(message, len(self._messages)))

    def extend(self, messages: Iterable[Message]) -> None:
        """Add messages at the end (a save appends them, rewriting nothing)."""
        start = len(self._messages)
        new = [_checked(m, start + i) for i, m in enumerate(messages)]
        self._messages.extend(new)

    def clear(self) -> None:
        """Remove every message (the next save rewrites the log)."""
        self._messages.clear()
        self._edited()

    def insert(self, index: int, message: Message) -> None:
        """Insert a message before ``index`` (the next save rewrites the log)."""
        self._messages.insert(index, _checked(message, index))
        self._edited()

    def pop(self, index: int = -1) -> Message:
        """Remove and return the message at ``index`` (the next save rewrites the log)."""
        message = self._messages.pop(index)
        self._edited()
        return message

    def remove(self, message: Message) -> None:
        """Remove the first message equal to ``message`` (the next save rewrites the log)."""
        self._messages.remove(message)
        self._edited()

    def index(self, message: Message, start: int = 0, stop: int | None = None) -> int:
        """The position of the first message equal to ``message``."""
        return self._messages.index(message, start, len(self) if stop is None else stop)

    def count(self, message: Message) -> int:
        """How many messages equal ``message``."""
        return self._messages.count(message)

    def __contains__(self, message: object) -> bool:
        return message in self._messages

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        for index in range(len(self._messages)):
            yield self._handed_out(index)

    def __reversed__(self) -> Iterator[Message]:
        for index in range(len(self._messages) - 1, -1, -1):
            yield self._handed_out(index)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self._handed_out(i) for i in range(*index.indices(len(self._messages)))]
        if index < 0:
            index += len(self._messages)
        if not 0 <= index < len(self._messages):
            raise IndexError("MessageLog index out of range")
        return self._handed_out(index)

    def __setitem__(self, index: int, message: Message) -> None:
        self._messages[index] = _checked(message, index)
        self._edited()

    def __delitem__(self, index: int | slice) -> None:
        del self._messages[index]
        self._edited()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageLog):
            return self._messages == other._messages
        if isinstance(other, list):
            return self._messages == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable: mutable, equal by content

    def __repr__(self) -> str:
        return f"MessageLog({len(self)} messages)"

    def to_list(self) -> list[Message]:
        """A detached copy of the messages."""
        messages: list[Message] = detach(self._messages, "MessageLog")
        return messages

    def _handed_out(self, index: int) -> Message:
        """The message at ``index``, tracked, so that an edit made through it is seen."""
        message = self._messages[index]
        if type(message) is not TrackedDict or message._owner is not self:
            message = self._messages[index] = track(message, self)
        return message

    # -- state ----------------------------------------------------------------------------

    def _snapshot(self, path: str, logs: dict[str, Any] | None) -> dict[str, Any]:
        if logs is not None:
            logs[path] = self
            return {}
        return {"messages": detach(self._messages, path)}

    def _plan_load(
        self,
        state: Any,
        strict: bool,
        prefix: str,
        missing: list[str],
        unexpected: list[str],
        trusted: bool = False,
    ) -> list[Apply]:
        where = prefix.rstrip(".") or "MessageLog"
        if not isinstance(state, dict):
            raise InvalidValueError(
                f"The state for {where} must be a dict, got {type(state).__name__}."
            )
        unexpected.extend(prefix + key for key in state if key != "messages")
        if "messages" not in state:
            missing.append(prefix + "messages")
            return []
        items = state["messages"]
        if not isinstance(items, list):
            raise InvalidValueError(f"{where}.messages must be a list of dicts.")
        if trusted and all(type(m) is dict for m in items):
            messages = items
        else:
            messages = [_checked(m, i) for i, m in enumerate(items)]
        return [lambda: self.reset(messages)]


def _checked(message: Any, index: int) -> Message:
    if not isinstance(message, dict):
        raise InvalidValueError(
            f"Message {index} is a {type(message).__name__}; a MessageLog holds dicts such as "
            '{"role": "user", "content": "hi"}.'
        )
    checked: Message = detach(message, f"message {index}")
    return checked
