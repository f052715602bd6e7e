"""Containers that tell their ``MessageLog`` when they are changed in place.

``log[0]["content"] = "EDITED"`` changes a dict the log handed out, behind the log's back. To
save exactly what the log holds without comparing the whole history on every save, the log
hands out its messages as :class:`TrackedDict` (and nested :class:`TrackedList`) objects: plain
``dict``/``list`` subclasses, so ``json``, ``isinstance`` and equality see no difference, whose
mutating methods bump the owner's revision. Values put into them are copied into tracked
containers too, so a change made later through another reference cannot slip past.
"""

from __future__ import annotations

from typing import Any, Protocol, SupportsIndex


class Owner(Protocol):
    def _edited(self) -> None: ...


def track(value: Any, owner: Owner) -> Any:
    """``value`` with every dict and list in it made tracked, reporting to ``owner``.

    Containers already tracked for this owner are kept as they are (no copy); others, including
    ones tracked for another owner, are copied.
    """
    kind = type(value)
    if (kind is TrackedDict or kind is TrackedList) and value._owner is owner:
        return value
    if isinstance(value, dict):
        return TrackedDict(owner, {k: track(v, owner) for k, v in value.items()})
    if isinstance(value, list):
        return TrackedList(owner, [track(v, owner) for v in value])
    return value


class TrackedDict(dict[str, Any]):
    __slots__ = ("_owner",)

    def __init__(self, owner: Owner, items: dict[str, Any]) -> None:
        super().__init__(items)
        self._owner = owner

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, track(value, self._owner))
        self._owner._edited()

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self._owner._edited()

    # ``|=`` takes what ``update`` takes; mypy would have it match ``dict.__or__`` (dicts only)
    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[override, misc]  # any mapping
        self.update(other)
        return self

    def update(self, *args: Any, **kwargs: Any) -> None:
        merged = dict(*args, **kwargs)
        super().update({k: track(v, self._owner) for k, v in merged.items()})
        self._owner._edited()

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str, *default: Any) -> Any:
        had = key in self
        value = super().pop(key, *default)
        if had:
            self._owner._edited()
        return value

    def popitem(self) -> tuple[str, Any]:
        item = super().popitem()
        self._owner._edited()
        return item

    def clear(self) -> None:
        super().clear()
        self._owner._edited()

    def copy(self) -> dict[str, Any]:
        """A plain (untracked) shallow copy, as ``dict.copy`` gives."""
        return dict(self)


class TrackedList(list[Any]):
    __slots__ = ("_owner",)

    def __init__(self, owner: Owner, items: list[Any]) -> None:
        super().__init__(items)
        self._owner = owner

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            value = [track(v, self._owner) for v in value]
        else:
            value = track(value, self._owner)
        super().__setitem__(index, value)
        self._owner._edited()

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        self._owner._edited()

    # ``+=`` takes what ``extend`` takes; mypy would have it match ``list.__add__`` (lists only)
    def __iadd__(self, other: Any) -> TrackedList:  # type: ignore[misc]  # any iterable
        self.extend(other)
        return self

    def __imul__(self, count: SupportsIndex) -> TrackedList:
        super().__imul__(count)
        self._owner._edited()
        return self

    def append(self, value: Any) -> None:
        super().append(track(value, self._owner))
        self._owner._edited()

    def extend(self, values: Any) -> None:
        super().extend([track(v, self._owner) for v in values])
        self._owner._edited()

    def insert(self, index: SupportsIndex, value: Any) -> None:
        super().insert(index, track(value, self._owner))
        self._owner._edited()

    def pop(self, index: SupportsIndex = -1) -> Any:
        value = super().pop(index)
        self._owner._edited()
        return value

    def remove(self, value: Any) -> None:
        super().remove(value)
        self._owner._edited()

    def clear(self) -> None:
        super().clear()
        self._owner._edited()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        super().sort(*args, **kwargs)
        self._owner._edited()

    def reverse(self) -> None:
        super().reverse()
        self._owner._edited()

    def copy(self) -> list[Any]:
        return list(self)
