"""AgentScope 2.0's app storage on praisonsession stores: :class:`PraisonStorage`.

``PraisonStorage("sqlite://as.db")`` is an ``agentscope.app.storage.StorageBase``: every
record AgentScope's app keeps (sessions with their ``AgentState``, messages, agents,
credentials, MCP servers, skills, schedules, channels, SOPs and their runs, teams, knowledge
bases and their documents) is one of our sessions, of the AgentScope user who owns it, so
``erase_user`` reaches all a user stored, and TTL, encryption at rest, ``praisonsession
show/export`` and the browser work on it as on any session. How AgentScope's model maps onto a
store:

- **Ids.** A record of kind ``k`` with id ``i`` is our session ``as2:k:i`` of its user
  (:func:`record_id`); a knowledge document names its base with a length prefix, so no pair of
  ids collides. An id that cannot be one of ours (over 256 characters, control characters)
  is refused with ``InvalidIdError``; an empty ``user_id`` too (``""`` is AgentScope's user
  of that name, and ours the default user: the two must not alias).
- **Records** are the key ``r`` of the session's state, the JSON ``model_dump(mode="json")``
  made (credentials with their secrets, as AgentScope's own storages keep them). A session's
  ``AgentState`` is apart, in ``s`` beside its ``updated_at`` in ``u``: ``update_session_state``,
  the write after every turn, is one state patch that holds only if the session exists
  (``must_exist``): no read before it.
- **Messages** of a session are the record ``as2:messages:<session id>``: message ``n`` in
  ``m:<n>``, its position by id in ``i:<id>``, the count in ``n``. ``upsert_message``
  replaces in place or appends in one compare-and-set, so concurrent writers lose nothing;
  ``list_messages`` reads the cursor's position, then the page's keys by name: its cost is
  the page's, not the history's (on SQLite, Redis and PostgreSQL; a JSON store reads its
  file whole).
- Read-modify-writes (a team's roster, a document's lease) are compare-and-sets on the
  record's version, retried when another writer moved it on. Cascades (an agent's sessions,
  a team's members) are several writes, not one transaction: a process killed midway leaves
  the rest for the next delete.

Needs the ``agentscope2`` extra (AgentScope 2.0); ``import praisonsession`` never imports it,
and only this module does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from pydantic import BaseModel, SecretStr

from ..errors import (
    ConflictError,
    InvalidIdError,
    InvalidValueError,
    MissingDependencyError,
    SessionExpiredError,
    SessionNotFoundError,
    install_line,
)
from ..settings import Settings
from ..stores import Key, SessionBase, SessionInfo, record_key
from ..stores.backend import all_records_by_prefix
from ._adapter import HeldStore, checked_user_id

try:
    from agentscope.app.storage import (
        AgentRecord,
        ChannelOrigin,
        ChannelRecord,
        CredentialRecord,
        KnowledgeBaseRecord,
        KnowledgeDocumentRecord,
        MCPRecord,
        ScheduleOrigin,
        ScheduleRecord,
        SessionConfig,
        SessionOrigin,
        SessionRecord,
        SkillRecord,
        SOPRecord,
        SOPRunRecord,
        StorageBase,
        TeamMember,
        TeamRecord,
        UserOrigin,
    )
    from agentscope.credential import CredentialBase
    from agentscope.message import Msg
    from agentscope.sop import SOPPhase, SOPRunState
    from agentscope.state import AgentState
except ImportError as missing:  # pragma: no cover - the extra is installed where this runs
    raise MissingDependencyError(
        "praisonsession.integrations.agentscope needs AgentScope 2.0 (agentscope.app.storage): "
        + install_line("agentscope2")
        + "."
    ) from missing

__all__ = ["PraisonStorage", "record_id"]

R = TypeVar("R", bound=BaseModel)
_PAGE = 1000
_TERMINAL = ("ready", "error")


def record_id(kind: str, *ids: str) -> str:
    """Our session id of AgentScope's record ``kind`` with ``ids`` (the last one unprefixed:
    every other is written with its length, so the tuple reads back one way)."""
    for part in ids:
        if not isinstance(part, str):
            raise InvalidIdError(
                f"AgentScope {kind} ids must be str, got {type(part).__name__}: {part!r}."
            )
    head = "".join(f"{len(part)}:{part}:" for part in ids[:-1])
    return f"as2:{kind}:{head}{ids[-1]}"


def _utcnow() -> datetime:
    """Naive UTC, what AgentScope's SQL storage writes (comparable across nodes)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def _dump(record: BaseModel) -> dict[str, Any]:
    """The record as JSON data, secrets in clear (the store seals them if it has a key)."""
    data = record.model_dump(mode="json")
    for name in type(record).model_fields:
        value = getattr(record, name)
        if isinstance(value, SecretStr):
            data[name] = value.get_secret_value()
    return data


def _model(value: Any, model: type[R], name: str) -> R:
    """``value`` if it is the AgentScope model the call takes, else InvalidValueError."""
    if not isinstance(value, model):
        raise InvalidValueError(
            f"{name} must be an agentscope {model.__name__}, got {type(value).__name__}."
        )
    return value


