"""What a web search service's refusals mean, said as such to the planner and the trace,
and which of them are worth another try.

ddgs (9.16) queries several engines at once and turns any non-200 answer into "no
results": when every engine refuses (202, 403, 429: their ways of saying "too many
requests from this address"), the search would read "found nothing" with no error and no
``RatelimitException``. ``EngineWatch`` records each engine's HTTP status where ddgs calls
its HTTP client, so a search that every engine refused is reported as a rate limit.

Tavily's codes (https://help.tavily.com/articles/8645538886-understanding-http-errors):
429 too many requests (a rate limit: retried when the answer says when, ``Retry-After``),
432 the plan's usage limit, 433 the pay-as-you-go limit (quota: waiting does not help),
5xx a failure on Tavily's side (retried, bounded).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.tools.base import ToolError

# What ddgs's engines answer an address they are rate-limiting with: DuckDuckGo's 202
# (a challenge page), 403 (Bing, Google, Brave blocking), 429.
RATE_LIMIT_STATUSES = frozenset({202, 403, 429})
RETRIES = 2  # Tavily: at most this many more tries
MAX_WAIT_S = 10.0  # a longer Retry-After is not waited for: the planner is told instead
BACKOFF_S = 1.0  # 5xx: 1 s, then 2 s


class SearchRateLimited(ToolError):
    """Every engine (or the service) refused the search as too many requests."""


@dataclass
class EngineWatch:
    """The HTTP status each ddgs engine answered one search with."""

    statuses: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attach(self, client: Any, backend: str = "auto") -> None:
        """Wrap the HTTP client of every text engine ``client`` (a ``ddgs.DDGS``) will use.
        A stand-in without engines (tests of the tool itself) is left alone."""
        engines = getattr(client, "_get_engines", None)
        if engines is None:
            return
        for engine in engines("text", backend):
            http = getattr(engine, "http_client", None)
            if http is None or getattr(http, "_watched_by", None) is self:
                continue
            http.request = self._recording(engine.name, http.request)
            http._watched_by = self

    def _recording(self, name: str, request: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            response = request(*args, **kwargs)
            with self._lock:
                self.statuses[name] = int(getattr(response, "status_code", 0) or 0)
            return response

        return call

    def refused_all(self) -> bool:
        """Every engine asked answered with a rate-limit status."""
        return bool(self.statuses) and all(s in RATE_LIMIT_STATUSES for s in self.statuses.values())

    def limited(self) -> dict[str, int]:
        return {n: s for n, s in self.statuses.items() if s in RATE_LIMIT_STATUSES}

    def said(self) -> str:
        """Short: "HTTP 202 from duckduckgo; 403 from bing, google; 429 from 7 others"."""
        by_status: dict[int, list[str]] = {}
        for name, status in sorted(self.statuses.items()):
            by_status.setdefault(status, []).append(name)
        parts = []
        for status, names in sorted(by_status.items(), key=lambda item: len(item[1])):
            who = ", ".join(names) if len(names) <= 2 else f"{len(names)} others"
            parts.append(f"{status} from {who}")
        return "HTTP " + "; ".join(parts)


def ddgs_rate_limited(watch: EngineWatch) -> SearchRateLimited:
    return SearchRateLimited(
        f"Web search is rate-limited: all {len(watch.statuses)} search engines refused this "
        f"machine's request ({watch.said()}). Not an empty result: wait a few minutes or "
        "use web_search_tavily."
    )


def tavily_failure(status: int, detail: str, key_env: str) -> ToolError:
    """One sentence for a Tavily refusal, by its status code."""
    said = f" ({detail})" if detail else ""
    if status == 429:
        return SearchRateLimited(
            f"Tavily is rate-limiting the key in {key_env}: too many requests{said}. "
            "Wait a little before searching again."
        )
    if status == 432:
        return ToolError(
            f"Tavily: the plan's usage limit of the key in {key_env} is reached{said}; "
            "upgrade the plan on the Tavily dashboard. Waiting does not help."
        )
    if status == 433:
        return ToolError(
            f"Tavily: the key's pay-as-you-go limit is reached{said}; raise it on the "
            "Tavily dashboard. Waiting does not help."
        )
    if status == 401:
        return ToolError(f"Tavily rejected the key in {key_env}; put a valid key there.")
    if status == 403:
        return ToolError(f"Tavily refused the search (403 forbidden){said}.")
    if status == 400:
        return ToolError(f"Tavily refused the search as a bad request{said}.")
    if status >= 500:
        return ToolError(f"Tavily failed on its side (HTTP {status}){said}; try again later.")
    return ToolError(f"Tavily answered HTTP {status}{said}.")


def retry_wait(status: int, headers: Mapping[str, str], attempt: int) -> float | None:
    """Seconds to wait before trying again after ``attempt`` (0: the first try) failed
    with ``status``, or None when it is not worth it: a 5xx backs off, a 429 waits what its
    ``Retry-After`` says (up to ``MAX_WAIT_S``), quota and key errors are final."""
    if attempt >= RETRIES:
        return None
    if status >= 500:
        return BACKOFF_S * 2**attempt
    if status == 429:
        try:
            wait = float(headers.get("retry-after") or "")
        except ValueError:
            return None
        return wait if 0 <= wait <= MAX_WAIT_S else None
    return None
