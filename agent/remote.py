"""What every remote model adapter shares: its configuration, prices (``agent.prices``),
keys and retries.

Keys come from the environment only. They are never stored, logged, put into an event
or an error message: ``redact`` removes them from any text that leaves an adapter. A
``user:password@`` in a base URL is taken out of the URL before any client sees it
(``ModelConfig.url``), sent as an ``Authorization: Basic`` header instead
(``ModelConfig.auth_headers``), and redacted like a key (``ModelConfig.secrets``).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlparse, urlsplit, urlunsplit

from agent.prices import Prices


@dataclass(frozen=True)
class RetryPolicy:
    """Retries are the SDKs' own (both back off with jitter; ``openai`` honours
    Retry-After up to 120 s). ``attempts`` counts the first try."""

    attempts: int = 6  # first try + 5 retries: 1+2+4+8+16 s, enough for per-minute limits
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    # Total time one call may spend retrying: no retry starts whose wait would end after
    # ``deadline_s`` from the first attempt (catalogue: ``retry_deadline_s``).
    deadline_s: float = 90.0

    def passes_deadline(self, started: float, wait_s: float, now: float) -> bool:
        """Whether a retry after ``wait_s`` more seconds would start past the deadline."""
        return now - started + wait_s > self.deadline_s

    def worst_wait_s(self) -> float:
        """How long the retries of one call sleep in total without Retry-After. (A server's
        Retry-After, up to 120 s each, can make it longer; the tool timeout then ends it.)"""
        return min(
            self.deadline_s,
            sum(min(self.max_delay_s, self.base_delay_s * 2**i) for i in range(self.attempts - 1)),
        )


@dataclass
class ModelConfig:
    """One planner or tool entry of the catalogue file."""

    name: str
    provider: str
    model: str = ""
    label: str = ""
    description: str = ""
    base_url: str | None = None
    base_url_env: str | None = None
    key_env: str | None = None
    prices: Prices = field(default_factory=Prices)
    timeout_s: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    options: dict[str, Any] = field(default_factory=dict)  # everything else in the entry
    # Where keys and URLs are looked up (default: the process environment).
    env: Mapping[str, str] | None = field(default=None, repr=False)

    KNOWN = frozenset(
        {"name", "provider", "model", "label", "description", "base_url", "base_url_env",
         "key_env", "key_optional", "prices", "timeout_s", "max_retries", "retry_base_delay_s",
         "retry_max_delay_s", "retry_deadline_s", "interface", "enabled", "price_ref",
         "price_provider"}
    )  # fmt: skip

    @classmethod
    def from_entry(
        cls, raw: Mapping[str, Any], env: Mapping[str, str] | None = None
    ) -> ModelConfig:
        return cls(
            env=env,
            name=raw["name"],
            provider=raw.get("provider", "local"),
            model=raw.get("model", ""),
            label=raw.get("label", ""),
            description=raw.get("description", ""),
            base_url=raw.get("base_url"),
            base_url_env=raw.get("base_url_env"),
            key_env=raw.get("key_env"),
            prices=Prices.for_entry(raw),
            timeout_s=float(raw.get("timeout_s", 120.0)),
            retry=RetryPolicy(
                attempts=int(raw.get("max_retries", 5)) + 1,
                base_delay_s=float(raw.get("retry_base_delay_s", 1.0)),
                max_delay_s=float(raw.get("retry_max_delay_s", 30.0)),
                deadline_s=float(raw.get("retry_deadline_s", 90.0)),
            ),
            options={k: v for k, v in raw.items() if k not in cls.KNOWN},
        )

    # -- capabilities (the catalogue says what the model accepts; adapters read these) ------
    @property
    def supports_temperature(self) -> bool:
        return bool(self.options.get("supports_temperature", True))

    @property
    def streaming(self) -> bool:
        return bool(self.options.get("streaming", True))

    @property
    def max_tokens_param(self) -> str:
        return str(self.options.get("max_tokens_param", "max_tokens"))

    @property
    def system_prompt_with_audio(self) -> bool:
        return bool(self.options.get("system_prompt_with_audio", True))

    @property
    def audio_formats(self) -> list[str]:
        return [str(f) for f in self.options.get("audio_formats", ["wav"])]

    @property
    def thinking(self) -> bool:
        """The model reasons before it answers and needs its reasoning back next to its own
        tool calls (DeepSeek, Kimi K2, Qwen3 behind vLLM's reasoning parser)."""
        return bool(self.options.get("thinking", False))

    @property
    def reasoning_field(self) -> str | None:
        """The message field an OpenAI-compatible server takes the reasoning back in
        (``reasoning_content``, ``reasoning`` or ``reasoning_details``); None: the field it
        came in."""
        value = self.options.get("reasoning_field")
        return str(value) if value else None

    def budget_s(self) -> float:
        """How long one call may take with all its retries: the tool timeout must exceed it."""
        return self.timeout_s * self.retry.attempts + self.retry.worst_wait_s()

    def key(self) -> str | None:
        env = os.environ if self.env is None else self.env
        return env.get(self.key_env) if self.key_env else None

    @property
    def base_url_var(self) -> str | None:
        """The variable that points this entry at another endpoint (a gateway, a proxy, a
        stand-in speaking the same API) without editing the catalogue: ``base_url_var`` in
        the entry, else its key variable with ``_API_KEY`` replaced by ``_BASE_URL``
        (``OPENAI_BASE_URL``, ``GEMINI_BASE_URL``, ``DEEPSEEK_BASE_URL``,
        ``MOONSHOT_BASE_URL``, ``OPENROUTER_BASE_URL``, ``TAVILY_BASE_URL``)."""
        named = self.options.get("base_url_var")
        if named:
            return str(named)
        if self.key_env and self.key_env.endswith("_API_KEY"):
            return self.key_env.removesuffix("_API_KEY") + "_BASE_URL"
        return None

    def _raw_url(self) -> str | None:
        env = os.environ if self.env is None else self.env
        for var in (self.base_url_env, self.base_url_var):
            if var and env.get(var):
                return env[var]
        return self.base_url

    def url(self) -> str | None:
        """The base URL without any ``user:password@`` (see ``auth_headers``)."""
        return strip_credentials(self._raw_url())

    def auth_headers(self) -> dict[str, str]:
        """``Authorization: Basic`` from a ``user:password@`` in the base URL, else nothing.

        For a server behind a proxy with basic auth. It takes the place of the SDK's
        ``Bearer`` key header (one request has one Authorization header)."""
        user, password = url_credentials(self._raw_url())
        if user is None and password is None:
            return {}
        token = base64.b64encode(f"{user or ''}:{password or ''}".encode()).decode("ascii")
        return {"Authorization": f"Basic {token}"}

    def secrets(self) -> list[str | None]:
        """Everything ``redact`` must remove from text about this model."""
        raw = self._raw_url()
        userinfo = urlsplit(raw).netloc.rpartition("@")[0] if raw and "@" in raw else ""
        _, password = url_credentials(raw)
        basic = self.auth_headers().get("Authorization", "").removeprefix("Basic ")
        return [self.key(), password, userinfo, unquote(userinfo), basic] + (
            [quote(password, safe="")] if password else []
        )


class RemoteError(Exception):
    """A remote call that failed for good, with a message a person can act on."""

    def __init__(self, message: str, kind: str = "remote_error"):
        super().__init__(message)
        self.kind = kind


def redact(text: str, secrets: list[str | None], limit: int = 300) -> str:
    """Remove secrets, then shorten (in that order, so no half key survives a cut)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def url_credentials(url: str | None) -> tuple[str | None, str | None]:
    """(user, password) from ``scheme://user:password@host/...`` (percent-decoded)."""
    if not url or "@" not in url:
        return None, None
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return None, None
    user, colon, password = parts.netloc.rpartition("@")[0].partition(":")
    return unquote(user), (unquote(password) if colon else None)


def strip_credentials(url: str | None) -> str | None:
    """``url`` without its ``user:password@`` part, if it has one."""
    if not url or "@" not in url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def host_of(url: str | None, default: str) -> str:
    """host[:port] of a URL, never its user:password part."""
    parsed = urlparse(url or default)
    if not parsed.hostname:
        return "the server"
    return parsed.hostname + (f":{parsed.port}" if parsed.port else "")
