"""``LLMConfig``: which endpoint, model and key an agent talks to, and how patiently.

Resolution, field by field (first one set wins):

1. the ``llm=`` argument: a model name, or a dict with ``model``, ``base_url`` (alias
   ``api_base``), ``api_key`` and options, as PraisonAI takes it;
2. :class:`~praisonsession.settings.Settings` (``PRAISONSESSION_LLM_BASE_URL``,
   ``PRAISONSESSION_LLM_MODEL``, ``PRAISONSESSION_LLM_API_KEY``, ``PRAISONSESSION_TIMEOUT``);
3. the standard ``OPENAI_BASE_URL`` (or ``OPENAI_API_BASE``) and ``OPENAI_API_KEY``;
4. ``https://api.openai.com/v1``, or ``http://localhost:11434/v1`` for an ``ollama/<model>`` name.

Every OpenAI-compatible server (OpenAI, Ollama, vLLM, LM Studio) takes the same requests, so the
base URL is the only thing that changes; local servers need no key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._internal.checks import check_count, check_seconds
from .._internal.redaction import clean_secret, redact_url
from ..errors import InvalidValueError
from ..settings import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["DEFAULT_BASE_URL", "OLLAMA_BASE_URL", "SAMPLING_PARAMS", "LLMConfig", "resolve_llm"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"
DEFAULT_MODEL = "gpt-4o-mini"

#: Request fields an ``llm=`` dict may set; they are sent as they are in every request body.
SAMPLING_PARAMS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "response_format",
        "reasoning_effort",
        "user",
    }
)
_OPTIONS = frozenset(
    {
        "model",
        "base_url",
        "api_base",
        "api_key",
        "timeout",
        "max_retries",
        "max_retry_wait",
        "retry_backoff",
    }
)
_OLLAMA_PREFIX = "ollama/"


@dataclass(frozen=True)
class LLMConfig:
    """A resolved endpoint configuration. Its repr never shows the key."""

    model: str
    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = None
    #: Seconds to wait for one HTTP response.
    timeout: float = DEFAULT_TIMEOUT
    #: Retries after the first attempt, on 408/409/429/5xx, timeouts and refused connections.
    max_retries: int = 3
    #: Most seconds spent waiting between attempts, all retries together.
    max_retry_wait: float = 60.0
    #: First backoff in seconds (doubled per retry, jittered) when no Retry-After is given.
    retry_backoff: float = 0.5
    #: Extra request fields, such as ``temperature``.
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise InvalidValueError(f"The LLM model must be a non-empty str, got {self.model!r}.")
        if not isinstance(self.base_url, str) or not self.base_url.startswith(
            ("http://", "https://")
        ):
            raise InvalidValueError(
                f"The LLM base_url must be an http(s) URL such as {DEFAULT_BASE_URL!r} or "
                f"{OLLAMA_BASE_URL!r}, got {self.base_url!r}."
            )
        object.__setattr__(self, "base_url", _normalise_base_url(self.base_url))
        if self.api_key is not None and not isinstance(self.api_key, str):
            raise InvalidValueError("The LLM api_key must be a str or None.")
        if self.api_key:
            object.__setattr__(self, "api_key", clean_secret(self.api_key, "The LLM api_key"))
        for name in ("timeout", "max_retry_wait", "retry_backoff"):
            check_seconds(getattr(self, name), f"llm {name}", positive=name == "timeout")
        check_count(self.max_retries, "llm max_retries")

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    @property
    def configured(self) -> bool:
        """False for the default: OpenAI's hosted endpoint with no key (it cannot answer)."""
        return bool(self.api_key) or self.base_url != DEFAULT_BASE_URL

    @property
    def shown_endpoint(self) -> str:
        """The endpoint as errors and reprs show it: a password in the URL is masked."""
        return redact_url(self.endpoint)

    def __repr__(self) -> str:
        key = "set" if self.api_key else None
        return (
            f"LLMConfig(model={self.model!r}, base_url={redact_url(self.base_url)!r}, "
            f"api_key={key}, "
            f"timeout={self.timeout:g}, max_retries={self.max_retries})"
        )


def resolve_llm(
    llm: str | Mapping[str, Any] | LLMConfig | None = None,
    settings: Settings | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> LLMConfig:
    """The configuration for ``llm=`` (see the module docstring for the order of precedence).

    ``timeout`` (the session's) bounds each HTTP request unless ``llm`` sets its own.
    """
    if isinstance(llm, LLMConfig):
        return llm
    if llm is None:
        given: dict[str, Any] = {}
    elif isinstance(llm, str):
        given = {"model": llm}
    elif isinstance(llm, Mapping):
        given = dict(llm)
    else:
        raise InvalidValueError(
            "llm must be a model name such as 'gpt-4o-mini', or a dict such as "
            "{'model': 'llama3.2', 'base_url': 'http://localhost:11434/v1'}; "
            f"got {type(llm).__name__}."
        )
    unknown = sorted(set(given) - _OPTIONS - SAMPLING_PARAMS)
    if unknown:
        raise InvalidValueError(
            f"llm has unknown keys {unknown}. Known keys: {sorted(_OPTIONS)}; request fields: "
            f"{sorted(SAMPLING_PARAMS)}."
        )
    if "api_base" in given:
        given.setdefault("base_url", given.pop("api_base"))
    env = os.environ if environ is None else environ

    for name in ("model", "base_url"):
        if name in given and not (isinstance(given[name], str) and given[name].strip()):
            raise InvalidValueError(
                f"llm[{name!r}] is {'set but empty' if given[name] == '' else 'not a str'}; "
                f"give a value, or leave {name!r} out to use the settings and the environment."
            )
    model = given.get("model") or (settings.llm_model if settings is not None else None)
    model = model or DEFAULT_MODEL
    base_url = (
        given.get("base_url")
        or (settings.llm_base_url if settings is not None else None)
        or env.get("OPENAI_BASE_URL")
        or env.get("OPENAI_API_BASE")
    )
    if isinstance(model, str) and model.startswith(_OLLAMA_PREFIX):
        model = model[len(_OLLAMA_PREFIX) :]
        base_url = base_url or OLLAMA_BASE_URL
    api_key = (
        given.get("api_key")
        or (settings.llm_api_key if settings is not None else None)
        or env.get("OPENAI_API_KEY")
        or None
    )
    options: dict[str, Any] = {}
    if "timeout" in given:
        options["timeout"] = given["timeout"]
    elif timeout is not None:
        options["timeout"] = timeout
    elif settings is not None:
        options["timeout"] = settings.timeout
    for name in ("max_retries", "max_retry_wait", "retry_backoff"):
        if name in given:
            options[name] = given[name]
    params = {k: v for k, v in given.items() if k in SAMPLING_PARAMS}
    return LLMConfig(
        model=model,
        base_url=base_url or DEFAULT_BASE_URL,
        api_key=api_key,
        params=params,
        **options,
    )


def _normalise_base_url(url: str) -> str:
    """Accept a pasted endpoint URL too: ``…/v1/chat/completions`` and ``…/v1/`` mean ``…/v1``."""
    url = url.rstrip("/")
    suffix = "/chat/completions"
    if url.endswith(suffix):
        url = url[: -len(suffix)]
    return url
