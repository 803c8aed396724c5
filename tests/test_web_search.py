"""The web_search tool: ddgs through an injected client (its HTTP client is not Python's, so
no test may let it search), Tavily through ``tavily-python`` against a local server that
speaks its API; unavailable with the reason without network or key; never a default tool."""

from __future__ import annotations

import re
import socket
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from agent import network
from agent.audio import AudioStore
from agent.registry import Registry
from agent.testing import ScriptedPlanner, ScriptedTurn
from agent.tools.base import ToolError
from agent.tools.web_search import DdgsBackend, TavilyBackend, WebSearchTool
from tests.provider_kit import run, tool_ctx
from tests.servers import serve

TAVILY_KEY = "tvly-test-SECRET-0123456789"
ROWS = [
    {"title": "Ode to Joy", "href": "https://en.wikipedia.org/wiki/Ode_to_Joy",
     "body": "The final movement of Beethoven's Ninth Symphony."},
    {"title": "Symphony No. 9", "href": "https://example.org/ninth", "body": "Premiered 1824."},
]  # fmt: skip


class FakeDDGS:
    """Stands in for ``ddgs.DDGS``: the same ``text`` call, answers from a list."""

    def __init__(self, rows: list[dict[str, Any]] | None = None, raises: Exception | None = None):
        self.rows, self.raises, self.asked = rows or [], raises, []

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        self.asked.append((query, kwargs))
        if self.raises is not None:
            raise self.raises
        return self.rows[: kwargs.get("max_results") or 10]


@pytest.fixture
def store(tmp_path) -> AudioStore:
    return AudioStore(tmp_path / "audio")


async def test_ddgs_results_with_their_urls(store, tone_wav):
    client = FakeDDGS(ROWS)
    tool = WebSearchTool(DdgsBackend(client_factory=lambda: client), max_results=5)
    result = await tool(
        tool_ctx(store, tone_wav), {"query": "Ode to Joy composer", "max_results": 1}
    )
    assert client.asked == [("Ode to Joy composer", {"max_results": 1})]
    assert "<https://en.wikipedia.org/wiki/Ode_to_Joy>" in result.output
    assert "Beethoven" in result.output and "ninth" not in result.output
    assert result.data["results"] == [
        {"title": "Ode to Joy", "url": "https://en.wikipedia.org/wiki/Ode_to_Joy",
         "snippet": "The final movement of Beethoven's Ninth Symphony."}
    ]  # fmt: skip
    assert result.data["backend"] == "ddgs" and result.cost == 0


async def test_ddgs_failures_are_tool_errors_and_no_results_is_said(store, tone_wav):
    from ddgs.exceptions import DDGSException, RatelimitException

    ctx = tool_ctx(store, tone_wav)
    limited = WebSearchTool(
        DdgsBackend(client_factory=lambda: FakeDDGS(raises=RatelimitException("202")))
    )
    with pytest.raises(ToolError, match="rate-limiting"):
        await limited(ctx, {"query": "x"})
    empty = WebSearchTool(
        DdgsBackend(client_factory=lambda: FakeDDGS(raises=DDGSException("No results found.")))
    )
    result = await empty(ctx, {"query": "xyzzy"})
    assert result.output == 'The web search for "xyzzy" found nothing.'
    with pytest.raises(ToolError, match="Give a query"):
        await empty(ctx, {"query": "  "})


