"""All configuration in one place: ``Settings``, read from arguments, ``PRAISONSESSION_*``
environment variables and a ``.env`` file, in that order of precedence.

pydantic-settings costs ~0.2 s to import, so this module is imported only when a ``Session``
is first created, never by ``import praisonsession``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Every knob, with a default that works offline and with zero setup."""

    model_config = SettingsConfigDict(
        env_prefix="PRAISONSESSION_", env_file=".env", extra="ignore", validate_default=True
    )

    data_dir: Path = Field(
        Path(".praisonsession"), description="Where the embedded stores keep their files."
    )
    store_url: str | None = Field(
        None, description="Session store URL; default: sqlite:///<data_dir>/sessions.db."
    )
    default_ttl: float | None = Field(
        None, ge=0, description="TTL in seconds for sessions created without session_ttl."
    )
    sliding_ttl: bool = Field(True, description="Whether activity restarts a session's TTL.")
    durability: str = Field(
        "process",
        pattern=r"^(process|power)$",
        description=(
            "What an acknowledged write survives: 'process' (a crash of the process) or "
            "'power' (a power loss or OS crash, at the cost of an fsync per write)."
        ),
    )
    timeout: float = Field(30.0, gt=0, description="Seconds to wait for a store or endpoint.")
    sqlite_busy_timeout: float = Field(
        30.0, gt=0, description="Seconds a SQLite write waits for another process's write."
    )
    vector_store_url: str | None = Field(
        None, description="Chroma server URL for memory and knowledge; default: embedded."
    )
    vector_namespace: str = Field(
        "praisonsession",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{1,200}[A-Za-z0-9]$",
        description="Prefix of the Chroma collections, to keep apps apart on one server.",
    )
    embedder: str = Field("minilm", description="Embedder for memory and knowledge.")
    llm_base_url: str | None = Field(None, description="OpenAI-compatible base URL.")
    llm_model: str = Field("gpt-4o-mini", description="Chat model name.")
    llm_api_key: str | None = Field(None, description="API key for the LLM endpoint.")

    @field_validator("store_url", "vector_store_url", "llm_base_url")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value or None

    def resolved_store_url(self) -> str:
        if self.store_url:
            return self.store_url
        return f"sqlite:///{(self.data_dir / 'sessions.db').expanduser().resolve()}"
