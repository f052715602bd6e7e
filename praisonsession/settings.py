"""All configuration in one place: ``Settings``, read from arguments, ``PRAISONSESSION_*``
environment variables and a ``.env`` file, in that order of precedence.

Every knob is declared once, below, with its default, type, bounds and description.
pydantic-settings reads and validates them, and it costs ~0.2 s to import: so when there is
nothing to read (no argument, no ``PRAISONSESSION_*`` variable, no ``.env`` file) the defaults
are used as they are and pydantic is never imported. That keeps ``Session()`` in a fresh
process at a few milliseconds.

Only settings use the ``PRAISONSESSION_`` prefix (and the server's secret, read by ``serve``
and ``token``, :data:`NOT_SETTINGS`): our own tools name their variables otherwise (the tests'
``PSTEST_*``). So a name that is not a setting is a misspelling, and is refused with the
closest valid name; a value that does not fit
is refused naming where it came from (the argument, the environment variable or the ``.env``
file). The LLM API key never appears in a repr or an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from ._internal.checks import DURABILITIES, SYNC_CALLS
from .errors import InvalidSettingError

__all__ = ["DEFAULT_TIMEOUT", "ENV_PREFIX", "NOT_SETTINGS", "Settings"]

ENV_PREFIX = "PRAISONSESSION_"
#: Seconds a session, an LLM request or a server waits, unless told otherwise (``timeout``).
DEFAULT_TIMEOUT = 30.0
ENV_FILE = ".env"
#: Variables of the prefix that are not settings, by name: each is read by one command, never
#: by ``Settings``. Any other ``PRAISONSESSION_*`` name is taken for a misspelt setting.
NOT_SETTINGS: Mapping[str, str] = MappingProxyType(
    {"server_secret": "the secret that signs user tokens (praisonsession serve and token)"}
)


class Knob(NamedTuple):
    """One setting: its default, its type (as pydantic reads it) and its bounds."""

    default: Any
    kind: Any
    description: str
    bounds: Mapping[str, Any] = MappingProxyType({})
    secret: bool = False


KNOBS: dict[str, Knob] = {
    "data_dir": Knob(Path(".praisonsession"), Path, "Where the embedded stores keep their files."),
    "store_url": Knob(
        None, "str | None", "Session store URL; default: sqlite:///<data_dir>/sessions.db."
    ),
    "default_ttl": Knob(
        None,
        "float | None",
        "TTL in seconds for sessions created without session_ttl (None: no expiry).",
        {"ge": 0, "allow_inf_nan": False},
    ),
    "sliding_ttl": Knob(True, bool, "Whether activity restarts a session's TTL."),
    "durability": Knob(
        "process",
        str,
        "What an acknowledged write survives: 'process' (a crash of the process) or 'power' "
        "(a power loss or OS crash, at the cost of an fsync per write).",
        {"pattern": f"^({'|'.join(DURABILITIES)})$"},
    ),
    "timeout": Knob(
        DEFAULT_TIMEOUT,
        float,
        "Seconds to wait for a store or endpoint.",
        {"gt": 0, "allow_inf_nan": False},
    ),
    "sync_calls": Knob(
        "inline",
        str,
        "How a sync Session call runs a store operation: 'inline' on the caller's thread where "
        "the store allows it (fastest), or 'loop': always on the background event loop, so "
        "that a timeout abandons even an operation blocked in the store.",
        {"pattern": f"^({'|'.join(SYNC_CALLS)})$"},
    ),
    "sqlite_busy_timeout": Knob(
        30.0,
        float,
        "Seconds a SQLite write waits for another process's write.",
        {"gt": 0, "allow_inf_nan": False},
    ),
    "vector_store_url": Knob(
        None,
        "str | None",
        "Where memory and knowledge keep vectors: a Chroma server (http://), PostgreSQL "
        "with pgvector (postgresql://...?schema=), or 'embedded'; default: the session "
        "store's database when it is PostgreSQL, else embedded Chroma.",
    ),
    "vector_namespace": Knob(
        "praisonsession",
        str,
        "Prefix of the Chroma collections, to keep apps apart on one server.",
        {"pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]{1,200}[A-Za-z0-9]$"},
    ),
    "embedder": Knob(
        "minilm",
        str,
        "Embedder for memory and knowledge: 'minilm' (all-MiniLM-L6-v2, offline).",
        {"pattern": r"^(minilm|all-MiniLM-L6-v2(-int8)?)$"},
    ),
    "context_budget": Knob(
        None,
        "int | None",
        "Tokens an agent may send per request; default: per model (3/4 of its context window, "
        "at most 32,000), else 8,000.",
        {"ge": 256},
    ),
    "llm_base_url": Knob(None, "str | None", "OpenAI-compatible base URL."),
    "llm_model": Knob("gpt-4o-mini", str, "Chat model name.", {"min_length": 1}),
    "llm_api_key": Knob(None, "str | None", "API key for the LLM endpoint.", secret=True),
    "remote_token": Knob(
        None,
        "str | None",
        "Bearer token for session servers (Session(agent_url=...), praisonsession serve).",
        secret=True,
    ),
    "tracing": Knob(
        False, bool, "OpenTelemetry spans for store, memory, LLM, agent and server work."
    ),
    "tracing_content": Knob(
        False, bool, "Whether spans also carry message content (prompts, replies, queries)."
    ),
    "encryption_key": Knob(
        None,
        "str | None",
        "Key that encrypts every store at rest (32 bytes, urlsafe base64); default: none.",
        secret=True,
    ),
    "encryption_key_file": Knob(
        None, "str | None", "File holding encryption_key (its first line); default: none."
    ),
}

#: Settings that may be empty, meaning "not set" (an empty variable in a .env file, say).
_BLANK_IS_NONE = (
    "context_budget",
    "store_url",
    "vector_store_url",
    "llm_base_url",
    "llm_api_key",
    "remote_token",
    "encryption_key",
    "encryption_key_file",
)


class Settings:
    """Every knob, with a default that works offline and with zero setup.

    ``Settings(store_url="memory://")`` takes keyword arguments; the knobs not given come from
    ``PRAISONSESSION_<NAME>`` environment variables, then a ``.env`` file in the working
    directory, then the defaults. Read-only once made.
    """

    data_dir: Path
    store_url: str | None
    default_ttl: float | None
    sliding_ttl: bool
    durability: str
    timeout: float
    sync_calls: str
    sqlite_busy_timeout: float
    vector_store_url: str | None
    vector_namespace: str
    embedder: str
    context_budget: int | None
    llm_base_url: str | None
    llm_model: str
    llm_api_key: str | None
    remote_token: str | None
    tracing: bool
    tracing_content: bool
    encryption_key: str | None
    encryption_key_file: str | None

    def __init__(self, **values: Any) -> None:
        _refuse_unknown({name: repr(name) for name in values}, "argument")
        if values or _anything_to_read():
            resolved = _read(values)
        else:  # the zero-configuration case: no pydantic at all
            resolved = {name: knob.default for name, knob in KNOBS.items()}
        for name, value in resolved.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Settings are read-only; make new ones: Settings(name=value, ...)")

    def resolved_store_url(self) -> str:
        if self.store_url:
            return self.store_url
        return f"sqlite:///{(self.data_dir / 'sessions.db').expanduser().resolve()}"

    def resolved_encryption_key(self) -> str | None:
        """``encryption_key``, or the first line of ``encryption_key_file``; None if neither."""
        if self.encryption_key:
            return self.encryption_key
        if not self.encryption_key_file:
            return None
        try:
            with open(Path(self.encryption_key_file).expanduser(), "rb") as file:
                line = file.readline(1024)
        except OSError as exc:
            raise InvalidSettingError(
                f"encryption_key_file {self.encryption_key_file!r} cannot be read "
                f"({type(exc).__name__}); give a readable file that holds the key.",
                name="encryption_key_file",
            ) from None
        return line.decode("ascii", "replace").strip()

    def as_dict(self) -> dict[str, Any]:
        """Every knob and its value (the API key included: handle with care)."""
        return {name: getattr(self, name) for name in KNOBS}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Settings):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]  # unhashable, as it compares by value

    def __repr__(self) -> str:
        shown = []
        for name, knob in KNOBS.items():
            value = getattr(self, name)
            if value != knob.default:
                if knob.secret and value:
                    value = "***"
                elif isinstance(value, str):
                    from ._internal.redaction import redact_url

                    value = redact_url(value)  # URLs may hold a password
                shown.append(f"{name}={value if value == '***' else repr(value)}")
        return f"Settings({', '.join(shown)})"


def _anything_to_read() -> bool:
    if os.path.isfile(ENV_FILE):
        return True
    return any(name.upper().startswith(ENV_PREFIX) for name in os.environ)


def _refuse_unknown(names: Mapping[str, str], source: str) -> None:
    """``names`` maps each setting name given to how to show where it was given."""
    for name, shown in names.items():
        if name not in KNOBS and name not in NOT_SETTINGS:
            import difflib  # only when there is a mistake to explain

            close = difflib.get_close_matches(str(name).lower(), KNOBS, n=1, cutoff=0.6)
            hint = f" Did you mean {_spelled(close[0], source)}?" if close else ""
            raise InvalidSettingError(
                f"{shown} is not a setting.{hint} The settings are: {', '.join(KNOBS)}.",
                name=str(name),
                source=source,
            )


def _spelled(name: str, source: str) -> str:
    return repr(name) if source == "argument" else ENV_PREFIX + name.upper()


def _environment_names() -> dict[str, str]:
    """Setting name -> the environment variable that sets it (any case, as pydantic reads)."""
    found = {}
    for variable in os.environ:
        if variable.upper().startswith(ENV_PREFIX):
            found[variable[len(ENV_PREFIX) :].lower()] = variable
    return found


def _env_file_names() -> list[str]:
    """Setting names a .env file sets (its PRAISONSESSION_* lines)."""
    if not os.path.isfile(ENV_FILE):
        return []
    with open(ENV_FILE, "rb") as file:
        raw = file.read()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:  # nothing of it is shown: it may hold keys
        raise InvalidSettingError(
            f"The {ENV_FILE} file in {os.getcwd()} is not UTF-8 text (byte {exc.start + 1} of "
            f"{len(raw)} is not). Save it as UTF-8, or remove it.",
            source=ENV_FILE,
        ) from None
    from dotenv import dotenv_values  # python-dotenv, which pydantic-settings installs

    return [
        key[len(ENV_PREFIX) :].lower()
        for key in dotenv_values(ENV_FILE)
        if key.upper().startswith(ENV_PREFIX)
    ]


def _read(values: dict[str, Any]) -> dict[str, Any]:
    environment = _environment_names()
    _refuse_unknown(
        {name: f"The environment variable {variable}" for name, variable in environment.items()},
        "environment",
    )
    _refuse_unknown(
        {name: f"{ENV_PREFIX}{name.upper()} in {ENV_FILE}" for name in _env_file_names()},
        ENV_FILE,
    )
    from pydantic import ValidationError

    try:
        loaded = _model()(**values)
    except ValidationError as exc:
        raise _explain(exc, values, environment) from None
    return {name: getattr(loaded, name) for name in KNOBS}


def _explain(exc: Any, values: dict[str, Any], environment: dict[str, str]) -> InvalidSettingError:
    """A pydantic error, said in terms of where the bad value came from."""
    error = exc.errors()[0]
    name = str(error["loc"][0]) if error.get("loc") else "?"
    knob = KNOBS.get(name)
    from ._internal.redaction import redact_url

    value = error.get("input")
    if knob is not None and knob.secret:
        shown = "***"
    elif isinstance(value, str):
        shown = repr(redact_url(value))
    elif value is None or isinstance(value, (bool, int, float)):
        shown = repr(value)
    else:  # a list or dict may hold a URL with its password, or a key: say only what it is
        shown = f"<a {type(value).__name__}>"
    if name in values:
        where, source = f"settings[{name!r}]={shown}", "argument"
    elif name in environment:
        where, source = f"the environment variable {environment[name]}={shown}", "environment"
    else:
        where, source = f"{ENV_PREFIX}{name.upper()}={shown} in {ENV_FILE}", ENV_FILE
    about = knob.description if knob is not None else ""
    return InvalidSettingError(
        f"{where} is not valid: {error.get('msg', 'invalid value')}. {name}: {about}",
        name=name,
        source=source,
    )


_built: Any = None


def _model() -> Any:
    """The pydantic-settings class for :data:`KNOBS`, built on first use."""
    global _built
    if _built is None:
        from pydantic import Field, field_validator
        from pydantic_settings import BaseSettings, SettingsConfigDict

        def blank_is_none(cls: Any, value: Any) -> Any:
            return None if value == "" else value

        namespace: dict[str, Any] = {
            "model_config": SettingsConfigDict(
                env_prefix=ENV_PREFIX, env_file=ENV_FILE, extra="ignore", validate_default=True
            ),
            "__annotations__": {},
            "_blank_is_none": field_validator(*_BLANK_IS_NONE, mode="before")(
                classmethod(blank_is_none)
            ),
        }
        for name, knob in KNOBS.items():
            namespace["__annotations__"][name] = knob.kind
            namespace[name] = Field(knob.default, description=knob.description, **knob.bounds)
        _built = type("PraisonSessionSettings", (BaseSettings,), namespace)
    return _built
