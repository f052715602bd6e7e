"""``StateModule``: objects that know how to turn their state into JSON data and back.

It keeps AgentScope's semantics (nested modules register themselves, ``register_state`` with
optional converters, ``state_dict`` / ``load_state_dict``) and fixes what went wrong there:
``state_dict`` returns detached, validated JSON data; ``load_state_dict`` is transactional,
passes ``strict`` down to children and names every missing and unexpected key; reassigning a
module attribute to a plain value unregisters it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._internal.json_data import check_json_data, detach
from ..errors import InvalidValueError, StateDictError

__all__ = ["LoadResult", "StateModule", "detach"]

#: One step of a planned load (what it returns, if anything, is not used).
Apply = Callable[[], object]


@dataclass(frozen=True)
class _Converters:
    to_json: Callable[[Any], Any] | None = None
    from_json: Callable[[Any], Any] | None = None


class LoadResult(NamedTuple):
    """What a non-strict load skipped, by dotted path."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class StateModule:
    """Base class for anything whose state is saved with a session.

    Attributes holding another ``StateModule`` are part of the state automatically; other
    attributes join it through :meth:`register_state`.
    """

    # set with object.__setattr__ in __init__: __setattr__ reads them
    _module_dict: OrderedDict[str, StateModule]
    _attribute_dict: OrderedDict[str, _Converters]

    def __init__(self) -> None:
        object.__setattr__(self, "_module_dict", OrderedDict())
        object.__setattr__(self, "_attribute_dict", OrderedDict())

    # -- registration ---------------------------------------------------------------------

    def __setattr__(self, key: str, value: Any) -> None:
        modules = self.__dict__.get("_module_dict")
        if isinstance(value, StateModule):
            if modules is None:
                raise AttributeError(
                    f"Call the super().__init__() method within the constructor of "
                    f"{type(self).__name__} before setting any attributes."
                )
            if key not in self._attribute_dict:
                modules[key] = value
        elif modules is not None and key in modules:
            del modules[key]
        object.__setattr__(self, key, value)

    def __delattr__(self, key: str) -> None:
        self.__dict__.get("_module_dict", {}).pop(key, None)
        self.__dict__.get("_attribute_dict", {}).pop(key, None)
        object.__delattr__(self, key)

    def register_state(
        self,
        attr_name: str,
        custom_to_json: Callable[[Any], Any] | None = None,
        custom_from_json: Callable[[Any], Any] | None = None,
    ) -> None:
        """Make an existing attribute part of the state, with optional converters."""
        if "_attribute_dict" not in self.__dict__:
            raise AttributeError(
                f"Call the super().__init__() method within the constructor of "
                f"{type(self).__name__} before calling register_state."
            )
        value = getattr(self, attr_name)
        if attr_name in self._module_dict:
            raise InvalidValueError(
                f"Attribute `{attr_name}` is already registered as a module; "
                "its state is saved automatically."
            )
        if custom_to_json is None:
            try:
                check_json_data(value, f"{type(self).__name__}.{attr_name}")
            except InvalidValueError as exc:
                raise InvalidValueError(
                    f"Attribute '{attr_name}' is not JSON serializable: {exc} "
                    "Please provide custom_to_json and custom_from_json functions."
                ) from None
        self._attribute_dict[attr_name] = _Converters(custom_to_json, custom_from_json)

    # -- saving ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The state as detached JSON data: nested modules first, then attributes."""
        return self._snapshot(type(self).__name__, None)

    def _snapshot(self, path: str, logs: dict[str, Any] | None) -> dict[str, Any]:
        """Build the state dict; with ``logs``, message logs are collected there instead."""
        state: dict[str, Any] = {}
        for key, module in self._module_dict.items():
            state[key] = _snapshot_of(module, f"{path}.{key}", logs)
        for key, conv in self._attribute_dict.items():
            value = getattr(self, key)
            if conv.to_json is not None:
                value = conv.to_json(value)
            state[key] = detach(value, f"{path}.{key}")
        return state

    # -- loading --------------------------------------------------------------------------

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> LoadResult:
        """Load a state dict: everything is checked first, then applied, or nothing is.

        With ``strict=True`` any missing or unexpected key, at any depth, raises
        :class:`~praisonsession.errors.StateDictError`; with ``strict=False`` the keys that match
        are loaded and the others are reported in the returned :class:`LoadResult`.
        """
        missing: list[str] = []
        unexpected: list[str] = []
        actions = self._plan_load(state_dict, strict, "", missing, unexpected)
        if strict and (missing or unexpected):
            raise StateDictError(type(self).__name__, missing, unexpected)
        for apply in actions:
            apply()
        return LoadResult(missing, unexpected)

    def _plan_load(
        self,
        state: Any,
        strict: bool,
        prefix: str,
        missing: list[str],
        unexpected: list[str],
        trusted: bool = False,
    ) -> list[Apply]:
        """Validate ``state`` and return the steps that will apply it.

        ``trusted`` state was just decoded from a store: it is JSON data that nobody else holds,
        so it is neither checked nor copied again (a third of a 10,000-message load otherwise).
        """
        where = prefix.rstrip(".") or type(self).__name__
        if not isinstance(state, dict):
            raise InvalidValueError(
                f"The state for {where} must be a dict, got {type(state).__name__}."
            )
        actions: list[Apply] = []
        for key, module in self._module_dict.items():
            if key not in state:
                missing.append(prefix + key)
                continue
            actions.extend(
                _plan_of(
                    module, state[key], strict, f"{prefix}{key}.", missing, unexpected, trusted
                )
            )
        for key, conv in self._attribute_dict.items():
            if key not in state:
                missing.append(prefix + key)
                continue
            value = state[key] if trusted else detach(state[key], f"{where}.{key}")
            if conv.from_json is not None:
                value = conv.from_json(value)
            actions.append(_setter(self, key, value))
        known = self._module_dict.keys() | self._attribute_dict.keys()
        unexpected.extend(prefix + key for key in state if key not in known)
        return actions

    def _walk(self, path: str) -> dict[str, StateModule]:
        """Every module in this tree by dotted path, this one included."""
        found = {path: self}
        for key, module in self._module_dict.items():
            found.update(module._walk(f"{path}.{key}"))
        return found


def _setter(module: StateModule, key: str, value: Any) -> Apply:
    return lambda: setattr(module, key, value)


def _overrides(module: StateModule, name: str) -> bool:
    return getattr(type(module), name) is not getattr(StateModule, name)


def _snapshot_of(module: StateModule, path: str, logs: dict[str, Any] | None) -> Any:
    # A subclass that overrides state_dict (AgentScope style) is asked through its public method.
    if _overrides(module, "state_dict"):
        return detach(module.state_dict(), path)
    return module._snapshot(path, logs)


def _plan_of(
    module: StateModule,
    state: Any,
    strict: bool,
    prefix: str,
    missing: list[str],
    unexpected: list[str],
    trusted: bool = False,
) -> list[Apply]:
    if _overrides(module, "load_state_dict"):
        return [lambda: module.load_state_dict(state, strict)]
    return module._plan_load(state, strict, prefix, missing, unexpected, trusted)
