"""The ``openai`` SDK client for any OpenAI-compatible endpoint, and its errors in words.

Retries are the SDK's own (``max_retries`` from the catalogue): it backs off with jitter and
honours ``Retry-After`` / ``retry-after-ms``. It would also retry a 429 that can never
succeed (``insufficient_quota``: the account has no credit), so a response hook marks those
with ``x-should-retry: false``, the header the SDK obeys.
"""

from __future__ import annotations

import json
import random
import time
from contextvars import ContextVar
from typing import Any

import httpx
import openai
from openai.types import CompletionUsage

from agent.events import Usage
from agent.remote import ModelConfig, RemoteError, RetryPolicy, host_of, redact

NO_KEY = "EMPTY"  # self-hosted servers (vLLM, Ollama) accept any key
# 429s that waiting cannot fix (https://platform.openai.com/docs/guides/error-codes)
FINAL_429_CODES = ("insufficient_quota", "billing_hard_limit_reached")
# Set on a response the SDK was told not to retry because the wait would pass the deadline.
DEADLINE_HEADER = "x-retry-deadline-passed"
_STARTED: ContextVar[float | None] = ContextVar("openai_call_started", default=None)


async def _mark_final_429(response) -> None:  # type: ignore[no-untyped-def]
    """Tell the SDK not to retry a 429 whose body says the quota is spent."""
    if response.status_code != 429 or "x-should-retry" in response.headers:
        return
    await response.aread()
    if any(code in response.text for code in FINAL_429_CODES):
        response.headers["x-should-retry"] = "false"


