"""Which objects a store saves: ours, or anyone's that speaks the state-dict protocol.

A store takes modules by protocol, not by class: anything with ``state_dict()`` and
``load_state_dict(state_dict, strict=...)`` (AgentScope's ``StateModule``, its agents,
memories and toolkits, or another framework's objects) is saved as the JSON data its
``state_dict()`` returns. Our own :class:`~praisonsession.state.module.StateModule` keeps its
extras (append-only message logs, transactional loads); the functions here are what the
stores do with the others.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable
from typing import Any, Protocol

from .._internal.json_data import detach, dumps
from ..errors import InvalidValueError

__all__ = ["Stateful", "check_modules", "foreign_state", "is_ours", "load_foreign"]


class Stateful(Protocol):
    """What a store can save: our StateModule, AgentScope's, or any object like them."""

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = ...) -> Any: ...


def is_ours(module: Any) -> bool:
    """True for this library's StateModule (it has message logs and plans its loads)."""
    from .module import StateModule

    return isinstance(module, StateModule)


def check_modules(call: str, modules: dict[str, Any]) -> None:
    """Refuse, before anything is read or written, an object that cannot be saved."""
    for name, module in modules.items():
        if is_ours(module):
            continue
        state_dict = getattr(module, "state_dict", None)
        load_state_dict = getattr(module, "load_state_dict", None)
        if not callable(state_dict) or not callable(load_state_dict):
            raise InvalidValueError(
                f"{call}({name}=...) got a {type(module).__name__}, which has no state_dict() "
                "and load_state_dict(state_dict, strict=...). Pass state modules: this "
                "library's StateModule, AgentScope's (agents, memories, toolkits), or any "
                "object with those two methods."
            )
        for method in (state_dict, load_state_dict):
            if inspect.iscoroutinefunction(method):
                raise InvalidValueError(
                    f"{call}({name}=...): {type(module).__name__}.{method.__name__} is a "
                    "coroutine function; stores call state_dict() and load_state_dict() "
                    "synchronously, as AgentScope's do. Pass an object whose two methods are "
                    "plain functions (wrap it if its framework offers only async ones)."
                )


def _kept(state: Any) -> Callable[[], Any]:
    """A copy of ``state`` to restore from, made cheaply: as JSON text (C speed, and most
    loads succeed, so it is rarely decoded), else a deep copy."""
    try:
        text = dumps(state)
    except (TypeError, ValueError):
        kept = copy.deepcopy(state)
        return lambda: copy.deepcopy(kept)
    return lambda: json.loads(text)


def foreign_state(module: Any, path: str) -> Any:
    """The JSON data of a foreign module's ``state_dict()``, detached from the live object.

    A value that is not JSON data raises InvalidValueError naming its path, before anything
    is written.
    """
    state = module.state_dict()
    if inspect.isawaitable(state):
        close = getattr(state, "close", None)
        if callable(close):
            close()  # never awaited: no "coroutine was never awaited" warning
        raise InvalidValueError(
            f"{path}: {type(module).__name__}.state_dict() returned an awaitable; stores need "
            "the state dict itself. Pass an object whose state_dict() is synchronous."
        )
    if not isinstance(state, dict):
        raise InvalidValueError(
            f"{path}: {type(module).__name__}.state_dict() returned a {type(state).__name__}; "
            "a state dict is a dict of JSON data."
        )
    return detach(state, path)


def load_foreign(modules: dict[str, Any], states: dict[str, Any]) -> Callable[[], None]:
    """Load ``states[name]`` into each foreign module, all or none: if one load raises, the
    modules loaded before it get their previous state back. Returns the undo, for a caller
    that fails after this step.

    Each load is ``module.load_state_dict(state)``: the module's own default ``strict``, as
    AgentScope's sessions call it.
    """
    done: list[tuple[Any, Any]] = []

    def undo() -> None:
        for module, before in reversed(done):
            module.load_state_dict(before())

    for name, module in modules.items():
        if name not in states:
            continue
        done.append((module, _kept(module.state_dict())))  # half-loaded ones too
        try:
            result = module.load_state_dict(states[name])
        except BaseException:
            undo()
            raise
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if callable(close):
                close()
            undo()
            raise InvalidValueError(
                f"{name}: {type(module).__name__}.load_state_dict() returned an awaitable; "
                "stores load synchronously, as AgentScope's do."
            )
    return undo