def _limit(limit: Any) -> int:
    if type(limit) is not int or limit < 0:
        raise InvalidValueError(
            f"limit must be an int of 0 or more, got {limit!r}: pass how many messages "
            "a page holds (AgentScope's default is 50)."
        )
    return limit


class PraisonStorage(HeldStore, StorageBase):
    """AgentScope 2.0's ``StorageBase`` over a praisonsession store.

    ``store`` is what ``Session(store=...)`` takes: a URL (``memory://``, ``json:///dir``,
    ``sqlite://file.db``, ``redis://...``, ``postgresql://...``), a store instance, or None
    for the default store. ``settings`` are praisonsession's (``Settings`` or a dict:
    ``default_ttl``, ``durability``, ``encryption_key``...). Nothing to open: use it as it is
    or as ``async with PraisonStorage(...) as storage``.
    """

    def __init__(
        self,
        store: SessionBase | str | None = None,
        *,
        settings: Settings | dict[str, Any] | None = None,
    ) -> None:
        self._hold(store, settings)
        self._backend = self._store.backend

    # -- records: one of our sessions each ---------------------------------------------------

    def _key(self, user_id: Any, kind: str, *ids: str) -> Key:
        return record_key(record_id(kind, *ids), checked_user_id(user_id))

    async def _read(self, key: Key, names: list[str]) -> dict[str, Any]:
        return await self._backend.read_record_state(key, names=names, must_exist=False)

    async def _get(self, key: Key, model: type[R]) -> R | None:
        stored = (await self._read(key, ["r"])).get("r")
        return None if stored is None else model.model_validate(stored)

    async def _change(
        self,
        key: Key,
        names: list[str],
        change: Callable[[dict[str, Any]], tuple[dict[str, Any] | None, list[str], Any]],
    ) -> Any:
        """Read ``names``, let ``change`` say what to write (None: nothing) and what to
        return, and write it only if no one wrote the record meanwhile; else again."""
        while True:
            info = await self._backend.read_record(key)
            state = await self._read(key, names) if info is not None else {}
            updates, deletes, result = change(state)
            if updates is None:
                return result
            version = 0 if info is None else info.version
            try:
                await self._backend.patch_record_state(
                    key,
                    updates=updates,
                    deletes=deletes,
                    replace=False,
                    expected_version=version,
                    must_exist=False,
                )
            except ConflictError:
                continue
            return result

    async def _put(self, key: Key, record: Any, extra: dict[str, Any] | None = None) -> Any:
        """Write ``record`` (``updated_at`` now, ``created_at`` kept from a stored one)."""
        record.updated_at = _utcnow()

        def change(state: dict[str, Any]) -> tuple[dict[str, Any], list[str], Any]:
            stored = state.get("r")
            if stored is not None:
                record.created_at = type(record).model_validate(stored).created_at
            else:
                record.created_at = _naive_utc(record.created_at)
            return {"r": _dump(record), **(extra or {})}, [], record

        return await self._change(key, ["r"], change)

    async def _delete(self, key: Key) -> bool:
        return bool(await self._backend.delete_record(key))

    async def _infos(self, user_id: str, prefix: str) -> list[SessionInfo]:
        """Every record of the user whose id starts with ``prefix``, a page at a time."""
        user = checked_user_id(user_id)
        after: str | None = prefix[:-1] + chr(ord(prefix[-1]) - 1) + "\U0010ffff"
        found: list[SessionInfo] = []
        while True:
            page = await self._backend.list_records(user, limit=_PAGE, after=after)
            for info in page:
                if not info.session_id.startswith(prefix):
                    return found
                found.append(info)
            if len(page) < _PAGE:
                return found
            after = page[-1].session_id

    async def _all_infos(self, prefix: str) -> list[SessionInfo]:
        """Every user's records whose id starts with ``prefix``."""
        return await all_records_by_prefix(self._backend, prefix, _PAGE)

    async def _records(self, infos: list[SessionInfo], model: type[R]) -> list[R]:
        found = []
        for info in infos:
            record = await self._get(Key(info.user_id, info.session_id), model)
            if record is not None:
                found.append(record)
        return found

    async def _list(self, user_id: str, kind: str, model: type[R]) -> list[R]:
        return await self._records(await self._infos(user_id, f"as2:{kind}:"), model)

    # -- credentials ----------------------------------------------------------------------

    async def upsert_credential(self, user_id: str, credential_data: CredentialBase) -> str:
        _model(credential_data, CredentialBase, "credential_data")
        key = self._key(user_id, "credential", credential_data.id)
        if not credential_data.name:
            credential_data.name = await self._credential_name(user_id, credential_data)
        existing = await self._get(key, CredentialRecord)
        if existing is not None:
            existing.data = _dump(credential_data)
            await self._put(key, existing)
            return str(existing.id)
        record = CredentialRecord(
            id=credential_data.id, user_id=user_id, data=_dump(credential_data)
        )
        await self._put(key, record)
        return str(record.id)

    async def _credential_name(self, user_id: str, credential: CredentialBase) -> str:
        """``"OpenAI"``, then ``"OpenAI (2)"``...: AgentScope's rule for a nameless one."""
        kind = getattr(credential, "type", "")
        base = kind.removesuffix("_credential").replace("_", " ").title() or "Credential"
        taken = {
            record.data.get("name", "")
            for record in await self.list_credentials(user_id)
            if record.data.get("type") == kind and record.id != credential.id
        }
        if base not in taken:
            return str(base)
        number = 2
        while f"{base} ({number})" in taken:
            number += 1
        return f"{base} ({number})"

    async def list_credentials(self, user_id: str) -> list[CredentialRecord]:
        return await self._list(user_id, "credential", CredentialRecord)

    async def get_credential(self, user_id: str, credential_id: str) -> CredentialRecord | None:
        return await self._get(self._key(user_id, "credential", credential_id), CredentialRecord)

    async def delete_credential(self, user_id: str, credential_id: str) -> bool:
        return await self._delete(self._key(user_id, "credential", credential_id))

    # -- MCP servers and skills: a name is unique per user --------------------------------

    async def _upsert_named(self, user_id: str, kind: str, record: Any) -> str:
        key = self._key(user_id, kind, record.id)
        holder = await self._by_name(user_id, kind, type(record), record.name)
        if holder is not None and holder.id != record.id:
            raise ValueError(f"A {kind} named {record.name!r} already exists for this user.")
        record.user_id = user_id
        await self._put(key, record)
        return str(record.id)

    async def _by_name(self, user_id: str, kind: str, model: type[R], name: str) -> R | None:
        for record in await self._list(user_id, kind, model):
            if getattr(record, "name", None) == name:
                return record
        return None

    async def upsert_mcp(self, user_id: str, mcp_record: MCPRecord) -> str:
        return await self._upsert_named(user_id, "mcp", _model(mcp_record, MCPRecord, "mcp_record"))

    async def list_mcps(self, user_id: str) -> list[MCPRecord]:
        return await self._list(user_id, "mcp", MCPRecord)

    async def get_mcp(self, user_id: str, mcp_id: str) -> MCPRecord | None:
        return await self._get(self._key(user_id, "mcp", mcp_id), MCPRecord)

    async def get_mcp_by_name(self, user_id: str, name: str) -> MCPRecord | None:
        return await self._by_name(user_id, "mcp", MCPRecord, name)

    async def delete_mcp(self, user_id: str, mcp_id: str) -> bool:
        return await self._delete(self._key(user_id, "mcp", mcp_id))

    async def upsert_skill(self, user_id: str, skill_record: SkillRecord) -> str:
        record = _model(skill_record, SkillRecord, "skill_record")
        return await self._upsert_named(user_id, "skill", record)

    async def list_skills(self, user_id: str) -> list[SkillRecord]:
        return await self._list(user_id, "skill", SkillRecord)

    async def get_skill(self, user_id: str, skill_id: str) -> SkillRecord | None:
        return await self._get(self._key(user_id, "skill", skill_id), SkillRecord)

    async def get_skill_by_name(self, user_id: str, name: str) -> SkillRecord | None:
        return await self._by_name(user_id, "skill", SkillRecord, name)

    async def delete_skill(self, user_id: str, skill_id: str) -> bool:
        return await self._delete(self._key(user_id, "skill", skill_id))

    # -- agents -----------------------------------------------------------------------------

    async def upsert_agent(self, user_id: str, agent_record: AgentRecord) -> str:
        _model(agent_record, AgentRecord, "agent_record")
        await self._put(self._key(user_id, "agent", agent_record.id), agent_record)
        return str(agent_record.id)

    async def list_agents(self, user_id: str) -> list[AgentRecord]:
        """The user's own agents: a team's workers are reached by id, never listed."""
        agents = await self._list(user_id, "agent", AgentRecord)
        return [agent for agent in agents if agent.source == "user"]

    async def get_agent(self, user_id: str, agent_id: str) -> AgentRecord | None:
        return await self._get(self._key(user_id, "agent", agent_id), AgentRecord)

    async def delete_agent(self, user_id: str, agent_id: str) -> bool:
        """The agent, its sessions and schedules, and its places in the user's teams."""
        key = self._key(user_id, "agent", agent_id)
        for session in await self.list_sessions(user_id, agent_id):
            await self.delete_session(user_id, agent_id, session.id)
        for schedule in await self.list_schedules(user_id):
            if schedule.agent_id == agent_id:
                await self.delete_schedule(user_id, schedule.id)
        for team in await self.list_teams(user_id):
            await self._change(
                self._key(user_id, "team", team.id), ["r"], _without_member(agent_id)
            )
        return await self._delete(key)

    # -- sessions ---------------------------------------------------------------------------

    def _session_record(self, state: dict[str, Any]) -> SessionRecord | None:
        stored = state.get("r")
        if stored is None:
            return None
        record = dict(stored)
        record["state"] = state.get("s", {})
        record["updated_at"] = state.get("u", record.get("updated_at"))
        return SessionRecord.model_validate(record)

    async def _read_session(self, key: Key) -> SessionRecord | None:
        return self._session_record(await self._read(key, ["r", "s", "u"]))

    async def _write_session(self, key: Key, record: SessionRecord) -> None:
        record.updated_at = _utcnow()
        data = _dump(record)
        state = data.pop("state")
        await self._backend.patch_record_state(
            key,
            updates={"r": data, "s": state, "u": data["updated_at"]},
            deletes=[],
            replace=False,
            expected_version=None,
            must_exist=False,
        )

    async def upsert_session(
        self,
        user_id: str,
        agent_id: str,
        config: SessionConfig,
        state: AgentState | None = None,
        session_id: str | None = None,
        origin: SessionOrigin | None = None,
        source: str | None = None,
        source_schedule_id: str | None = None,
        source_chat_id: str | None = None,
        source_chat_name: str | None = None,
        source_channel_id: str | None = None,
    ) -> SessionRecord:
        if session_id:
            key = self._key(user_id, "session", session_id)
            existing = await self._read_session(key)
            if existing is not None:
                existing.config = config
                if state is not None:
                    existing.state = state
                await self._write_session(key, existing)
                return existing
        record = SessionRecord(
            user_id=user_id,
            agent_id=agent_id,
            config=config,
            state=state if state is not None else AgentState(),
            **_origin(
                origin,
                source,
                source_schedule_id,
                source_channel_id,
                source_chat_id,
                source_chat_name,
            ),
            **({"id": session_id} if session_id else {}),
        )
        record.created_at = _naive_utc(record.created_at)
        await self._write_session(self._key(user_id, "session", record.id), record)
        return record

    async def set_session_team_id(self, user_id: str, session_id: str, team_id: str | None) -> None:
        def change(state: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str], None]:
            stored = state.get("r")
            if stored is None:
                return None, [], None
            now = _utcnow().isoformat()
            return {"r": {**stored, "team_id": team_id, "updated_at": now}, "u": now}, [], None

        await self._change(self._key(user_id, "session", session_id), ["r"], change)

    async def update_session_state(
        self, user_id: str, agent_id: str, session_id: str, state: AgentState
    ) -> None:
        """The write after every turn: the state and ``updated_at``, in one write that holds
        only if the session exists (``KeyError`` if not, as AgentScope's storages raise)."""
        key = self._key(user_id, "session", session_id)
        if not isinstance(state, AgentState):
            raise InvalidValueError(f"state must be an AgentState, got {type(state).__name__}.")
        updates = {"s": state.model_dump(mode="json"), "u": _utcnow().isoformat()}
        try:
            await self._backend.patch_record_state(
                key,
                updates=updates,
                deletes=[],
                replace=False,
                expected_version=None,
                must_exist=True,
            )
        except (SessionNotFoundError, SessionExpiredError):
            raise KeyError(f"Session {session_id!r} not found.") from None

    async def list_sessions(self, user_id: str, agent_id: str) -> list[SessionRecord]:
        return await self._sessions(user_id, lambda record: record.agent_id == agent_id)

    async def _sessions(
        self, user_id: str, keep: Callable[[SessionRecord], bool]
    ) -> list[SessionRecord]:
        """The user's sessions ``keep`` accepts, newest first."""
        found = []
        for info in await self._infos(user_id, "as2:session:"):
            record = await self._read_session(Key(info.user_id, info.session_id))
            if record is not None and keep(record):
                found.append(record)
        found.sort(key=lambda record: record.created_at, reverse=True)
        return found

    async def delete_session(self, user_id: str, agent_id: str, session_id: str) -> bool:
        """The session, its messages, and the team it leads."""
        key = self._key(user_id, "session", session_id)
        record = await self._read_session(key)
        if record is None:
            return False
        if record.team_id:
            team = await self.get_team(user_id, record.team_id)
            if team is not None and team.session_id == session_id:
                await self.delete_team(user_id, record.team_id)
        await self._delete(self._key(user_id, "messages", session_id))
        await self._delete(key)
        return True

    async def get_session(
        self, user_id: str, agent_id: str, session_id: str
    ) -> SessionRecord | None:
        return await self._read_session(self._key(user_id, "session", session_id))

    async def list_sessions_by_schedule(
        self, user_id: str, schedule_id: str
    ) -> list[SessionRecord]:
        return await self._sessions(
            user_id,
            lambda r: isinstance(r.origin, ScheduleOrigin) and r.origin.schedule_id == schedule_id,
        )

    async def list_sessions_by_channel(self, user_id: str, channel_id: str) -> list[SessionRecord]:
        return await self._sessions(
            user_id,
            lambda r: isinstance(r.origin, ChannelOrigin) and r.origin.channel_id == channel_id,
        )

    # -- schedules --------------------------------------------------------------------------

    async def upsert_schedule(self, user_id: str, record: ScheduleRecord) -> str:
        _model(record, ScheduleRecord, "record")
        await self._put(self._key(user_id, "schedule", record.id), record)
        return str(record.id)

    async def get_schedule(self, user_id: str, schedule_id: str) -> ScheduleRecord | None:
        return await self._get(self._key(user_id, "schedule", schedule_id), ScheduleRecord)

    async def list_schedules(self, user_id: str) -> list[ScheduleRecord]:
        return await self._list(user_id, "schedule", ScheduleRecord)

    async def delete_schedule(self, user_id: str, schedule_id: str) -> bool:
        """The schedule and every session it started."""
        key = self._key(user_id, "schedule", schedule_id)
        if await self._get(key, ScheduleRecord) is None:
            return False
        for session in await self.list_sessions_by_schedule(user_id, schedule_id):
            await self.delete_session(user_id, session.agent_id, session.id)
        return await self._delete(key)

    async def list_all_schedules(self) -> list[ScheduleRecord]:
        return await self._records(await self._all_infos("as2:schedule:"), ScheduleRecord)

    # -- channels: kept with their owner, found by id across users --------------------------

    async def upsert_channel(self, record: ChannelRecord, platform_bot_id: str) -> str:
        _model(record, ChannelRecord, "record")
        holder = await self.get_channel_id_by_platform_bot_id(platform_bot_id)
        if holder is not None and holder != record.id:
            raise ValueError(f"Bot {platform_bot_id!r} already drives channel {holder!r}.")
        key = self._key(record.user_id, "channel", record.id)
        previous = (await self._read(key, ["bot"])).get("bot")
        await self._put(key, record, {"bot": platform_bot_id})
        if previous is not None and previous != platform_bot_id:
            await self._delete(self._key(record.user_id, "bot", previous))
        bot = self._key(record.user_id, "bot", platform_bot_id)
        await self._backend.patch_record_state(
            bot,
            updates={"c": record.id},
            deletes=[],
            replace=False,
            expected_version=None,
            must_exist=False,
        )
        return str(record.id)

    async def _channel_info(self, channel_id: str) -> SessionInfo | None:
        wanted = record_id("channel", channel_id)
        for info in await self._all_infos(wanted):
            if info.session_id == wanted:
                return info
        return None

    async def get_channel(self, channel_id: str) -> ChannelRecord | None:
        info = await self._channel_info(channel_id)
        if info is None:
            return None
        return await self._get(Key(info.user_id, info.session_id), ChannelRecord)

    async def list_channels(self, user_id: str) -> list[ChannelRecord]:
        return await self._list(user_id, "channel", ChannelRecord)

    async def list_all_channels(self) -> list[ChannelRecord]:
        return await self._records(await self._all_infos("as2:channel:"), ChannelRecord)

    async def delete_channel(self, channel_id: str, platform_bot_id: str) -> bool:
        info = await self._channel_info(channel_id)
        if info is None:
            return False
        key = Key(info.user_id, info.session_id)
        bot = (await self._read(key, ["bot"])).get("bot")
        for name in {str(bot or platform_bot_id), platform_bot_id}:
            bot_key = self._key(info.user_id, "bot", name)
            if (await self._read(bot_key, ["c"])).get("c") == channel_id:
                await self._delete(bot_key)
        return await self._delete(key)

    async def get_channel_id_by_platform_bot_id(self, platform_bot_id: str) -> str | None:
        wanted = record_id("bot", platform_bot_id)
        for info in await self._all_infos(wanted):
            if info.session_id == wanted:
                channel = (await self._read(Key(info.user_id, wanted), ["c"])).get("c")
                return None if channel is None else str(channel)
        return None

    # -- messages: the cursor's position, then the page by name ----------------------------

    async def upsert_message(self, user_id: str, session_id: str, msg: Msg) -> None:
        """Replace the message with the same id in place, or append it."""
        _model(msg, Msg, "msg")
        key = self._key(user_id, "messages", session_id)
        data = msg.model_dump(mode="json")
        index = f"i:{msg.id}"

        def change(state: dict[str, Any]) -> tuple[dict[str, Any], list[str], None]:
            position = state.get(index)
            if position is not None:
                return {f"m:{position}": data}, [], None
            count = state.get("n", 0)
            return {f"m:{count}": data, index: count, "n": count + 1}, [], None

        await self._change(key, ["n", index], change)

    async def delete_message(self, user_id: str, session_id: str, message_id: str) -> bool:
        key = self._key(user_id, "messages", session_id)
        index = f"i:{message_id}"

        def change(state: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str], bool]:
            position = state.get(index)
            if position is None:
                return None, [], False
            return {}, [f"m:{position}", index], True

        return bool(await self._change(key, [index], change))

    async def get_message(self, user_id: str, session_id: str, message_id: str) -> Msg | None:
        key = self._key(user_id, "messages", session_id)
        position = (await self._read(key, [f"i:{message_id}"])).get(f"i:{message_id}")
        if position is None:
            return None
        stored = (await self._read(key, [f"m:{position}"])).get(f"m:{position}")
        return None if stored is None else Msg.model_validate(stored)

    async def list_messages(
        self,
        user_id: str,
        session_id: str,
        limit: int = 50,
        before: str | None = None,
        **kwargs: Any,
    ) -> tuple[list[Msg], bool]:
        """The latest ``limit`` messages before ``before`` (a message id; None: the latest),
        oldest first, and whether older ones exist. An unknown cursor: ``([], False)``."""
        if "offset" in kwargs:
            warnings.warn(
                "The 'offset' parameter is deprecated and ignored; use 'before' for "
                "cursor-based pagination instead.",
                DeprecationWarning,
                stacklevel=2,
            )
        limit = _limit(limit)
        key = self._key(user_id, "messages", session_id)
        name = "n" if before is None else f"i:{before}"
        end = (await self._read(key, [name])).get(name)
        if end is None:
            return [], False
        found: list[dict[str, Any]] = []
        low = int(end)
        while len(found) <= limit and low > 0:  # deleted messages leave gaps: read on
            start = max(0, low - (limit + 1 - len(found)))
            names = [f"m:{position}" for position in range(start, low)]
            page = await self._read(key, names)
            found[:0] = [page[n] for n in names if n in page]
            low = start
        has_more = len(found) > limit
        return [Msg.model_validate(data) for data in found[max(0, len(found) - limit) :]], has_more

    # -- SOPs and their runs ----------------------------------------------------------------

    async def upsert_sop(self, user_id: str, record: SOPRecord) -> SOPRecord:
        _model(record, SOPRecord, "record")
        result: SOPRecord = await self._put(self._key(user_id, "sop", record.id), record)
        return result

    async def get_sop(self, user_id: str, sop_id: str) -> SOPRecord | None:
        return await self._get(self._key(user_id, "sop", sop_id), SOPRecord)

    async def list_sops(self, user_id: str) -> list[SOPRecord]:
        return await self._list(user_id, "sop", SOPRecord)

    async def delete_sop(self, user_id: str, sop_id: str) -> bool:
        """The procedure, its runs and their sessions."""
        key = self._key(user_id, "sop", sop_id)
        if await self._get(key, SOPRecord) is None:
            return False
        for run in await self.list_sop_runs(user_id, sop_id):
            await self.delete_sop_run(user_id, run.id)
        return await self._delete(key)

    async def upsert_sop_run(self, user_id: str, record: SOPRunRecord) -> SOPRunRecord:
        _model(record, SOPRunRecord, "record")
        result: SOPRunRecord = await self._put(self._key(user_id, "soprun", record.id), record)
        return result

    async def get_sop_run(self, user_id: str, sop_run_id: str) -> SOPRunRecord | None:
        return await self._get(self._key(user_id, "soprun", sop_run_id), SOPRunRecord)

    async def list_sop_runs(
        self, user_id: str, sop_id: str | None = None, phase: SOPPhase | None = None
    ) -> list[SOPRunRecord]:
        runs = [
            run
            for run in await self._list(user_id, "soprun", SOPRunRecord)
            if (sop_id is None or run.sop_id == sop_id)
            and (phase is None or run.state.phase == phase)
        ]
        runs.sort(key=lambda run: run.created_at, reverse=True)
        return runs

    async def update_sop_run(
        self,
        user_id: str,
        sop_run_id: str,
        state: SOPRunState,
        sessions: dict[str, str] | None = None,
    ) -> None:
        _model(state, SOPRunState, "state")

        def change(stored: dict[str, Any]) -> tuple[dict[str, Any], list[str], None]:
            if stored.get("r") is None:
                raise KeyError(f"SOP run {sop_run_id!r} not found.")
            run = SOPRunRecord.model_validate(stored["r"])
            run.state = state
            if sessions is not None:
                run.sessions = sessions
            run.updated_at = _utcnow()
            return {"r": _dump(run)}, [], None

        await self._change(self._key(user_id, "soprun", sop_run_id), ["r"], change)

    async def delete_sop_run(self, user_id: str, sop_run_id: str) -> bool:
        key = self._key(user_id, "soprun", sop_run_id)
        run = await self._get(key, SOPRunRecord)
        if run is None:
            return False
        for session_id in run.sessions.values():
            await self.delete_session(user_id, "", session_id)
        return await self._delete(key)

    # -- teams ------------------------------------------------------------------------------

    async def upsert_team(self, user_id: str, record: TeamRecord) -> TeamRecord:
        _model(record, TeamRecord, "record")
        result: TeamRecord = await self._put(self._key(user_id, "team", record.id), record)
        return result

    async def get_team(self, user_id: str, team_id: str) -> TeamRecord | None:
        return await self._get(self._key(user_id, "team", team_id), TeamRecord)

    async def list_teams(self, user_id: str) -> list[TeamRecord]:
        return await self._list(user_id, "team", TeamRecord)

    async def delete_team(self, user_id: str, team_id: str) -> bool:
        """Created members go whole, invited ones lose only the team's session; the leader's
        session is detached, then the team removed."""
        key = self._key(user_id, "team", team_id)
        team = await self._get(key, TeamRecord)
        if team is None:
            return False
        await self._delete(key)  # first: the leader's session, deleted below, leads no team
        members = list(team.data.members)
        if not members:
            for agent_id in _legacy_member_ids(team):
                sessions = await self.list_sessions(user_id, agent_id)
                if sessions:
                    members.append(
                        TeamMember(
                            owner_id=user_id,
                            agent_id=agent_id,
                            session_id=sessions[-1].id,
                            role="created",
                        )
                    )
        for member in members:
            if member.role == "created":
                await self.delete_agent(member.owner_id, member.agent_id)
            else:
                await self.delete_session(user_id, member.agent_id, member.session_id)
        await self.set_session_team_id(user_id, team.session_id, None)
        return True

    # -- knowledge bases and their documents ------------------------------------------------

    async def upsert_knowledge_base(
        self, user_id: str, record: KnowledgeBaseRecord
    ) -> KnowledgeBaseRecord:
        _model(record, KnowledgeBaseRecord, "record")
        if record.user_id != user_id:
            raise ValueError("record.user_id does not match the given user_id.")
        result: KnowledgeBaseRecord = await self._put(self._key(user_id, "kb", record.id), record)
        return result

    async def get_knowledge_base(
        self, user_id: str, knowledge_base_id: str
    ) -> KnowledgeBaseRecord | None:
        return await self._get(self._key(user_id, "kb", knowledge_base_id), KnowledgeBaseRecord)

    async def list_knowledge_bases(self, user_id: str) -> list[KnowledgeBaseRecord]:
        return await self._list(user_id, "kb", KnowledgeBaseRecord)

    async def delete_knowledge_base(self, user_id: str, knowledge_base_id: str) -> bool:
        """The base and its documents' records (their blobs and vectors are the caller's)."""
        key = self._key(user_id, "kb", knowledge_base_id)
        if await self._get(key, KnowledgeBaseRecord) is None:
            return False
        for info in await self._infos(user_id, _documents_prefix(knowledge_base_id)):
            await self._delete(Key(info.user_id, info.session_id))
        return await self._delete(key)

    def _document_key(self, user_id: str, knowledge_base_id: str, document_id: str) -> Key:
        return self._key(user_id, "kdoc", knowledge_base_id, document_id)

    async def upsert_knowledge_document(
        self, user_id: str, record: KnowledgeDocumentRecord
    ) -> KnowledgeDocumentRecord:
        _model(record, KnowledgeDocumentRecord, "record")
        if record.user_id != user_id:
            raise ValueError("record.user_id does not match the given user_id.")
        key = self._document_key(user_id, record.knowledge_base_id, record.id)
        result: KnowledgeDocumentRecord = await self._put(key, record)
        return result

    async def get_knowledge_document(
        self, user_id: str, knowledge_base_id: str, document_id: str
    ) -> KnowledgeDocumentRecord | None:
        key = self._document_key(user_id, knowledge_base_id, document_id)
        return await self._get(key, KnowledgeDocumentRecord)

    async def list_knowledge_documents(
        self, user_id: str, knowledge_base_id: str
    ) -> list[KnowledgeDocumentRecord]:
        infos = await self._infos(user_id, _documents_prefix(knowledge_base_id))
        return await self._records(infos, KnowledgeDocumentRecord)

    async def delete_knowledge_document(
        self, user_id: str, knowledge_base_id: str, document_id: str
    ) -> bool:
        return await self._delete(self._document_key(user_id, knowledge_base_id, document_id))

    async def _change_document(
        self,
        key: Key,
        change: Callable[[KnowledgeDocumentRecord], bool],
    ) -> bool:
        """Apply ``change`` to the stored document if it returns True, as one compare-and-set
        (a missing document: False)."""

        def step(state: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str], bool]:
            if state.get("r") is None:
                return None, [], False
            document = KnowledgeDocumentRecord.model_validate(state["r"])
            if not change(document):
                return None, [], False
            return {"r": _dump(document)}, [], True

        return bool(await self._change(key, ["r"], step))

    async def update_knowledge_document_status(
        self,
        user_id: str,
        knowledge_base_id: str,
        document_id: str,
        status: Any,
        error: str | None = None,
        chunk_count: int | None = None,
    ) -> None:
        def change(document: KnowledgeDocumentRecord) -> bool:
            document.status = status
            if error is not None:
                document.data.error = error
            if chunk_count is not None:
                document.data.chunk_count = chunk_count
            document.updated_at = _utcnow()
            return True

        key = self._document_key(user_id, knowledge_base_id, document_id)
        await self._change_document(key, change)

    async def acquire_knowledge_document_lease(
        self,
        user_id: str,
        knowledge_base_id: str,
        document_id: str,
        processing_node: str,
        lease_ttl: timedelta,
        now: datetime | None = None,
    ) -> bool:
        moment = _utcnow() if now is None else _naive_utc(now)

        def change(document: KnowledgeDocumentRecord) -> bool:
            expires = document.lease_expires_at
            free = (
                document.processing_node is None or expires is None or _naive_utc(expires) < moment
            )
            if free:
                document.processing_node = processing_node
                document.lease_expires_at = moment + lease_ttl
                document.updated_at = moment
            return free

        key = self._document_key(user_id, knowledge_base_id, document_id)
        return await self._change_document(key, change)

    async def renew_knowledge_document_lease(
        self,
        user_id: str,
        knowledge_base_id: str,
        document_id: str,
        processing_node: str,
        lease_ttl: timedelta,
        now: datetime | None = None,
    ) -> bool:
        moment = _utcnow() if now is None else _naive_utc(now)

        def change(document: KnowledgeDocumentRecord) -> bool:
            held = bool(document.processing_node == processing_node)
            if held:
                document.lease_expires_at = moment + lease_ttl
                document.updated_at = moment
            return held

        key = self._document_key(user_id, knowledge_base_id, document_id)
        return await self._change_document(key, change)

    async def release_knowledge_document_lease(
        self, user_id: str, knowledge_base_id: str, document_id: str, processing_node: str
    ) -> None:
        def change(document: KnowledgeDocumentRecord) -> bool:
            held = bool(document.processing_node == processing_node)
            if held:
                document.processing_node = None
                document.lease_expires_at = None
                document.updated_at = _utcnow()
            return held

        key = self._document_key(user_id, knowledge_base_id, document_id)
        await self._change_document(key, change)

    async def list_knowledge_documents_with_expired_lease(
        self, now: datetime | None = None
    ) -> list[KnowledgeDocumentRecord]:
        moment = _utcnow() if now is None else _naive_utc(now)
        return [
            document
            for document in await self._all_documents()
            if document.status not in _TERMINAL
            and document.processing_node is not None
            and document.lease_expires_at is not None
            and _naive_utc(document.lease_expires_at) < moment
        ]

    async def list_knowledge_documents_pending_since(
        self, threshold: datetime
    ) -> list[KnowledgeDocumentRecord]:
        if not isinstance(threshold, datetime):
            raise InvalidValueError(
                f"threshold must be a datetime (documents pending since then), got {threshold!r}."
            )
        moment = _naive_utc(threshold)
        return [
            document
            for document in await self._all_documents()
            if document.status == "pending" and _naive_utc(document.created_at) < moment
        ]

    async def _all_documents(self) -> list[KnowledgeDocumentRecord]:
        return await self._records(await self._all_infos("as2:kdoc:"), KnowledgeDocumentRecord)


