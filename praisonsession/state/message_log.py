"""``MessageLog``: a conversation as an append-only list of JSON dicts.

Stores persist a log by appending only the messages they have not seen yet, so saving one new
turn costs the same at 10,000 messages as at 10. The log remembers, per place it was saved to,
how many of its messages are already there; any edit other than an append forgets that, and
the next save rewrites the log in full.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, overload

from ..errors import InvalidValueError
from .module import Apply, StateModule, detach

__all__ = ["MessageLog"]

Message = dict[str, Any]


class MessageLog(StateModule):
    """A list of messages (JSON dicts such as ``{"role": "user", "content": "hi"}``)."""

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__()
        self._messages: list[Message] = []
        # place (store, user_id, session_id, path) -> how many leading messages it holds
        self._persisted: dict[tuple[Any, ...], int] = {}
        self.extend(messages)

    # -- list behaviour -------------------------------------------------------------------

    def append(self, message: Message) -> None:
        self._messages.append(_checked(message, len(self._messages)))

    def extend(self, messages: Iterable[Message]) -> None:
        start = len(self._messages)
        new = [_checked(m, start + i) for i, m in enumerate(messages)]
        self._messages.extend(new)

    def clear(self) -> None:
        self._messages.clear()
        self._persisted.clear()

    def insert(self, index: int, message: Message) -> None:
        self._messages.insert(index, _checked(message, index))
        self._persisted.clear()

    def pop(self, index: int = -1) -> Message:
        message = self._messages.pop(index)
        self._persisted.clear()
        return message

    def index(self, message: Message, start: int = 0, stop: int | None = None) -> int:
        return self._messages.index(message, start, len(self) if stop is None else stop)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._messages[index]

    def __setitem__(self, index: int, message: Message) -> None:
        self._messages[index] = _checked(message, index)
        self._persisted.clear()

    def __delitem__(self, index: int | slice) -> None:
        del self._messages[index]
        self._persisted.clear()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageLog):
            return self._messages == other._messages
        if isinstance(other, list):
            return self._messages == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageLog({len(self)} messages)"

    def to_list(self) -> list[Message]:
        """A detached copy of the messages."""
        return detach(self._messages, "MessageLog")

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
        return [lambda: self._replace(messages)]

    def _replace(self, messages: list[Message], place: tuple[Any, ...] | None = None) -> None:
        self._messages = messages
        self._persisted.clear()
        if place is not None:
            self._persisted[place] = len(messages)


def _checked(message: Any, index: int) -> Message:
    if not isinstance(message, dict):
        raise InvalidValueError(
            f"Message {index} is a {type(message).__name__}; a MessageLog holds dicts such as "
            '{"role": "user", "content": "hi"}.'
        )
    return detach(message, f"message {index}")
