"""Scripted Gemini replies for the fake server: parts (text, thoughts, function calls with
their thought signatures), usage metadata, whole turns, and the API's error bodies
(rate limits and spent quotas as the API sends them, an invalid key)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def _signed(part: dict[str, Any], signature: bytes | None) -> dict[str, Any]:
    if signature is not None:  # the API sends standard base64
        part["thoughtSignature"] = base64.b64encode(signature).decode()
    return part


def text(value: str, signature: bytes | None = None) -> dict[str, Any]:
    return _signed({"text": value}, signature)


def thought(value: str, signature: bytes | None = None) -> dict[str, Any]:
    return _signed({"text": value, "thought": True}, signature)


def call(
    name: str,
    args: dict[str, Any] | None = None,
    *,
    call_id: str | None = None,
    signature: bytes | None = None,
) -> dict[str, Any]:
    function_call: dict[str, Any] = {"name": name, "args": args or {}}
    if call_id is not None:
        function_call["id"] = call_id
    return _signed({"functionCall": function_call}, signature)


def usage(prompt: int, candidates: int, thoughts: int = 0, audio: int = 0) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    }
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    if audio:
        meta["promptTokensDetails"] = [
            {"modality": "AUDIO", "tokenCount": audio},
            {"modality": "TEXT", "tokenCount": prompt - audio},
        ]
    return meta


@dataclass
class Reply:
    """One scripted answer to a generate call: chunks to stream, or an error status."""

    chunks: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    error: dict[str, Any] | None = None

    def merged(self) -> dict[str, Any]:
        """The chunks as one non-streamed GenerateContentResponse."""
        parts: list[dict[str, Any]] = []
        out: dict[str, Any] = {"modelVersion": "fake"}
        finish = None
        for chunk in self.chunks:
            for candidate in chunk.get("candidates", []):
                parts.extend(candidate.get("content", {}).get("parts", []))
                finish = candidate.get("finishReason", finish)
            if "usageMetadata" in chunk:
                out["usageMetadata"] = chunk["usageMetadata"]
            if "promptFeedback" in chunk:
                out["promptFeedback"] = chunk["promptFeedback"]
        candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        out["candidates"] = [candidate]
        return out


def turn(*parts: dict[str, Any], meta: dict[str, Any] | None = None, finish: str = "STOP") -> Reply:
    """A model turn streamed one part per chunk; usage and finish reason on the last chunk."""
    chunks = []
    for index, part in enumerate(parts or [text("")]):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": "fake"}
        if index == len(parts) - 1 or not parts:
            candidate["finishReason"] = finish
            if meta is not None:
                chunk["usageMetadata"] = meta
        chunks.append(chunk)
    return Reply(chunks=chunks)


def error(status: int, message: str, *, details: list[dict[str, Any]] | None = None) -> Reply:
    body: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if details:
        body["details"] = details
    return Reply(status=status, error={"error": body})


# The two 429s the Gemini API sends (both RESOURCE_EXHAUSTED; the QuotaFailure's quotaId tells
# them apart). Shapes as quoted from the real API in
# https://github.com/diegosouzapw/OmniRoute/issues/9504 (2026-08-01) and
# https://dev.to/nils44344/gemini-api-429-resourceexhausted-why-your-limit-is-0-68o (2026-10-07);
# the help link is https://ai.google.dev/gemini-api/docs/rate-limits. Checked 2026-12-01.
def _quota_429(model: str, per: str, limit: int, retry_s: int) -> Reply:
    metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
    return error(
        429,
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, head to: https://ai.google.dev/gemini-api/docs/"
        "rate-limits. To monitor your current usage, head to: https://ai.dev/rate-limit. \n"
        f"* Quota exceeded for metric: {metric}, limit: {limit}, model: {model}\n"
        f"Please retry in {retry_s}.5s.",
        details=[
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": metric,
                        "quotaId": f"GenerateRequestsPer{per}PerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": model},
                        "quotaValue": str(limit),
                    }
                ],
            },
            {
                "@type": "type.googleapis.com/google.rpc.Help",
                "links": [
                    {
                        "description": "Learn more about Gemini API quotas",
                        "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_s}s"},
        ],
    )


def rate_limited(model: str, retry_s: int = 1) -> Reply:
    """A per-minute request limit: clears within a minute, worth retrying."""
    return _quota_429(model, "Minute", 5, retry_s)


def quota_spent(model: str, limit: int = 20) -> Reply:
    """The per-day quota used up (``limit=0``: the key's tier has none for the model)."""
    return _quota_429(model, "Day", limit, 37000)


def invalid_key(key: str) -> Reply:
    """What Google answers for a wrong key (400, reason API_KEY_INVALID)."""
    return error(
        400,
        f"API key not valid. Please pass a valid API key. (got {key})",
        details=[
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
            }
        ],
    )
