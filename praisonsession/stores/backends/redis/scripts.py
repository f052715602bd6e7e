"""The Lua scripts, read from ``lua/*.lua`` and run with EVALSHA.

A per-session script is ``prelude.lua`` (what every such script shares), the libraries it
needs, then its own body; the scripts over many sessions start with ``enc_function.lua``;
a lean script (a tail read's or a truncation's fast path) is its own body alone.
They are read when the first ``RedisSession`` is made, so ``import praisonsession`` reads no
file (and imports no redis).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import secrets
from importlib.resources import files
from typing import Any

from ...record import FORMAT_VERSION

__all__ = ["PUSH_CHUNK", "OpTokens", "Script", "load_scripts"]

# Values per RPUSH/HSET/HDEL call inside a script (Lua's unpack() fails beyond ~8000).
PUSH_CHUNK = 1000

SESSION_SCRIPTS = (
    "create",
    "info",
    "set_metadata",
    "delete",
    "touch",
    "get_state",
    "patch",
    "increment",
    "save_modules",
    "load_modules",
    "append",
    "read_log",
    "count_log",
    "truncate",
    "import",
    "copy",
    "contents",
)
STORE_SCRIPTS = ("list", "users", "purge", "enc", "forget")
# Per-session scripts without the prelude: the fast paths of a tail read and of a truncation,
# which fall back to their full script for any session they do not vouch for.
LEAN_SCRIPTS = ("read_tail", "truncate_tail")
WRITES = frozenset(
    {
        "create",
        "set_metadata",
        "delete",
        "touch",
        "patch",
        "increment",
        "save_modules",
        "append",
        "truncate",
        "truncate_tail",
        "copy",
    }
)
# Lua a script needs between the prelude and its body.
_LIBRARIES = {"increment": ("numbers",)}
# Seconds the server keeps a write's reply under its op token, at least.
_TOKEN_TTL_MIN = 60.0


class Script:
    """One assembled script: its source, its SHA1 (for EVALSHA), and whether it writes.

    A write carries an op token, so that a retry is answered without applying it twice.
    """

    __slots__ = ("name", "sha", "source", "writes")

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self.sha = hashlib.sha1(source.encode("utf-8")).hexdigest()
        self.writes = name in WRITES

    async def run(self, client: Any, keys: list[str], args: list[Any]) -> Any:
        """EVALSHA, or EVAL when the server does not have the script yet (a restart, a
        SCRIPT FLUSH, a new server); EVAL also caches it for the next EVALSHA."""
        import redis.exceptions

        try:
            return await client.evalsha(self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            return await client.eval(self.source, len(keys), *keys, *args)

    def __repr__(self) -> str:
        return f"Script({self.name!r}, sha={self.sha[:12]!r})"


class OpTokens:
    """The op tokens of one store, which make a retried write run once.

    A write runs with a new token; the server keeps its reply under the token (``once`` in
    ``prelude.lua``), and a retry with the same token gets that reply instead of writing
    again. ``ttl_ms`` outlasts every retry: twice ``retry_window`` seconds, at least a minute.
    A token begins with the digest of the user whose data the reply may hold (the messages a
    truncation removed, a snapshot's sealed metadata: nothing that names them), so that erasing
    the user deletes their kept replies by name (``forget.lua``), whatever the replies say.
    """

    __slots__ = ("_base", "_count", "ttl_ms")

    def __init__(self, retry_window: float) -> None:
        self.ttl_ms = int(1000 * max(_TOKEN_TTL_MIN, 2 * retry_window))
        self._base = secrets.token_hex(8)
        self._count = itertools.count()

    def new(self, owner: str) -> str:
        """A token for one write whose reply may hold data of the user ``owner`` digests."""
        # unique per store object, process and call; cheaper than os.urandom on every write
        return f"{owner}.{self._base}.{os.getpid()}.{next(self._count)}"


@functools.cache
def load_scripts() -> dict[str, Script]:
    """Every script by name, read from the package once per process."""
    enc_function = _read("enc_function")
    prelude = (
        _read("prelude")
        .replace("@ENC@", enc_function)
        .replace("@FORMAT@", str(FORMAT_VERSION))
        .replace("@CHUNK@", str(PUSH_CHUNK))
    )
    scripts = {}
    for name in SESSION_SCRIPTS:
        parts = [prelude, *map(_read, _LIBRARIES.get(name, ())), _read(name)]
        scripts[name] = Script(name, "\n".join(parts))
    for name in STORE_SCRIPTS:
        scripts[name] = Script(name, "\n".join([enc_function, _read(name)]))
    for name in LEAN_SCRIPTS:
        scripts[name] = Script(name, _read(name).replace("@FORMAT@", str(FORMAT_VERSION)))
    return scripts


def _read(name: str) -> str:
    return files(__package__).joinpath("lua").joinpath(f"{name}.lua").read_text(encoding="utf-8")
