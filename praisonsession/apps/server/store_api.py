"""The store routes: ``POST <agent path>/store/<operation>`` runs one store operation.

They are what a remote session's ``RemoteBackend`` calls: each takes a JSON object naming the
session (``user_id``, ``session_id``) and the operation's arguments, and answers
``{"result": ...}``. Everything is checked here as a local store checks its callers (ids,
keys, JSON data, numbers), then run on the server's store within the server's timeout.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..._internal.checks import check_count
from ..._internal.identifiers import check_key, check_session_id, check_user_id
from ...errors import InvalidValueError
from ...stores.api import UNSET, Key, LogWrite, SessionBase, check_messages
from ...stores.backend import StoreBackend
from ...stores.record import check_ttl

__all__ = ["OPERATIONS", "run_operation"]

Body = dict[str, Any]
Operation = Callable[[SessionBase, Body], Awaitable[Any]]


async def run_operation(store: SessionBase, operation: str, body: Any) -> Any:
    if not isinstance(body, dict):
        raise InvalidValueError(
            f"The body of store operation {operation!r} must be a JSON object, got "
            f"{type(body).__name__}."
        )
    return await OPERATIONS[operation][0](store, body)


def _backend(store: SessionBase) -> StoreBackend:
    """The store's backend as the routes call it: behind the store's key guard, so a server
    without a key hands out no ciphertext and writes into no encrypted session."""
    return store.backend


# -- reading the body -----------------------------------------------------------------------


def _key(body: Body) -> Key:
    if "session_id" not in body:
        raise InvalidValueError("The body names no session_id.")
    return Key(check_user_id(body.get("user_id")), check_session_id(body["session_id"]))


def _flag(body: Body, name: str, default: bool = False) -> bool:
    value = body.get(name, default)
    if not isinstance(value, bool):
        raise InvalidValueError(f"{name} must be true or false, got {value!r}.")
    return value


def _int(body: Body, name: str, default: int | None = None, *, low: int = 0) -> int | None:
    value = body.get(name, default)
    if value is None:
        return None
    return check_count(value, name, low=low)


def _object(body: Body, name: str) -> dict[str, Any]:
    value = body.get(name, {})
    if not isinstance(value, dict):
        raise InvalidValueError(f"{name} must be a JSON object, got {type(value).__name__}.")
    return value


def _names(body: Body, name: str, what: str = "state key") -> list[str] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, list):
        raise InvalidValueError(f"{name} must be a list of names, got {type(value).__name__}.")
    return [check_key(item, what) for item in value]


def _ttl(body: Body) -> Any:
    return check_ttl(body["ttl"]) if "ttl" in body else UNSET


def _write(value: Any) -> LogWrite:
    if not isinstance(value, dict):
        raise InvalidValueError("A log write must be an object with path, messages and start.")
    start = value.get("start")
    if start is not None:
        check_count(start, "A log write's start (null: replace, -1: append)", low=-1)
    path = check_key(value.get("path"), "log name")
    return LogWrite(path, check_messages(value.get("messages", [])), start)


def _as_sent(body: Body, name: str) -> Any:
    """A field passed on as the client sent it: the store checks it as it checks any caller's."""
    return body.get(name)


def _info(info: Any) -> Any:
    return None if info is None else info.to_json()


# -- the operations -------------------------------------------------------------------------


