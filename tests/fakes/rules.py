"""The rules the strict fakes enforce, each taken from a failure users reported.

A rule is one refusal a real provider sends for a request of the kind this app makes: its
provider, the rule in words, what the app does about it, the link to the report it was
built from, and a check that returns the provider's own error body (status and JSON as
the report quotes it) or None. ``RULES`` lists them all; the README's "Known provider
rules" table is tested against it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Body = dict[str, Any]


@dataclass(frozen=True)
class Refusal:
    status: int
    body: Body
    rule: str  # the id of the rule that refused


@dataclass(frozen=True)
class Rule:
    id: str
    provider: str  # OpenAI | Gemini | DeepSeek | Kimi | OpenRouter | vLLM
    endpoint: str  # chat | responses | transcription | gemini (several: space-separated)
    rule: str  # what the provider refuses, in words
    we_do: str  # what the app does about it
    source: str  # the report (issue tracker) the rule and its error body come from
    check: Callable[[Body, Any], Refusal | None]


RULES: list[Rule] = []


def rule(
    *, provider: str, endpoint: str, rule: str, we_do: str, source: str
) -> Callable[[Callable[[Body, Any], Refusal | None]], Callable[[Body, Any], Refusal | None]]:
    """Register a check as a rule (the function's name is its id)."""

    def register(check: Callable[[Body, Any], Refusal | None]):  # type: ignore[no-untyped-def]
        RULES.append(Rule(check.__name__, provider, endpoint, rule, we_do, source, check))
        return check

    return register


def rules_for(endpoint: str) -> list[Rule]:
    return [r for r in RULES if endpoint in r.endpoint.split()]


# -- the providers' error bodies, as the reports quote them ---------------------------------


def openai_error(
    message: str, param: str | None = None, code: str | None = None, status: int = 400
) -> tuple[int, Body]:
    return status, {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": code,
        }
    }


def deepseek_error(message: str) -> tuple[int, Body]:
    """DeepSeek: https://github.com/zed-industries/zed/issues/55321."""
    return 400, {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request_error",
        }
    }


def kimi_error(message: str) -> tuple[int, Body]:
    """Moonshot: https://github.com/bytedance/deer-flow/issues/3043."""
    return 400, {"error": {"message": message, "type": "invalid_request_error"}}


def openrouter_error(upstream: Body, provider_name: str) -> tuple[int, Body]:
    """OpenRouter wraps the provider's own body (https://github.com/endolith/open-interpreter/issues/215)."""
    return 400, {
        "error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {
                "raw": json.dumps(upstream),
                "provider_name": provider_name,
                "is_byok": False,
            },
        },
        "user_id": "user_fake",
    }


def vllm_error(message: str) -> tuple[int, Body]:
    """vLLM's ErrorResponse (https://github.com/langchain4j/langchain4j/issues/3475)."""
    return 400, {
        "object": "error",
        "message": message,
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }


def gemini_error(message: str, status: int = 400, name: str | None = None) -> tuple[int, Body]:
    """Google's error body; ``name`` the status name when it is not the status code's usual
    one (a 400 ``FAILED_PRECONDITION``)."""
    names = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}
    return status, {
        "error": {
            "code": status,
            "message": message,
            "status": name or names.get(status, "UNKNOWN"),
        }
    }


def refusal(name: str, answer: tuple[int, Body]) -> Refusal:
    return Refusal(answer[0], answer[1], name)


def table_rows() -> list[tuple[str, str, str, str]]:
    """(provider, rule, what we do, source) for the README table."""
    return [(r.provider, r.rule, r.we_do, r.source) for r in RULES]


def count_by_provider() -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in RULES:
        counts[r.provider] = counts.get(r.provider, 0) + 1
    return counts