def tavily_app(seen: list[dict[str, Any]]) -> FastAPI:
    """The part of Tavily's API the tool uses (https://docs.tavily.com/documentation/api-reference/endpoint/search)."""
    app = FastAPI()

    @app.post("/search")
    async def search(request: Request):  # type: ignore[no-untyped-def]
        body = await request.json()
        seen.append({"body": body, "auth": request.headers.get("authorization")})
        if request.headers.get("authorization") != f"Bearer {TAVILY_KEY}":
            return JSONResponse(
                {"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401
            )
        results = [
            {"title": r["title"], "url": r["href"], "content": r["body"], "score": 0.9}
            for r in ROWS[: body.get("max_results", 5)]
        ]
        return {"query": body["query"], "results": results, "response_time": 0.2}

    return app


async def test_tavily_through_its_client_against_a_local_server(store, tone_wav):
    seen: list[dict[str, Any]] = []
    with serve(tavily_app(seen)) as url:
        tool = WebSearchTool(TavilyBackend(TAVILY_KEY, base_url=url), name="web_search_tavily")
        result = await tool(tool_ctx(store, tone_wav), {"query": "Ode to Joy", "max_results": 2})
        wrong = WebSearchTool(TavilyBackend("tvly-wrong-0123456789", base_url=url))
        with pytest.raises(ToolError, match="rejected the key in TAVILY_API_KEY") as refused:
            await wrong(tool_ctx(store, tone_wav), {"query": "x"})
    assert seen[0]["body"]["query"] == "Ode to Joy" and seen[0]["body"]["max_results"] == 2
    assert "<https://example.org/ninth>" in result.output and result.data["backend"] == "tavily"
    assert "tvly-wrong" not in str(refused.value)


async def test_a_planner_searches_and_the_trace_keeps_the_urls(store, tone_wav):
    tool = WebSearchTool(DdgsBackend(client_factory=lambda: FakeDDGS(ROWS)))
    planner = ScriptedPlanner(
        [ScriptedTurn(calls=[("web_search", {"query": "Ode to Joy composer"})]),
         ScriptedTurn(text="<answer>Beethoven</answer>")]
    )  # fmt: skip
    events = await run(planner, [tool], store, store.add_file(tone_wav), question="Who wrote it?")
    result = next(e for e in events if e.type == "tool_result")
    assert result.error is None and "https://en.wikipedia.org/wiki/Ode_to_Joy" in result.output
    assert result.data["results"][0]["url"].startswith("https://")
    assert events[-1].type == "run_finished"


def test_without_network_or_key_the_catalogue_says_why():
    catalogue = Registry(env={}).catalogue()  # the tests run as a machine without network
    tools = {t["name"]: t for t in catalogue["tools"]}
    assert not tools["web_search"]["available"] and "no network" in tools["web_search"]["reason"]
    assert tools["web_search_tavily"]["reason"] == "set TAVILY_API_KEY to use it"
    online = Registry(env={"AUDIO_AGENT_NETWORK": "on", "TAVILY_API_KEY": TAVILY_KEY})
    tools = {t["name"]: t for t in online.catalogue()["tools"]}
    assert tools["web_search"]["available"] and tools["web_search_tavily"]["available"]
    assert tools["web_search"]["default_selected"] is False
    assert "web_search" not in online.default_tools() and "transcribe" in online.default_tools()
    offline_preset = online.preset("offline")
    assert not any(t.startswith("web_search") for t in offline_preset["tools"])


def test_the_network_check_is_one_quick_lookup_remembered(monkeypatch):
    monkeypatch.delenv(network.NETWORK_VAR, raising=False)
    lookups: list[str] = []

    def offline(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        lookups.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    monkeypatch.setattr(network, "_answers", {})
    reason = network.offline_reason("search.invalid")
    assert reason and "no network" in reason and "search.invalid" in reason
    assert network.offline_reason("search.invalid") == reason and lookups == ["search.invalid"]
    assert network.offline_reason("x", {"AUDIO_AGENT_NETWORK": "on"}) is None


# -- issue 34: rate limits and quota errors said as such, retries, the probe ------------------


class LocalHttp:
    """Where ddgs calls an engine's HTTP client: the request goes to a local server that
    answers as that engine (primp, ddgs's client, cannot be pointed at one per engine)."""

    def __init__(self, base: str, engine: str) -> None:
        self.base, self.engine = base, engine

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        import httpx

        answer = httpx.request(method, f"{self.base}/{self.engine}", timeout=10,
                               params=kwargs.get("params"), data=kwargs.get("data"))  # fmt: skip
        return SimpleNamespace(
            status_code=answer.status_code, text=answer.text, content=answer.content
        )


def refusing_engines(statuses: dict[str, int]) -> FastAPI:
    app = FastAPI()

    @app.api_route("/{engine}", methods=["GET", "POST"])
    async def engine(engine: str):  # type: ignore[no-untyped-def]
        return Response("<html>slow down</html>", statuses.get(engine, 429))

    return app


def ddgs_against(base: str) -> Any:
    from ddgs import DDGS

    client = DDGS(timeout=10)
    for engine in client._get_engines("text", "auto"):  # the instances text() will use
        engine.http_client = LocalHttp(base, engine.name)
    return client


async def test_ddgs_every_engine_refusing_is_a_rate_limit_not_nothing_found(store, tone_wav):
    """ddgs 9.16 turns 202/403/429 into "No results found." with no RatelimitException."""
    statuses = {"duckduckgo": 202, "bing": 403, "google": 403}
    with serve(refusing_engines(statuses)) as base:
        tool = WebSearchTool(DdgsBackend(client_factory=lambda: ddgs_against(base)))
        planner = ScriptedPlanner(
            [ScriptedTurn(calls=[("web_search", {"query": "Ode to Joy composer"})]),
             ScriptedTurn(text="<answer>unknown</answer>")]
        )  # fmt: skip
        events = await run(planner, [tool], store, store.add_file(tone_wav))
    result = next(e for e in events if e.type == "tool_result")
    assert result.error and "rate-limited" in result.error and "Not an empty result" in result.error
    assert re.search(
        r"all \d+ search engines refused this machine's request \(HTTP (20|40|42)", result.error
    )
    assert "found nothing" not in (result.output or "")


def tavily_script(answers: list[tuple[int, dict[str, str]]], seen: list[int]) -> FastAPI:
    app = FastAPI()

    @app.post("/search")
    async def search(request: Request):  # type: ignore[no-untyped-def]
        status, headers = answers[min(len(seen), len(answers) - 1)]
        seen.append(status)
        if status == 200:
            return {
                "query": "q",
                "results": [{"title": "t", "url": "https://x.org", "content": "c"}],
            }
        messages = {429: "Your request has been blocked due to excessive requests.",
                    432: "This request exceeds your plan's set usage limit.",
                    433: "This request exceeds the pay-as-you-go limit."}  # fmt: skip
        return JSONResponse(
            {"detail": {"error": messages.get(status, "boom")}}, status, headers=headers
        )

    return app


@pytest.mark.parametrize(
    ("answers", "tries", "said"),
    [
        ([(503, {}), (200, {})], 2, None),
        ([(429, {"Retry-After": "0"}), (200, {})], 2, None),
        ([(429, {})], 1, "rate-limiting the key in TAVILY_API_KEY"),
        ([(429, {"Retry-After": "3600"})], 1, "rate-limiting"),
        ([(432, {})], 1, "plan's usage limit"),
        ([(433, {})], 1, "pay-as-you-go limit"),
        ([(500, {})], 3, "failed on its side (HTTP 500)"),
    ],
)
async def test_tavily_refusals_are_named_and_what_is_retryable_is_retried(
    answers, tries, said, store, tone_wav, monkeypatch
):
    from agent.tools import search_failures

    monkeypatch.setattr(search_failures, "BACKOFF_S", 0.01)
    seen: list[int] = []
    with serve(tavily_script(answers, seen)) as url:
        tool = WebSearchTool(TavilyBackend(TAVILY_KEY, base_url=url))
        if said is None:
            result = await tool(tool_ctx(store, tone_wav), {"query": "q"})
            assert "<https://x.org>" in result.output
        else:
            with pytest.raises(ToolError) as failed:
                await tool(tool_ctx(store, tone_wav), {"query": "q"})
            assert said in str(failed.value) and "HTTPStatusError" not in str(failed.value)
            assert "Client error" not in str(failed.value) and TAVILY_KEY not in str(failed.value)
    assert len(seen) == tries


def test_ddgs_is_offered_when_any_engine_it_queries_can_be_reached(monkeypatch):
    from ddgs.engines import ENGINES

    from agent.providers.search import DdgsProvider

    engine_hosts = {urlsplit(cls.search_url.replace("{lang}", "en")).hostname
                    for cls in ENGINES["text"].values()}  # fmt: skip
    assert set(DdgsProvider.hosts) == engine_hosts  # the probe follows ddgs's engines
    monkeypatch.delenv(network.NETWORK_VAR, raising=False)
    monkeypatch.setattr(network, "_answers", {})
    lookups: list[str] = []

    def only_mojeek(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        lookups.append(host)
        if host != "www.mojeek.com":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 443))]

    monkeypatch.setattr(socket, "getaddrinfo", only_mojeek)
    assert DdgsProvider().availability({}, {}) is None
    assert "duckduckgo.com" not in lookups and "www.mojeek.com" in lookups
    monkeypatch.setattr(network, "_answers", {})
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: only_mojeek("none"))
    reason = DdgsProvider().availability({}, {})
    assert reason and "no network" in reason and "search.brave.com" in reason
