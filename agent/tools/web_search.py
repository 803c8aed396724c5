"""Web search as a tool, for world knowledge the recording cannot give (who wrote a song,
what a term or a place is), as the AudioToolAgent paper tested it.

Two backends: ``ddgs`` (DuckDuckGo and the other engines the package queries; no key) and
Tavily (``tavily-python``; a key in ``TAVILY_API_KEY``), built by their providers
(``agent.providers.search``). The results go to the planner and
into the trace with their URLs. The tool ignores the audio: the planner writes the query.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agent.remote import redact
from agent.tools.base import ToolContext, ToolError, ToolResult
from agent.tools.search_failures import (
    EngineWatch,
    SearchRateLimited,
    ddgs_rate_limited,
    retry_wait,
    tavily_failure,
)

DEFAULT_MAX_RESULTS = 5
MAX_RESULTS = 10
SNIPPET_CHARS = 400


@dataclass
class SearchHit:
    title: str
    url: str
    snippet: str

    def as_dict(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


class SearchBackend(Protocol):
    name: str

    async def search(self, query: str, max_results: int) -> list[SearchHit]: ...


class DdgsBackend:
    """``ddgs.DDGS().text``: no key. Its HTTP client is not Python's, so tests hand in a
    client of their own (``client_factory``) and never reach the network."""

    name = "ddgs"

    def __init__(self, timeout_s: float = 10.0, client_factory: Callable[[], Any] | None = None):
        self.timeout_s = timeout_s
        self._factory = client_factory

    def _client(self) -> Any:
        if self._factory is not None:
            return self._factory()
        from ddgs import DDGS

        return DDGS(timeout=int(max(1, self.timeout_s)))

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        try:
            from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException
        except ImportError as exc:  # pragma: no cover - listed as unavailable then
            raise ToolError("web_search needs the ddgs package (pip install ddgs).") from exc
        client = self._client()
        watch = EngineWatch()
        try:
            watch.attach(client)
            rows = await asyncio.to_thread(client.text, query, max_results=max_results)
        except RatelimitException as exc:
            raise SearchRateLimited(
                f"The search engines are rate-limiting this machine: {exc}"
            ) from exc
        except TimeoutException as exc:
            raise ToolError(f"The search engines did not answer in time: {exc}") from exc
        except DDGSException as exc:
            if watch.refused_all():  # ddgs says "no results" for engines that refused
                raise ddgs_rate_limited(watch) from exc
            if "no results" in str(exc).lower():
                return []
            raise ToolError(f"The web search failed: {exc}") from exc
        return [
            SearchHit(
                str(row.get("title") or ""),
                str(row.get("href") or row.get("url") or ""),
                str(row.get("body") or ""),
            )
            for row in rows or []
        ]


class TavilyBackend:
    """Tavily's search API through ``tavily-python``'s async client (``base_url``: tests)."""

    name = "tavily"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout_s: float = 20.0,
        key_env: str = "TAVILY_API_KEY",
    ):
        self.api_key, self.base_url, self.timeout_s, self.key_env = (
            api_key,
            base_url,
            timeout_s,
            key_env,
        )

    async def search(self, query: str, max_results: int) -> list[SearchHit]:
        import httpx
        from tavily import errors as tavily_errors

        if not self.api_key:  # without one the client would search in its keyless mode
            raise ToolError(f"No Tavily key: set {self.key_env}.")
        for attempt in itertools.count():
            answered: dict[str, Any] = {}
            try:
                body = await self._once(query, max_results, answered)
                break
            except (tavily_errors.TimeoutError, httpx.TimeoutException) as exc:
                raise ToolError(f"Tavily did not answer within {self.timeout_s:g} s.") from exc
            except httpx.TransportError as exc:
                raise ToolError(f"Cannot reach Tavily ({self._said(exc)}).") from exc
            except TAVILY_REFUSALS as exc:
                status = int(answered.get("status") or 0)
                wait = retry_wait(status, answered.get("headers") or {}, attempt)
                if wait is None:
                    detail = self._said_detail(answered.get("detail") or "", exc)
                    raise tavily_failure(status, detail, self.key_env) from exc
                await asyncio.sleep(wait)
        return [
            SearchHit(
                str(row.get("title") or ""),
                str(row.get("url") or ""),
                str(row.get("content") or ""),
            )
            for row in (body or {}).get("results", [])
            if isinstance(row, dict)
        ]

    async def _once(self, query: str, max_results: int, answered: dict[str, Any]) -> Any:
        """One search; ``answered`` gets the HTTP status, headers and error detail (the
        client's exceptions carry neither the status nor ``Retry-After``)."""
        import httpx
        from tavily import AsyncTavilyClient

        async def keep(response: httpx.Response) -> None:
            answered["status"], answered["headers"] = response.status_code, response.headers
            if response.status_code != 200:
                await response.aread()
                answered["detail"] = _tavily_detail(response)

        http = httpx.AsyncClient(
            base_url=self.base_url or "https://api.tavily.com", event_hooks={"response": [keep]}
        )
        async with http:
            client = AsyncTavilyClient(api_key=self.api_key, client=http)
            return await client.search(query, max_results=max_results, timeout=self.timeout_s)

    def _said_detail(self, detail: str, exc: BaseException) -> str:
        return redact(detail or str(exc) or "", [self.api_key], limit=200)

    def _said(self, exc: BaseException) -> str:
        return redact(str(exc) or type(exc).__name__, [self.api_key])


def _tavily_refusals() -> tuple[type[BaseException], ...]:
    try:
        import httpx
        from tavily import errors
    except ImportError:  # pragma: no cover - listed as unavailable then
        return ()
    return (errors.UsageLimitExceededError, errors.ForbiddenError, errors.InvalidAPIKeyError,
            errors.BadRequestError, httpx.HTTPStatusError)  # fmt: skip


TAVILY_REFUSALS = _tavily_refusals()


def _tavily_detail(response: Any) -> str:
    """Tavily's ``{"detail": {"error": ...}}``, else the start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict) and isinstance(body.get("detail"), dict):
        return str(body["detail"].get("error") or "")
    return str(body)[:200]


class WebSearchTool:
    local = False

    def __init__(self, backend: SearchBackend, *, name: str = "web_search", label: str = "",
                 max_results: int = DEFAULT_MAX_RESULTS) -> None:  # fmt: skip
        self.backend = backend
        self.name = name
        self.label = label or f"Web search ({backend.name})"
        self.model = backend.name
        self.max_results = max(1, min(MAX_RESULTS, max_results))
        self.description = (
            "Search the web for world knowledge the recording cannot give (who wrote or "
            "performs a song, what a named thing, term or place is, facts about a speaker). "
            "Returns titles, URLs and snippets; it does not listen to the audio."
        )
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to search for."},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_RESULTS,
                    "description": f"How many results (default {self.max_results}).",
                },
            },
            "required": ["query"],
        }

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        query = str(arguments.get("query") or "").strip()
        if not query:
            raise ToolError("Give a query to search the web for.")
        try:
            wanted = int(arguments.get("max_results") or self.max_results)
        except (TypeError, ValueError):
            wanted = self.max_results
        wanted = max(1, min(MAX_RESULTS, wanted))
        hits = (await self.backend.search(query, wanted))[:wanted]
        if not hits:
            output = f'The web search for "{query}" found nothing.'
        else:
            lines = [f'Web results for "{query}" ({self.backend.name}):']
            for number, hit in enumerate(hits, start=1):
                snippet = " ".join(hit.snippet.split())[:SNIPPET_CHARS]
                lines.append(
                    f"{number}. {hit.title} <{hit.url}>" + (f"\n   {snippet}" if snippet else "")
                )
            output = "\n".join(lines)
        return ToolResult(
            output=output,
            model=self.backend.name,
            data={
                "query": query,
                "backend": self.backend.name,
                "results": [hit.as_dict() for hit in hits],
            },
        )
