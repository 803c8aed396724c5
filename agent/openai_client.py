"""The ``openai`` SDK client for any OpenAI-compatible endpoint, and its errors in words."""

from __future__ import annotations

import httpx
import openai

from agent.remote import ModelConfig, RemoteError, host_of, redact

NO_KEY = "EMPTY"  # self-hosted servers (vLLM, Ollama) accept any key


def make_client(config: ModelConfig) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key=config.key() or NO_KEY,
        base_url=config.url(),
        timeout=httpx.Timeout(config.timeout_s, connect=min(10.0, config.timeout_s)),
        max_retries=0,  # retries are ours (agent.remote.with_retries), with jitter
        default_headers=config.auth_headers() or None,  # user:password from the URL
    )


def classify_error(exc: BaseException, config: ModelConfig) -> RemoteError:
    """Turn an SDK exception into one clear message; say which are worth retrying."""
    where = host_of(config.url(), "https://api.openai.com")
    key_var = config.key_env or "the key variable"
    detail = redact(_detail(exc), config.secrets())
    if isinstance(exc, openai.AuthenticationError):
        return RemoteError(
            f"{where} rejected the key in {key_var} (401). Check that {key_var} holds a valid key.",
            kind="auth",
        )
    if isinstance(exc, openai.PermissionDeniedError):
        return RemoteError(
            f"The key in {key_var} may not use {config.model} at {where} (403): {detail}",
            kind="auth",
        )
    if isinstance(exc, openai.NotFoundError):
        return RemoteError(
            f"{where} does not know the model '{config.model}' or the endpoint (404): {detail}",
            kind="not_found",
        )
    if isinstance(exc, openai.RateLimitError):
        return RemoteError(f"{where} is rate-limiting requests (429): {detail}", "rate_limit", True)
    if isinstance(exc, openai.APITimeoutError):
        return RemoteError(
            f"{where} did not answer within {config.timeout_s:.0f} s.", "timeout", True
        )
    if isinstance(exc, openai.APIConnectionError):
        return RemoteError(f"Cannot reach {where}: {detail}", "connection", True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retryable = status >= 500 or status in (408, 409)
        return RemoteError(f"{where} answered {status}: {detail}", f"http_{status}", retryable)
    return RemoteError(f"{type(exc).__name__}: {detail}", "remote_error")


def _detail(exc: BaseException) -> str:
    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        if isinstance(body, dict):
            error = body.get("error")
            message = body.get("message") or (
                error.get("message") if isinstance(error, dict) else error
            )
            if message:
                return str(message)
        return exc.message or ""
    return str(exc) or type(exc).__name__
