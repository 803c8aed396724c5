"""What every remote model adapter shares: its configuration, prices, keys and retries.

Keys come from the environment only. They are never stored, logged, put into an event
or an error message: ``redact`` removes them from any text that leaves an adapter. A
``user:password@`` in a base URL is taken out of the URL before any client sees it
(``ModelConfig.url``), sent as an ``Authorization: Basic`` header instead
(``ModelConfig.auth_headers``), and redacted like a key (``ModelConfig.secrets``).
"""

from __future__ import annotations

import asyncio
import base64
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote, unquote, urlparse, urlsplit, urlunsplit

from agent.events import Usage

T = TypeVar("T")


@dataclass(frozen=True)
class Prices:
    """US dollars. Per million tokens, per minute of audio, per request."""

    input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0
    audio_input_per_mtok: float = 0.0
    per_audio_minute: float = 0.0
    per_request: float = 0.0

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> Prices:
        raw = raw or {}
        return cls(**{k: float(v) for k, v in raw.items() if k in cls.__dataclass_fields__})

    def cost(self, usage: Usage, *, audio_tokens: int = 0, requests: int = 1) -> float:
        text_input = max(0, usage.input_tokens - audio_tokens)
        return round(
            text_input * self.input_per_mtok / 1e6
            + audio_tokens * self.audio_input_per_mtok / 1e6
            + usage.output_tokens * self.output_per_mtok / 1e6
            + usage.audio_seconds / 60 * self.per_audio_minute
            + requests * self.per_request,
            8,
        )


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4  # first try + 3 retries
    base_delay_s: float = 1.0
    max_delay_s: float = 20.0

    def delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter: uniform in [0, base * 2^attempt]."""
        return random.uniform(0, min(self.max_delay_s, self.base_delay_s * 2**attempt))


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
         "interface", "enabled"}
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
            prices=Prices.from_config(raw.get("prices")),
            timeout_s=float(raw.get("timeout_s", 120.0)),
            retry=RetryPolicy(
                attempts=int(raw.get("max_retries", 3)) + 1,
                base_delay_s=float(raw.get("retry_base_delay_s", 1.0)),
            ),
            options={k: v for k, v in raw.items() if k not in cls.KNOWN},
        )

    def key(self) -> str | None:
        env = os.environ if self.env is None else self.env
        return env.get(self.key_env) if self.key_env else None

    def _raw_url(self) -> str | None:
        env = os.environ if self.env is None else self.env
        if self.base_url_env and env.get(self.base_url_env):
            return env[self.base_url_env]
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

    def __init__(self, message: str, kind: str = "remote_error", retryable: bool = False):
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable


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


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    classify: Callable[[BaseException], RemoteError],
    *,
    on_retry: Callable[[int, RemoteError, float], None] | None = None,
) -> T:
    """Run ``call``; retry what ``classify`` calls retryable (timeouts, 429, 5xx)."""
    for attempt in range(policy.attempts):
        try:
            return await call()
        except Exception as exc:  # classified below; non-retryable errors end at once
            error = exc if isinstance(exc, RemoteError) else classify(exc)
            if not error.retryable or attempt == policy.attempts - 1:
                if error is exc:
                    raise
                raise error from exc
            delay = policy.delay(attempt)
            if on_retry:
                on_retry(attempt + 1, error, delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")
