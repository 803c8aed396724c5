"""Web search services as tool providers: ``ddgs`` (DuckDuckGo and the engines the package
queries; no key) and Tavily (``tavily-python``; a key). Their adapters are the backends in
``agent.tools.web_search``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent.network import offline_reason
from agent.providers.base import Provider, register_provider
from agent.remote import ModelConfig

if TYPE_CHECKING:
    from agent.tools.base import Tool
    from agent.tools.web_search import SearchBackend


class SearchProvider(Provider):
    interfaces = ("web_search",)
    lists_models = False  # a search service lists no models
    host = ""  # reached by every search: with no network to it, the tool is not offered

    def availability(self, settings: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
        """A web search needs its package and a network to reach the search service."""
        missing = super().availability(settings, env)
        if missing:
            return f"{missing} (see requirements.txt)"
        return offline_reason(self.host, env) if self.host else None

    def tool(self, settings: Mapping[str, Any], config: ModelConfig) -> Tool:
        from agent.tools.web_search import DEFAULT_MAX_RESULTS, WebSearchTool

        max_results = int(config.options.get("max_results", DEFAULT_MAX_RESULTS))
        return WebSearchTool(
            self.backend(config), name=config.name, label=config.label, max_results=max_results
        )

    def backend(self, config: ModelConfig) -> SearchBackend:
        raise NotImplementedError

    def doctor_call(self, settings: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        return {"query": "audio", "max_results": 1}, "search ok"


class DdgsProvider(SearchProvider):
    name = "ddgs"
    requires = (("ddgs", "ddgs"),)
    free = True
    # The hosts of the text engines ddgs 9.16 queries ("auto": all of them, Wikipedia and
    # Grokipedia first), checked against ``ddgs.engines.ENGINES`` by the tests: the search is
    # offered when any of them can be looked up (importing ddgs to read them would slow the
    # start).
    hosts = ("en.wikipedia.org", "grokipedia.com", "search.brave.com", "html.duckduckgo.com",
             "www.mojeek.com", "search.yahoo.com", "www.startpage.com")  # fmt: skip

    def availability(self, settings: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
        missing = Provider.availability(self, settings, env)
        if missing:
            return f"{missing} (see requirements.txt)"
        reasons = []
        for host in self.hosts:
            reason = offline_reason(host, env)
            if reason is None:
                return None
            if "took longer" in reason or "=" in reason:  # no resolver, or declared offline
                return reason
            reasons.append(host)
        return f"no network: cannot look up any of the search engines ({', '.join(reasons)})"

    def backend(self, config: ModelConfig) -> SearchBackend:
        from agent.tools.web_search import DdgsBackend

        return DdgsBackend(timeout_s=min(config.timeout_s, 30.0))


class TavilyProvider(SearchProvider):
    name = "tavily"
    requires = (("tavily", "tavily-python"),)
    host = "api.tavily.com"

    def backend(self, config: ModelConfig) -> SearchBackend:
        from agent.tools.web_search import TavilyBackend

        return TavilyBackend(
            config.key() or "",
            base_url=config.url(),
            timeout_s=config.timeout_s,
            key_env=config.key_env or "TAVILY_API_KEY",
        )


register_provider(DdgsProvider())
register_provider(TavilyProvider())
