"""``where=`` filters for memory and knowledge: checked once, then run by Chroma or in Python.

One small language (equality, ``$ne``, ``$in``, ``$nin``, ``$gt``/``$gte``/``$lt``/``$lte``,
``$and``/``$or``) is parsed into a :class:`Where` tree. Long-term memory and knowledge hand it to
Chroma (:meth:`Where.to_chroma`); short-term notes, which live in a message log, test it in
Python (:meth:`Where.matches`). Both read the same tree, so a filter means the same thing on
every kind of memory. A malformed filter raises ``InvalidValueError`` showing the accepted form.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from ...errors import InvalidValueError

__all__ = ["ACCEPTED", "Where", "parse_where"]

ACCEPTED = (
    'where={"topic": "food"}, {"topic": {"$in": ["food", "drink"]}}, '
    '{"stars": {"$gte": 4}}, {"created_at": {"$gt": 1767225600}} (seconds since the epoch, '
    'or a datetime), {"$and": [{...}, {...}]} or {"$or": [{...}, {...}]}; '
    "operators: $eq $ne $in $nin $gt $gte $lt $lte; values: str, int, float, bool"
)
_COMPARE = ("$gt", "$gte", "$lt", "$lte")
_OPERATORS = ("$eq", "$ne", "$in", "$nin", *_COMPARE)
Scalar = str | int | float | bool


@dataclass(frozen=True)
class Where:
    """A checked filter: ``op`` is ``$and``/``$or`` (over ``parts``) or a field operator."""

    op: str
    field: str = ""
    value: Any = None
    parts: tuple[Where, ...] = ()

    def to_chroma(self, rename: Callable[[str], str] = str) -> dict[str, Any]:
        """Chroma's ``where`` for this filter, with each field renamed as stored."""
        if self.op in ("$and", "$or"):
            parts = [part.to_chroma(rename) for part in self.parts]
            return parts[0] if len(parts) == 1 else {self.op: parts}
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {rename(self.field): {self.op: value}}

    def matches(self, record: dict[str, Any]) -> bool:
        """Whether ``record`` (field -> value) passes; a missing field passes nothing."""
        if self.op == "$and":
            return all(part.matches(record) for part in self.parts)
        if self.op == "$or":
            return any(part.matches(record) for part in self.parts)
        if self.field not in record:
            return False
        found = record[self.field]
        if self.op in ("$in", "$nin"):
            inside = any(_same(found, value) for value in self.value)
            return inside if self.op == "$in" else not inside
        if self.op in ("$eq", "$ne"):
            return _same(found, self.value) == (self.op == "$eq")
        if not _number(found):
            return False
        passes: bool = {
            "$gt": found > self.value,
            "$gte": found >= self.value,
            "$lt": found < self.value,
            "$lte": found <= self.value,
        }[self.op]
        return passes

    def fields(self) -> set[str]:
        if self.op in ("$and", "$or"):
            return set().union(*(part.fields() for part in self.parts))
        return {self.field}


def parse_where(where: Any, what: str = "where") -> Where | None:
    """``where`` checked into a :class:`Where`; None for no filter (None or ``{}``)."""
    if where is None or where == {}:
        return None
    return _parse(where, what)


def _parse(where: Any, what: str) -> Where:
    if not isinstance(where, dict) or not where:
        _refuse(what, f"a filter must be a non-empty dict, got {where!r}")
    parts = []
    for key, value in where.items():
        if not isinstance(key, str) or not key:
            _refuse(what, f"a field name must be a non-empty str, got {key!r}")
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                _refuse(what, f"{key} takes a non-empty list of filters, got {value!r}")
            inner = tuple(_parse(item, f"{what}[{key!r}]") for item in value)
            parts.append(Where(key, parts=inner))
        elif key.startswith("$"):
            _refuse(what, f"{key!r} is not a known operator at this level (only $and, $or)")
        else:
            parts.append(_field(key, value, what))
    return parts[0] if len(parts) == 1 else Where("$and", parts=tuple(parts))


def _field(field: str, condition: Any, what: str) -> Where:
    if not isinstance(condition, dict):
        return Where("$eq", field, _scalar(condition, field, what))
    if len(condition) != 1:
        parts = tuple(_field(field, {op: value}, what) for op, value in condition.items())
        if not parts:
            _refuse(what, f"the condition on {field!r} is empty")
        return Where("$and", parts=parts)
    ((op, value),) = condition.items()
    if op not in _OPERATORS:
        _refuse(what, f"{op!r} on {field!r} is not an operator")
    if op in ("$in", "$nin"):
        if not isinstance(value, (list, tuple)) or not value:
            _refuse(what, f"{op} on {field!r} takes a non-empty list, got {value!r}")
        values = tuple(_scalar(item, field, what) for item in value)
        if len({_kind(item) for item in values}) > 1:
            _refuse(what, f"the values of {op} on {field!r} must all be of one type")
        return Where(op, field, values)
    if op in _COMPARE:
        value = _timestamp(value)
        if not _number(value):
            _refuse(what, f"{op} on {field!r} compares numbers, got {value!r}")
        return Where(op, field, value)
    return Where(op, field, _scalar(value, field, what))


def _scalar(value: Any, field: str, what: str) -> Scalar:
    value = _timestamp(value)
    if isinstance(value, float) and value != value:
        _refuse(what, f"the value for {field!r} is NaN")
    if not isinstance(value, (str, int, float, bool)):
        _refuse(what, f"the value for {field!r} must be a str, int, float or bool, got {value!r}")
    return value


def _timestamp(value: Any) -> Any:
    """A datetime compares as seconds since the epoch, as creation and update times are kept."""
    if isinstance(value, dt.datetime):
        return value.timestamp()
    return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    return "number" if _number(value) else type(value).__name__


def _same(found: Any, value: Any) -> bool:
    return _kind(found) == _kind(value) and found == value


def _refuse(what: str, problem: str) -> NoReturn:
    raise InvalidValueError(f"{what}: {problem}. Accepted: {ACCEPTED}.")
