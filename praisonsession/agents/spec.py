"""``AgentSpec``: everything an agent is made of but its history, as one frozen value.

``session.Agent(...)`` (sync and async), ``create_agent`` and ``Agent`` take their options from
it, so each option, its default and its check are written once, here. A spec can be kept and
reused: ``session.Agent(spec)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, fields
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_count
from .._internal.identifiers import check_key
from ..errors import InvalidValueError
from .compaction import COMPACT_EVERY
from .tokens import coerce_counter

if TYPE_CHECKING:
    from ..llm.config import LLMConfig
    from .tokens import TokenCounter

__all__ = ["IGNORED_OPTIONS", "AgentSpec"]

#: PraisonAI options that have no effect here (PraisonAI's factory drops them too).
IGNORED_OPTIONS = frozenset({"verbose", "user_id", "markdown"})


@dataclass(frozen=True)
class AgentSpec:
    """An agent's name, PraisonAI's options (in PraisonAI's order), and ours by keyword.

    ``history_window``: turns of history sent (None for all); ``max_tool_rounds``: tool-call
    rounds per turn; ``context_items``: ``max_items`` for the session's ``get_context``;
    ``goal`` and ``backstory`` are added to the system message. ``knowledge`` is a list of
    sources, or True for "the session's knowledge"; ``llm`` a model name, a dict with
    ``model``, ``base_url`` and ``api_key``, an ``LLMConfig``, or None for the settings.
    For long conversations (``docs/pages/long-conversations.md``): ``context_budget`` (tokens
    per request, None for the setting or the model's), ``token_counter`` (a counter or a
    function of a str), ``recall_turns`` (older turns recalled by similarity, 0 for none) and
    ``compact_every`` (turns per summary update).
    """

    name: str
    role: str = "Assistant"
    instructions: str | None = None
    tools: Iterable[Callable[..., Any]] | None = ()
    memory: bool = True
    knowledge: Iterable[str] | bool | None = None
    llm: str | Mapping[str, Any] | LLMConfig | None = None
    _: KW_ONLY
    goal: str | None = None
    backstory: str | None = None
    history_window: int | None = 20
    max_tool_rounds: int = 5
    context_items: int = 3
    context_budget: int | None = None
    token_counter: TokenCounter | Callable[[str], int] | None = None
    recall_turns: int = 4
    compact_every: int = COMPACT_EVERY

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # frozen: the checked values replace the given ones
        set_field(self, "name", check_key(self.name, "agent name"))
        for label in ("role", "instructions", "goal", "backstory"):
            text = getattr(self, label)
            if text is not None and not isinstance(text, str):
                raise InvalidValueError(f"{label} must be a str, got {type(text).__name__}.")
        if self.history_window is not None:
            check_count(self.history_window, "history_window")
        check_count(self.max_tool_rounds, "max_tool_rounds")
        check_count(self.context_items, "context_items", low=1)
        if self.context_budget is not None:
            check_count(self.context_budget, "context_budget", low=256)
        check_count(self.recall_turns, "recall_turns")
        check_count(self.compact_every, "compact_every", low=1)
        if self.token_counter is not None:
            coerce_counter(self.token_counter)  # refuses what cannot count
        set_field(self, "tools", tuple(self.tools or ()))
        set_field(self, "memory", bool(self.memory))
        set_field(self, "knowledge", _sources(self.knowledge))

    @classmethod
    def of(cls, *args: Any, **options: Any) -> AgentSpec:
        """A spec from ``session.Agent``'s arguments (or the spec itself, given alone);
        PraisonAI's options that mean nothing here are dropped, any other unknown refused."""
        if len(args) == 1 and isinstance(args[0], AgentSpec) and not options:
            return args[0]
        known = [field.name for field in fields(cls)]
        positional = known[: known.index("llm") + 1]
        unknown = sorted(set(options) - set(known) - IGNORED_OPTIONS)
        if unknown or len(args) > len(positional) or any(isinstance(a, AgentSpec) for a in args):
            raise InvalidValueError(
                f"Agent() got unexpected arguments {unknown or list(args[len(positional) :])}; "
                f"it takes {', '.join(positional)} (in this order or by keyword), or an "
                f"AgentSpec alone, and by keyword {', '.join(known[len(positional) :])}."
            )
        given = dict(zip(positional, args, strict=False))
        taken = sorted(given.keys() & options.keys())
        if taken or ("name" not in given and "name" not in options):
            raise InvalidValueError(
                f"Agent() got {taken} twice; pass each option once."
                if taken
                else "Agent() needs a name: session.Agent(name='Tutor', ...)."
            )
        given.update((k, v) for k, v in options.items() if k not in IGNORED_OPTIONS)
        return cls(**given)


def _sources(knowledge: Iterable[str] | bool | None) -> tuple[str, ...] | None:
    """PraisonAI takes a list of sources, or True for "use the session's knowledge"."""
    if knowledge is None or knowledge is False:
        return None
    if knowledge is True:
        return ()
    if isinstance(knowledge, str):
        return (knowledge,)
    return tuple(str(source) for source in knowledge)
