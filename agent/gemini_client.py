"""The ``google-genai`` client for the Gemini API, and its errors in words."""

from __future__ import annotations

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from agent.remote import ModelConfig, RemoteError, host_of, redact

try:  # the SDK prefers httpx2 (a fork of httpx under its own name) when it is installed
    import httpx2
except ImportError:  # pragma: no cover - depends on the environment
    httpx2 = None

DEFAULT_HOST = "generativelanguage.googleapis.com"


def _transport_errors(*names: str) -> tuple[type[BaseException], ...]:
    found: list[type[BaseException]] = []
    for module in (httpx, httpx2):
        for name in names:
            cls = getattr(module, name, None) if module is not None else None
            if isinstance(cls, type):
                found.append(cls)
    return tuple(found)


_TIMEOUTS = _transport_errors("TimeoutException")
_CONNECTION = _transport_errors("TransportError")  # connect, read, protocol errors


def make_client(config: ModelConfig) -> genai.Client:
    """A client for ``config``; ``base_url`` (tests, proxies) overrides Google's host.

    Retries are the SDK's own (``retry_options``: 408, 429 and 5xx with exponential backoff
    and jitter, attempts and delays from the catalogue entry).
    """
    key = config.key()
    if not key:
        var = config.key_env or "the key variable"
        raise RemoteError(
            f"'{config.name}': no Gemini API key; set {var} to use {config.model}.", kind="auth"
        )
    retry = types.HttpRetryOptions(
        attempts=config.retry.attempts,
        initial_delay=config.retry.base_delay_s,
        max_delay=config.retry.max_delay_s,
    )
    options: dict[str, object] = {
        "timeout": int(config.timeout_s * 1000),
        "retry_options": retry,
    }
    if url := config.url():
        options["base_url"] = url
    if headers := config.auth_headers():  # user:password from the URL
        options["headers"] = headers
    if version := config.options.get("api_version"):
        options["api_version"] = str(version)
    # vertexai=False: GOOGLE_GENAI_USE_VERTEXAI in the environment must not switch the backend
    return genai.Client(vertexai=False, api_key=key, http_options=types.HttpOptions(**options))


def classify_error(exc: BaseException, config: ModelConfig) -> RemoteError:
    """Turn an SDK exception into one sentence naming the entry and what to do.

    The SDK has already retried what is worth retrying, so nothing here is retried again.
    """
    if isinstance(exc, RemoteError):
        return exc
    name = config.name
    where = host_of(config.url(), f"https://{DEFAULT_HOST}")
    key_var = config.key_env or "the key variable"
    detail = redact(_detail(exc), config.secrets())
    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code or 0)
        if code in (401, 403) or (code == 400 and _is_bad_key(exc)):
            if code == 403 and not _is_bad_key(exc):
                return RemoteError(
                    f"'{name}': the key in {key_var} may not use {config.model} at {where} "
                    f"(403): {detail}",
                    kind="auth",
                )
            return RemoteError(
                f"'{name}': {where} rejected the key in {key_var} ({code}); put a valid "
                f"Gemini API key in {key_var}.",
                kind="auth",
            )
        if code == 404:
            return RemoteError(
                f"'{name}': {where} does not offer the model '{config.model}' (404); pick a "
                f"current model id for this entry in config/models.toml ({detail}).",
                kind="not_found",
            )
        if code == 429:
            return RemoteError(
                f"'{name}': {where} is still refusing after {config.retry.attempts} attempts "
                f"(429: rate limit or quota spent); wait, or check the quota of the key in "
                f"{key_var} ({detail}).",
                kind="rate_limit",
            )
        if code == 400:
            return RemoteError(
                f"'{name}': {where} rejected the request for {config.model} (400): {detail}",
                kind="bad_request",
            )
        return RemoteError(
            f"'{name}': {where} answered {code} after {config.retry.attempts} attempts: {detail}",
            f"http_{code}",
        )
    if isinstance(exc, (*_TIMEOUTS, TimeoutError)):
        return RemoteError(
            f"'{name}': {where} did not answer within {config.timeout_s:.0f} s.", "timeout"
        )
    if isinstance(exc, (*_CONNECTION, ConnectionError)):
        return RemoteError(
            f"'{name}': cannot reach {where}; check the URL and the network ({detail}).",
            "connection",
        )
    return RemoteError(f"'{name}': {type(exc).__name__}: {detail}", "remote_error")


def _is_bad_key(exc: genai_errors.APIError) -> bool:
    """Google answers an invalid key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID."""
    text = f"{exc.message or ''} {exc.details!r}".lower()
    return "api_key_invalid" in text or ("api key" in text and "not valid" in text)


def _detail(exc: BaseException) -> str:
    if isinstance(exc, genai_errors.APIError):
        message = exc.message or exc.status or ""
        return str(message) or f"HTTP {exc.code}"
    return str(exc) or type(exc).__name__