class _Client(openai.AsyncOpenAI):
    """The SDK's client, its retry wait taken from the catalogue entry: a server's
    Retry-After (up to 120 s) is honoured exactly as the SDK does; otherwise the wait grows
    from ``retry_base_delay_s`` to ``retry_max_delay_s`` (the SDK's own 0.5-8 s gives up on
    per-minute rate limits within seconds)."""

    retry_policy: RetryPolicy | None = None

    async def request(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """One call with the SDK's retries; its start is the origin of ``retry_deadline_s``."""
        token = _STARTED.set(time.monotonic())
        try:
            return await super().request(*args, **kwargs)
        finally:
            _STARTED.reset(token)

    def _should_retry(self, response: httpx.Response) -> bool:
        """The SDK's decision, and no retry whose wait would end past the total deadline."""
        if not super()._should_retry(response):
            return False
        policy, started = getattr(self, "retry_policy", None), _STARTED.get()
        if policy is None or started is None:
            return True
        retry_after = self._parse_retry_after_header(response.headers)
        if retry_after is not None and 0 < retry_after <= 120:
            wait = retry_after
        else:
            taken = int(response.request.headers.get("x-stainless-retry-count", "0") or 0)
            wait = min(policy.max_delay_s, policy.base_delay_s * 2**taken)
        if policy.passes_deadline(started, wait, time.monotonic()):
            response.headers[DEADLINE_HEADER] = "true"
            return False
        return True

    def _calculate_retry_timeout(  # type: ignore[override]
        self, remaining_retries: int, options: Any, response_headers: Any = None
    ) -> float:
        sdk = super()._calculate_retry_timeout(remaining_retries, options, response_headers)
        policy = getattr(self, "retry_policy", None)
        retry_after = self._parse_retry_after_header(response_headers)
        if policy is None or (retry_after is not None and 0 < retry_after <= 120):
            return sdk
        attempt = max(0, options.get_max_retries(self.max_retries) - remaining_retries)
        wait = min(policy.max_delay_s, policy.base_delay_s * 2**attempt)
        return wait * random.uniform(0.75, 1.0)


def make_client(config: ModelConfig) -> openai.AsyncOpenAI:
    client = _Client(
        api_key=config.key() or NO_KEY,
        base_url=config.url(),
        timeout=httpx.Timeout(config.timeout_s, connect=min(10.0, config.timeout_s)),
        max_retries=max(0, config.retry.attempts - 1),
        default_headers=config.auth_headers() or None,  # user:password from the URL
        http_client=openai.DefaultAsyncHttpxClient(
            timeout=httpx.Timeout(config.timeout_s, connect=min(10.0, config.timeout_s)),
            event_hooks={"response": [_mark_final_429]},
        ),
    )
    client.retry_policy = config.retry
    return client


def error_code(exc: BaseException) -> str:
    """The ``error.code`` (or ``type``) of an API error body, '' if none."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("code") or error.get("type") or "")
    return ""


def refuses_streaming(exc: BaseException) -> bool:
    """OpenAI's 400 for organisations that are not verified to stream a model
    (``param: stream``, ``code: unsupported_value``), or a model that never streams."""
    if not isinstance(exc, openai.BadRequestError):
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body, dict) else {}
    if isinstance(error, dict) and error.get("param") == "stream":
        return True
    return "stream" in (exc.message or "").lower() and "verif" in (exc.message or "").lower()


def _upstream(error: Any) -> str:
    """The provider's own message inside a gateway's wrapper: OpenRouter answers "Provider
    returned error" with the provider's body as a string in ``metadata.raw``
    (https://github.com/endolith/open-interpreter/issues/215)."""
    metadata = error.get("metadata") if isinstance(error, dict) else None
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if not isinstance(raw, str):
        return ""
    try:
        inner = json.loads(raw)
    except ValueError:
        return raw[:300]
    found = inner.get("error", inner) if isinstance(inner, dict) else inner
    message = found.get("message") if isinstance(found, dict) else found
    provider = metadata.get("provider_name") or "the provider"
    return f"{provider} answered: {message}" if message else ""


def _error_fields(exc: BaseException) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def refuses_reasoning_summary(exc: BaseException) -> bool:
    """OpenAI's 400 for organisations that are not verified to receive reasoning summaries
    (``param: reasoning.summary``): "Your organization must be verified to generate
    reasoning summaries." https://github.com/continuedev/continue/issues/9854"""
    if not isinstance(exc, openai.BadRequestError):
        return False
    if _error_fields(exc).get("param") == "reasoning.summary":
        return True
    message = (exc.message or "").lower()
    return "reasoning summar" in message and "verif" in message


def cached_tokens(usage: Any) -> int:
    """Input tokens served from the provider's cache, however the provider reports them:
    ``prompt_tokens_details.cached_tokens`` (OpenAI, OpenRouter, Moonshot),
    ``input_tokens_details.cached_tokens`` (Responses), ``prompt_cache_hit_tokens``
    (DeepSeek), ``cached_tokens`` (older Moonshot)."""
    for name in ("prompt_tokens_details", "input_tokens_details"):
        details = getattr(usage, name, None)
        value = getattr(details, "cached_tokens", None) if details is not None else None
        if value:
            return int(value)
    extra = getattr(usage, "model_extra", None) or {}
    for name in ("prompt_cache_hit_tokens", "cached_tokens"):
        if extra.get(name):
            return int(extra[name])
    return 0


def choice_usage(choice: Any) -> Any:
    """The counts a stream carries on a choice instead of on the chunk: Moonshot (Kimi)
    sends them in ``choices[0].usage`` (https://github.com/earendil-works/pi/issues/2017);
    None when the choice has none."""
    found = getattr(choice, "usage", None) or (getattr(choice, "model_extra", None) or {}).get(
        "usage"
    )
    if isinstance(found, dict):
        try:
            return CompletionUsage.model_validate(found)
        except ValueError:
            return None
    return found


def chat_usage(usage: Any) -> Usage:
    """A Chat Completions ``usage`` object in our terms; None (a server that sent no
    counts) is marked as not reported rather than shown as 0 tokens."""
    if usage is None:
        return Usage(reported=False)
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached_tokens(usage),
    )


def classify_error(exc: BaseException, config: ModelConfig) -> RemoteError:
    """Turn an SDK exception into one clear sentence that names the entry and what to do.

    The SDK has already retried what is worth retrying, so nothing here is retried again.
    """
    if isinstance(exc, RemoteError):
        return exc
    name = config.name
    where = host_of(config.url(), "https://api.openai.com")
    key_var = config.key_env or "the key variable"
    detail = redact(_detail(exc), config.secrets())
    code = error_code(exc)
    if isinstance(exc, openai.AuthenticationError):
        return RemoteError(
            f"'{name}': {where} rejected the key in {key_var} (401); put a valid key in {key_var}.",
            kind="auth",
        )
    if isinstance(exc, openai.PermissionDeniedError):
        return RemoteError(
            f"'{name}': the key in {key_var} may not use {config.model} at {where} (403): {detail}",
            kind="auth",
        )
    if (
        isinstance(exc, openai.NotFoundError)
        and code != "model_not_found"
        and ("model" not in detail.lower())
    ):  # a 404 about something else, e.g. "Item with id 'rs_…' not found" (store: false)
        return RemoteError(f"'{name}': {where} answered 404: {detail}", kind="http_404")
    if isinstance(exc, openai.NotFoundError):
        return RemoteError(
            f"'{name}': {where} does not offer the model '{config.model}' (404); pick a "
            f"current model id for this entry in config/models.toml ({detail}).",
            kind="not_found",
        )
    if isinstance(exc, openai.APIStatusError) and exc.response.headers.get(DEADLINE_HEADER):
        return RemoteError(
            f"'{name}': {where} still answered {exc.status_code} when the next retry would "
            f"have passed this entry's retry deadline of {config.retry.deadline_s:g} s "
            f"(retry_deadline_s); wait a minute or lower the request rate, then try again.",
            kind="rate_limit" if exc.status_code == 429 else f"http_{exc.status_code}",
        )
    if isinstance(exc, openai.RateLimitError):
        if code in FINAL_429_CODES:
            return RemoteError(
                f"'{name}': the account behind {key_var} has no quota left at {where} "
                f"({code}); add credit or raise the limit, then try again.",
                kind="quota",
            )
        return RemoteError(
            f"'{name}': {where} is still rate-limiting after "
            f"{config.retry.attempts} attempts (429); wait a minute or lower the request rate.",
            kind="rate_limit",
        )
    if isinstance(exc, openai.APITimeoutError):
        return RemoteError(
            f"'{name}': {where} did not answer within {config.timeout_s:.0f} s "
            f"({config.retry.attempts} attempts).",
            kind="timeout",
        )
    if isinstance(exc, openai.APIConnectionError):
        return RemoteError(
            f"'{name}': cannot reach {where}; check the URL and the network ({detail}).",
            kind="connection",
        )
    if isinstance(exc, openai.BadRequestError):
        why = f"400, {code}" if code else "400"
        return RemoteError(
            f"'{name}': {where} rejected the request for {config.model} ({why}): {detail}",
            kind="bad_request",
        )
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return RemoteError(
            f"'{name}': {where} answered {status} after {config.retry.attempts} attempts: {detail}",
            f"http_{status}",
        )
    return RemoteError(f"'{name}': {type(exc).__name__}: {detail}", "remote_error")


def _detail(exc: BaseException) -> str:
    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        if isinstance(body, dict):
            error = body.get("error")
            message = body.get("message") or (
                error.get("message") if isinstance(error, dict) else error
            )
            upstream = _upstream(error)
            if upstream:
                return upstream
            if message:
                return str(message)
        if isinstance(body, (list, str)):
            return json.dumps(body)[:300] if not isinstance(body, str) else body
        return exc.message or ""
    return str(exc) or type(exc).__name__