async def _create(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    info = await store.create_session(
        key.session_id, key.user_id, ttl=_ttl(body), metadata=_object(body, "metadata")
    )
    return info.to_json()


async def _get_info(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return _info(await store.get_info(key.session_id, key.user_id))


async def _set_metadata(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return (
        await _backend(store).merge_record_metadata(key, metadata=_object(body, "metadata"))
    ).to_json()


async def _list(store: SessionBase, body: Body) -> Any:
    found = await store.list_sessions(
        check_user_id(body.get("user_id")),
        limit=_int(body, "limit", 100, low=1) or 100,
        after=body.get("after"),
    )
    return [info.to_json() for info in found]


async def _delete(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return await store.delete_session(key.session_id, key.user_id)


async def _delete_without_state(store: SessionBase, body: Body) -> Any:
    return await _backend(store).delete_record_without_state(_key(body))


async def _touch(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return _info(await store.touch(key.session_id, key.user_id, ttl=_ttl(body)))


async def _purge(store: SessionBase, body: Body) -> Any:
    return await store.purge_expired()


async def _get_state(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return await _backend(store).read_record_state(
        key, names=_names(body, "names"), must_exist=_flag(body, "must_exist")
    )


async def _patch(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return await store.patch_state(
        key.session_id,
        key.user_id,
        _object(body, "updates"),
        delete=_names(body, "deletes") or [],
        replace=_flag(body, "replace"),
        expected_version=_int(body, "expected_version"),
        must_exist=_flag(body, "must_exist"),
    )


async def _increment(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return await store.increment(
        key.session_id,
        key.user_id,
        _as_sent(body, "name"),
        body.get("amount", 1),
        body.get("default", 0),
        must_exist=_flag(body, "must_exist"),
    )


def _modules(body: Body) -> tuple[dict[str, Any], list[LogWrite]]:
    """The module ``documents`` and log ``writes`` of a body, checked."""
    documents = _object(body, "documents")
    for name in documents:
        check_key(name, "module name")
    writes = body.get("writes", [])
    if not isinstance(writes, list):
        raise InvalidValueError("writes must be a list of log writes.")
    return documents, [_write(w) for w in writes]


async def _save_modules(store: SessionBase, body: Body) -> Any:
    documents, writes = _modules(body)
    return await _backend(store).write_modules(_key(body), documents=documents, writes=writes)


async def _create_with_modules(store: SessionBase, body: Body) -> Any:
    documents, writes = _modules(body)
    return await _backend(store).create_record_with_modules(
        _key(body), metadata=_object(body, "metadata"), documents=documents, writes=writes
    )


async def _load_modules(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    stored = await _backend(store).read_modules(
        key, names=_names(body, "names", "module name") or []
    )
    return None if stored is None else {"documents": stored.documents, "logs": stored.logs}


async def _append(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    write = _write(body.get("write"))
    if write.start is None:
        raise InvalidValueError("An append's start must be -1 (at the end) or a length.")
    return await _backend(store).append_log(key, write=write)


async def _read_log(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return await store.read_messages(
        key.session_id,
        key.user_id,
        _as_sent(body, "path"),
        _int(body, "start", 0) or 0,
        _int(body, "stop"),
    )


async def _count_log(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    return await store.message_count(key.session_id, key.user_id, _as_sent(body, "path"))


async def _truncate_log(store: SessionBase, body: Body) -> Any:
    key = _key(body)
    path = check_key(body.get("path"), "log name")
    length = _int(body, "length")
    if length is None:
        raise InvalidValueError("truncate_log needs the length to keep: a whole number >= 0.")
    return await _backend(store).truncate_log(
        key, path=path, length=length, expected=_int(body, "expected")
    )


async def _list_by_prefix(store: SessionBase, body: Body) -> Any:
    prefix = body.get("prefix", "")
    if not isinstance(prefix, str):
        raise InvalidValueError(f"prefix must be text, got {type(prefix).__name__}.")
    after = body.get("after")
    if after is not None:
        if not (isinstance(after, list) and len(after) == 2):
            raise InvalidValueError("after must be [session_id, user_id] of the last page.")
        after = (check_session_id(after[0]), check_user_id(after[1]))
    limit = _int(body, "limit", 100, low=1) or 100
    found = await _backend(store).list_records_by_prefix(
        prefix, limit=min(limit, 10_000), after=after
    )
    return [info.to_json() for info in found]


#: Each operation, and what its body holds besides ``user_id`` and ``session_id`` (for the
#: API docs).
OPERATIONS: dict[str, tuple[Operation, str]] = {
    "create": (_create, "Open a session (create it, or start it afresh): `ttl`, `metadata`."),
    "info": (_get_info, "The session's metadata, or null once it is gone."),
    "set_metadata": (_set_metadata, "Merge `metadata` (an object) into the session's."),
    "list": (_list, "One page of the user's sessions: `limit`, `after` (no session_id)."),
    "delete": (_delete, "Delete the session; true if there was something to delete."),
    "delete_without_state": (
        _delete_without_state,
        "Delete the live session only if its state holds no key, checked and deleted in one "
        "step; true if it went.",
    ),
    "touch": (_touch, "Restart the TTL (`ttl`: a new one, or null for none)."),
    "purge": (_purge, "Remove every expired session of the store; how many went."),
    "get_state": (_get_state, "The key-value state (`names`: only these), `must_exist`."),
    "patch": (
        _patch,
        "Set `updates` and remove `deletes` atomically (`replace`, `expected_version`, "
        "`must_exist`); the new version.",
    ),
    "increment": (
        _increment,
        "Add `amount` to `name` atomically (from `default`), `must_exist`; the new value.",
    ),
    "save_modules": (
        _save_modules,
        "Store module `documents` and log `writes` ({path, messages, start}) in one step; "
        "each written log's length.",
    ),
    "create_with_modules": (
        _create_with_modules,
        "Create the session, which must not exist (409 if it does), with `metadata`, module "
        "`documents` and log `writes` ({path, messages, start}) in one step; each written "
        "log's length.",
    ),
    "load_modules": (_load_modules, "The documents and logs of modules `names`, or null."),
    "append": (_append, "Append `write` ({path, messages, start}) to a log; its new length."),
    "read_log": (_read_log, "Messages `start`:`stop` of the log at `path`."),
    "count_log": (_count_log, "How many messages the log at `path` holds."),
    "truncate_log": (
        _truncate_log,
        "Keep the first `length` messages of the log at `path` (`expected`: only if it holds "
        "that many); the messages removed.",
    ),
    "list_by_prefix": (
        _list_by_prefix,
        "Every user's sessions whose id starts with `prefix`: `limit`, `after` ([session_id, "
        "user_id] of the last page). Admin only.",
    ),
}
