"""AgentScope's JSON session files: where AgentScope put them, and what is in them.

AgentScope 1.0's ``JSONSession`` writes ``{save_dir}/{session_id}.json`` for the default user
and ``{save_dir}/{user_id}_{session_id}.json`` otherwise: one JSON object mapping each module
name to its full state dict. Its older, bound API (``JSONSession(session_id, save_dir)``) wrote
``{save_dir}/{session_id}.json``, found through ``save_path``.

That naming is not injective: ``bob_notes.json`` is session ``notes`` of user ``bob`` and also
session ``bob_notes`` of the default user. So a file is adopted automatically only when exactly
one (user, session) pair could have written it; any other is refused with
:class:`~praisonsession.errors.AmbiguousLegacyDataError`, which says how to import it
explicitly (``JSONSession.import_agentscope``). No user's file ever reaches another user.

:class:`AgentScopeFiles` is the module layout that keeps ``save_session_state`` in these files
(``JSONSession(layout="agentscope")``, and the bound API's ``save_path``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ...._internal.file_lock import FileLock
from ...._internal.identifiers import DEFAULT_USER
from ...._internal.json_data import dumps, loads
from ...._internal.runtime import offload
from ....errors import (
    AmbiguousLegacyDataError,
    InvalidIdError,
    SessionCorruptedError,
    SessionNotFoundError,
)
from ...record import Key

T = TypeVar("T")

__all__ = [
    "AgentScopeFiles",
    "FileBackend",
    "agentscope_name",
    "check_owner",
    "held_modules",
    "layout_file",
    "module_states",
    "owners_of",
    "read_modules",
    "record_owner",
    "safe_file",
    "serialise_modules",
]


def agentscope_name(key: Key) -> str:
    """The file name AgentScope 1.0 gives (user_id, session_id); its default user is ours."""
    user = "" if key.user_id == DEFAULT_USER else key.user_id
    return f"{user}_{key.session_id}.json" if user else f"{key.session_id}.json"


def owners_of(name: str) -> list[Key]:
    """Every (user, session) pair AgentScope would have written the file ``name`` for."""
    stem = name[: -len(".json")]
    owners = [Key(DEFAULT_USER, stem)]
    for index, char in enumerate(stem):
        if char == "_" and 0 < index < len(stem) - 1:
            owners.append(Key(stem[:index], stem[index + 1 :]))
    return owners


def safe_file(save_dir: Path, name: str) -> Path | None:
    """``save_dir / name`` if ``name`` is a plain file name (no directory, no dot-file)."""
    unsafe = os.path.basename(name) != name or name.startswith(".") or "\\" in name
    if unsafe or "\0" in name or len(name.encode("utf-8")) > 255:
        return None
    return save_dir / name


def adoptable(save_dir: Path, key: Key) -> Path | None:
    """The AgentScope file of ``key``, if there is one and only ``key`` can own it.

    Raises :class:`AmbiguousLegacyDataError` when the file exists but its name could also
    belong to another (user, session) pair.
    """
    name = agentscope_name(key)
    path = safe_file(save_dir, name)
    if path is None or not path.is_file():
        return None
    owners = owners_of(name)
    if len(owners) > 1:
        raise AmbiguousLegacyDataError(
            f"The AgentScope session file {path} may belong to any of "
            f"{', '.join(f'session {o.session_id!r} of user {o.user_id!r}' for o in owners)}"
            " (AgentScope's file names do not tell them apart), so it was not imported. Import "
            "it for the right one explicitly: JSONSession(save_dir).import_agentscope("
            f"{name!r}, session_id=..., user_id=...), then move the file away; or keep "
            "using AgentScope's files as they are: JSONSession(save_dir, layout='agentscope')."
        )
    return path


def bound_file(save_dir: Path, session_id: str) -> Path:
    """``save_path`` of AgentScope's bound ``JSONSession(session_id, save_dir)``."""
    path = safe_file(save_dir, f"{session_id}.json")
    if path is None:
        raise InvalidIdError(
            f"session_id {session_id!r} cannot name an AgentScope session file (it would leave "
            "save_dir, or is too long); use a plain name such as 'session_2025-08-08'."
        )
    return path


def read_modules(path: Path) -> dict[str, Any]:
    """The module states in an AgentScope file (which wrote lone surrogates as invalid UTF-8
    through ``errors="surrogatepass"``)."""
    what = f"AgentScope session file {path}"
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        raise SessionCorruptedError(what, str(exc)) from None
    modules = loads(text, what)
    if not isinstance(modules, dict) or not all(isinstance(v, dict) for v in modules.values()):
        raise SessionCorruptedError(what, "not a JSON object of module states")
    return modules


def serialise_modules(modules: dict[str, Any]) -> bytes:
    """The bytes of an AgentScope file: exactly ``{name: state_dict}``, nothing else, so that
    ``json.load`` shows what AgentScope's tutorial shows and AgentScope reads it back."""
    return dumps(modules).encode("utf-8")


def layout_file(save_dir: Path, key: Key) -> Path:
    """The file AgentScope 1.0.x keeps ``key`` in, for the store's AgentScope layout."""
    path = safe_file(save_dir, agentscope_name(key))
    if path is None:
        raise InvalidIdError(
            f"Session {key.session_id!r} of user {key.user_id!r} cannot have an AgentScope "
            "session file: its name would leave save_dir, start with a dot or be too long. "
            "Use ids that are plain file names, or the native layout (layout='native')."
        )
    return path


def _owner_file(path: Path) -> Path:
    return path.with_name(f".{path.name}.owner")


