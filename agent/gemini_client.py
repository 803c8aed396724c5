"""The ``google-genai`` client for the Gemini API, and its errors in words."""

from __future__ import annotations

import httpx
import tenacity
from google import genai
from google.genai import _api_client as genai_api_client
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
    client = genai.Client(vertexai=False, api_key=key, http_options=types.HttpOptions(**options))
    _classify_sdk_retries(client, retry, config)
    return client


# A 429 from the Gemini API is RESOURCE_EXHAUSTED both for a per-minute rate limit and for a
# spent quota; the body's google.rpc.QuotaFailure names the quota. Per-minute ids
# (GenerateRequestsPerMinutePerProjectPerModel-FreeTier) clear within a minute; per-day ids
# (GenerateRequestsPerDayPerProjectPerModel-FreeTier) reset only the next day, and a limit of 0
# ("limit: 0" in the message: the key's tier has no quota for the model) never clears.
# Sources (checked 2026-12-01): https://ai.google.dev/gemini-api/docs/rate-limits (linked
# from every such error body), error bodies quoted in
# https://github.com/diegosouzapw/OmniRoute/issues/9504 (2026-08-01, per-day vs per-minute
# quotaId), https://dev.to/nils44344/gemini-api-429-resourceexhausted-why-your-limit-is-0-68o
# (2026-10-07, limit 0 / per-minute / per-day), and
# https://docs.llmgateway.io/troubleshooting/gemini-429-resource-exhausted ("a per-day quota
# does not reset until the next day, so retrying will not help").


def quota_exhausted(exc: BaseException) -> bool:
    """A 429 that waiting a minute cannot fix: a per-day quota, or a limit of 0."""
    if not isinstance(exc, genai_errors.APIError) or exc.code != 429:
        return False
    ids: list[str] = []
    details = (exc.details or {}).get("error", exc.details or {})
    for item in details.get("details", []) if isinstance(details, dict) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("QuotaFailure"):
            for violation in item.get("violations", []):
                if isinstance(violation, dict):
                    ids.append(str(violation.get("quotaId", "")))
                    if str(violation.get("quotaValue", "")) == "0":
                        return True
    if any("perday" in quota.lower() for quota in ids):
        return True
    return ", limit: 0," in (exc.message or "")


def _classify_sdk_retries(
    client: genai.Client, options: types.HttpRetryOptions, config: ModelConfig
) -> None:
    """Keep the SDK's own retry loop (tenacity, built from ``options``) but never retry a
    spent quota, and start no retry whose wait would pass ``retry_deadline_s``. The SDK offers
    no predicate in HttpRetryOptions, so its Retrying objects are rebuilt with ours."""
    api = getattr(client, "_api_client", None)
    if api is None or not hasattr(api, "_async_retry"):  # pragma: no cover - SDK changed
        return
    kwargs = genai_api_client.retry_args(options)
    sdk_retry = kwargs["retry"]
    policy = config.retry

    def retry(state: tenacity.RetryCallState) -> bool:
        failure = state.outcome.exception() if state.outcome else None
        return bool(sdk_retry(state)) and not (failure and quota_exhausted(failure))

    def stop(state: tenacity.RetryCallState) -> bool:
        if state.attempt_number >= policy.attempts:
            return True
        if state.seconds_since_start + (state.upcoming_sleep or 0) > policy.deadline_s:
            failure = state.outcome.exception() if state.outcome else None
            if failure is not None:
                failure.retry_deadline_passed = True  # type: ignore[attr-defined]
            return True
        return False

    kwargs.update(retry=retry, stop=stop)
    api._retry = tenacity.Retrying(**kwargs)
    api._async_retry = tenacity.AsyncRetrying(**kwargs)


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
        if code == 429 and quota_exhausted(exc):
            return RemoteError(
                f"'{name}': the quota of the key in {key_var} for {config.model} is spent "
                f"at {where} (429, not retried); wait for the daily reset or raise the "
                f"quota (enable billing), then try again.",
                kind="quota",
            )
        if getattr(exc, "retry_deadline_passed", False):
            return RemoteError(
                f"'{name}': {where} still answered {code} when the next retry would have "
                f"passed this entry's retry deadline of {config.retry.deadline_s:g} s "
                f"(retry_deadline_s); wait a minute, then try again.",
                kind="rate_limit" if code == 429 else f"http_{code}",
            )
        if code == 429:
            return RemoteError(
                f"'{name}': {where} is still rate-limiting after {config.retry.attempts} "
                f"attempts (429); wait a minute or lower the request rate ({detail}).",
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
