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

    The SDK's own retries stay off (it has none unless ``retry_options`` is set): retries
    are ours (``agent.remote.with_retries``), with jitter.
    """
    key = config.key()
    if not key:
        var = config.key_env or "the key variable"
        raise RemoteError(f"No Gemini API key: set {var} to use {config.model}.", kind="auth")
    options: dict[str, object] = {"timeout": int(config.timeout_s * 1000)}
    if url := config.url():
        options["base_url"] = url
    if headers := config.auth_headers():  # user:password from the URL
        options["headers"] = headers
    if version := config.options.get("api_version"):
        options["api_version"] = str(version)
    # vertexai=False: GOOGLE_GENAI_USE_VERTEXAI in the environment must not switch the backend
    return genai.Client(vertexai=False, api_key=key, http_options=types.HttpOptions(**options))


def classify_error(exc: BaseException, config: ModelConfig) -> RemoteError:
    """Turn an SDK exception into one clear message; say which are worth retrying."""
    if isinstance(exc, RemoteError):
        return exc
    where = host_of(config.url(), f"https://{DEFAULT_HOST}")
    key_var = config.key_env or "the key variable"
    detail = redact(_detail(exc), config.secrets())
    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code or 0)
        if code in (401, 403) or (code == 400 and _is_bad_key(exc)):
            if code == 403 and not _is_bad_key(exc):
                return RemoteError(
                    f"The key in {key_var} may not use {config.model} at {where} (403): {detail}",
                    kind="auth",
                )
            return RemoteError(
                f"{where} rejected the key in {key_var} ({code}). "
                f"Check that {key_var} holds a valid Gemini API key.",
                kind="auth",
            )
        if code == 404:
            return RemoteError(
                f"{where} does not know the model '{config.model}' or the endpoint (404): {detail}",
                kind="not_found",
            )
        if code == 429:
            return RemoteError(
                f"{where} is rate-limiting requests or the quota is spent (429): {detail}",
                "rate_limit",
                True,
            )
        retryable = code >= 500 or code == 408
        return RemoteError(f"{where} answered {code}: {detail}", f"http_{code}", retryable)
    if isinstance(exc, (*_TIMEOUTS, TimeoutError)):
        return RemoteError(
            f"{where} did not answer within {config.timeout_s:.0f} s.", "timeout", True
        )
    if isinstance(exc, (*_CONNECTION, ConnectionError)):
        return RemoteError(f"Cannot reach {where}: {detail}", "connection", True)
    return RemoteError(f"{type(exc).__name__}: {detail}", "remote_error")


def _is_bad_key(exc: genai_errors.APIError) -> bool:
    """Google answers an invalid key with 400 INVALID_ARGUMENT and reason API_KEY_INVALID."""
    text = f"{exc.message or ''} {exc.details!r}".lower()
    return "api_key_invalid" in text or ("api key" in text and "not valid" in text)


def _detail(exc: BaseException) -> str:
    if isinstance(exc, genai_errors.APIError):
        message = exc.message or exc.status or ""
        return str(message) or f"HTTP {exc.code}"
    return str(exc) or type(exc).__name__