def _owner(path: Path) -> list[Any] | None:
    """What this library recorded of ``path``'s last save here: ``[user, session, names,
    stamp]`` (the module names it wrote, and the file's size and mtime just after)."""
    try:
        owner = loads(_owner_file(path).read_bytes(), f"owner of {path}")
    except FileNotFoundError:
        return None
    if not isinstance(owner, list) or len(owner) < 2:
        raise SessionCorruptedError(f"owner of {path}", "not [user_id, session_id, ...]")
    return owner


def check_owner(path: Path, key: Key) -> None:
    """Refuse ``key`` the file ``path`` when this library saved another (user, session) pair
    there: AgentScope's names cannot tell them apart, so one would read the other's data."""
    owner = _owner(path)
    if owner is None or owner[:2] == [key.user_id, key.session_id]:
        return
    user, session = owner[:2]
    raise AmbiguousLegacyDataError(
        f"The AgentScope session file {path} holds session {session!r} of user {user!r}, and "
        f"AgentScope's naming gives session {key.session_id!r} of user {key.user_id!r} the same "
        "file, so it is neither read nor overwritten for them. Keep one of the two in the "
        "native layout (JSONSession(save_dir) without layout='agentscope'), or move it to "
        "an unambiguous id: a session id without '_' for the default user, or a user id "
        "without '_' (praisonsession fork / export + import copy a session to a new id)."
    )


def held_modules(path: Path, saving: dict[str, Any]) -> dict[str, Any]:
    """The modules ``path`` holds that a save of ``saving`` must keep. When this library
    wrote the file last (its size and mtime are as recorded) and every name in it is being
    saved again, nothing is kept and the file is not read: a save then costs what
    AgentScope's does."""
    if not path.is_file():
        return {}
    owner = _owner(path)
    if owner is None or len(owner) != 4 or owner[3] != _stamp(path):
        return read_modules(path)  # AgentScope (or someone) wrote it last: keep what it holds
    return {} if set(owner[2]) <= set(saving) else read_modules(path)


def record_owner(path: Path, key: Key, names: list[str]) -> None:
    """Remember which (user, session) pair saved ``path``, with what (see
    :func:`check_owner` and :func:`held_modules`); written aside, then renamed."""
    owner = _owner_file(path)
    partial = owner.with_name(owner.name + ".tmp")
    record = [key.user_id, key.session_id, sorted(names), _stamp(path)]
    partial.write_bytes(dumps(record).encode("utf-8"))
    os.replace(partial, owner)


def _stamp(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def module_states(documents: dict[str, Any], logs: dict[str, list[Any]]) -> dict[str, Any]:
    """Stored module documents with their message logs put back where each log's dotted path
    says, as ``state_dict()`` returned them: the content of an AgentScope session file."""
    states = dict(documents)
    for path, messages in logs.items():
        name, *parts = path.split(".")
        if name not in states:
            continue
        if not parts:
            if states[name] == {}:
                states[name] = {"messages": messages}
            continue
        node = states[name]
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(parts[-1]) == {}:
            node[parts[-1]] = {"messages": messages}
    return states


class FileBackend(Protocol):
    """What the layout needs of the JSON backend whose directory it shares."""

    save_dir: Path
    lock_timeout: float

    def guarded(self, function: Callable[..., T], *args: Any) -> T: ...

    def write_file(self, path: Path, data: bytes) -> None: ...


class AgentScopeFiles:
    """Modules kept in AgentScope's own files under the backend's ``save_dir``, in its format,
    so that AgentScope loads what is saved here and the other way round. ``bound`` is the
    older API's file at ``save_path`` (``{save_dir}/{session_id}.json``)."""

    def __init__(self, backend: FileBackend, *, bound: bool = False) -> None:
        self.backend = backend
        self.bound = bound

    def file(self, key: Key) -> Path:
        save_dir = self.backend.save_dir
        return bound_file(save_dir, key.session_id) if self.bound else layout_file(save_dir, key)

    async def save(self, key: Key, modules: dict[str, Any]) -> None:
        from ....state.codec import snapshot_module

        path, backend = self.file(key), self.backend
        states = {name: snapshot_module(module, name) for name, module in modules.items()}

        def write() -> None:
            backend.save_dir.mkdir(parents=True, exist_ok=True)
            with FileLock(backend.save_dir / f".{path.name}.lock", backend.lock_timeout):
                check_owner(path, key)
                # modules saved earlier under other names are kept (AgentScope dropped them)
                merged = {**held_modules(path, states), **states}
                backend.write_file(path, serialise_modules(merged))
                record_owner(path, key, list(merged))

        await offload(backend.guarded, write)

    async def load(self, key: Key, modules: dict[str, Any], allow_not_exist: bool) -> None:
        from ....state.codec import load_states

        path = self.file(key)

        def read() -> dict[str, Any] | None:
            check_owner(path, key)
            return read_modules(path) if path.is_file() else None

        states = await offload(self.backend.guarded, read)
        if states is None:
            if not allow_not_exist:
                raise SessionNotFoundError(
                    key.session_id, key.user_id, f"There is no session file {path}."
                )
            import logging

            logging.getLogger("praisonsession").info(
                "Session %r of user %r does not exist (no file %s). Skip loading.",
                key.session_id,
                key.user_id,
                path,
            )
            return
        load_states(modules, states, f"AgentScope session file {path}")

    async def refresh(self, key: Key, modules: dict[str, Any]) -> int:
        """AgentScope's files hold no message logs of ours: nothing to take in."""
        return 0

    def forget(self, key: Key) -> None:
        """Nothing is remembered of these files between calls."""
