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
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .._internal.identifiers import DEFAULT_USER
from .._internal.json_data import dumps, loads
from ..errors import (
    AmbiguousLegacyDataError,
    InvalidIdError,
    InvalidValueError,
    SessionCorruptedError,
)
from .record import Key

__all__ = [
    "LAYOUTS",
    "agentscope_name",
    "check_layout",
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

#: ``layout=`` of the JSON and Redis stores: this library's own (isolated, append-only logs)
#: or AgentScope's (its file names and keys, so that AgentScope reads what was saved).
LAYOUTS = ("native", "agentscope")


def check_layout(layout: Any) -> str:
    if layout not in LAYOUTS:
        raise InvalidValueError(
            f"layout must be 'native' (this library's files and keys) or 'agentscope' "
            f"(AgentScope's own, so that AgentScope loads what is saved), got {layout!r}."
        )
    return str(layout)


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