def _documents_prefix(knowledge_base_id: str) -> str:
    return record_id("kdoc", knowledge_base_id, "")


def _legacy_member_ids(team: TeamRecord) -> list[str]:
    """A team's roster from before AgentScope's ``members`` (``TeamData.member_ids``), which
    records may still carry: read from the dump, as reading the deprecated attribute warns."""
    ids: list[str] = team.data.model_dump(include={"member_ids"}).get("member_ids", [])
    return ids


def _without_member(
    agent_id: str,
) -> Callable[[dict[str, Any]], tuple[dict[str, Any] | None, list[str], None]]:
    """A team change dropping ``agent_id`` from its roster (nothing if it is not there)."""

    def change(state: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str], None]:
        if state.get("r") is None:
            return None, [], None
        team = TeamRecord.model_validate(state["r"])
        legacy = _legacy_member_ids(team)
        ids = [member for member in legacy if member != agent_id]
        members = [member for member in team.data.members if member.agent_id != agent_id]
        if len(ids) == len(legacy) and len(members) == len(team.data.members):
            return None, [], None
        team.data = team.data.model_copy(update={"member_ids": ids, "members": members})
        team.updated_at = _utcnow()
        return {"r": _dump(team)}, [], None

    return change


def _origin(
    origin: SessionOrigin | None,
    source: str | None,
    schedule_id: str | None,
    channel_id: str | None,
    chat_id: str | None,
    chat_name: str | None,
) -> dict[str, Any]:
    """The ``SessionRecord`` keyword saying where a session came from: ``origin``, or the
    flat arguments it replaced (folded by the record's own validator), as AgentScope does."""
    if origin is not None:
        return {"origin": origin}
    if not any((source, schedule_id, channel_id, chat_id, chat_name)):
        return {"origin": UserOrigin()}
    warnings.warn(
        "The flat source arguments are deprecated; pass ``origin`` with a SessionOrigin instead.",
        DeprecationWarning,
        stacklevel=3,
    )
    return {
        "source": source or "user",
        "source_schedule_id": schedule_id,
        "source_channel_id": channel_id,
        "source_chat_id": chat_id,
        "source_chat_name": chat_name,
    }
