"""Issue 16, defect 4: every call priced when it happens, cache reads at their own price.

The old code fixed an entry's prices when it loaded: DeepSeek's peak-hour prices and
Gemini's dated price changes were wrong for the rest of the process, OpenRouter was priced
at DeepSeek's direct price, and cached input tokens cost the full input price. The oracle
here is ``genai_prices.calc_price`` itself, asked for the moment of the call.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from genai_prices import Usage as LibraryUsage
from genai_prices import calc_price

from agent.planners.base import ChatMessage, TurnEnd
from agent.planners.gemini import GeminiPlanner
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.planners.openai_responses import OpenAIResponsesPlanner
from agent.registry import Registry
from agent.remote import ModelConfig
from tests import fake_gemini as fg
from tests.fake_openai import Reply, ResponsesReply, Strict
from tests.provider_kit import GEMINI_KEY, KEY, gemini_fake, openai_fake

OFF_PEAK = datetime(2026, 12, 1, 12, 30, tzinfo=UTC)
PEAK = datetime(2026, 12, 2, 2, 30, tzinfo=UTC)  # DeepSeek: 01:00-04:00 UTC costs double
ENV = {"DEEPSEEK_API_KEY": KEY, "OPENROUTER_API_KEY": KEY, "OPENAI_API_KEY": KEY,
       "GEMINI_API_KEY": GEMINI_KEY, "MOONSHOT_API_KEY": KEY}  # fmt: skip


@pytest.fixture
def clock(monkeypatch):
    """Move the time calls are priced at."""
    now = {"at": OFF_PEAK}
    monkeypatch.setattr("agent.prices.utc_now", lambda: now["at"])  # the old code had none
    return now


def shipped(name: str, url: str, **override) -> ModelConfig:
    registry = Registry(env=ENV)
    entry = next(e for e in registry.entries("planner") if e.name == name)
    return ModelConfig.from_entry({**entry.settings, "base_url": url, **override}, registry.env)


def library(model: str, provider: str, at: datetime, **usage: int) -> float:
    found = calc_price(
        LibraryUsage(**usage), model, provider_id=provider, genai_request_timestamp=at
    )
    return float(found.total_price.quantize(Decimal("0.00000001")))


async def cost_of_turn(planner) -> float:  # type: ignore[no-untyped-def]
    chunks = [c async for c in planner.stream_turn([ChatMessage("user", "Hi")], [])]
    return next(c for c in chunks if isinstance(c, TurnEnd)).cost


async def test_deepseek_is_priced_at_the_hour_of_the_call_with_cache_reads(clock, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    with openai_fake({"deepseek-flash": Strict(flavor="deepseek", thinking=True)}) as (server, url):
        config = shipped("deepseek", url)  # loaded off-peak
        planner = OpenAICompatPlanner(config)
        reply = Reply(text="ok", usage=(1_000_000, 100_000), cached_tokens=400_000)
        server.chat.extend([reply, reply])
        off_peak = await cost_of_turn(planner)
        clock["at"] = PEAK
        peak = await cost_of_turn(planner)
    usage = {"input_tokens": 1_000_000, "cache_read_tokens": 400_000, "output_tokens": 100_000}
    assert off_peak == pytest.approx(library("deepseek-flash", "deepseek", OFF_PEAK, **usage))
    assert peak == pytest.approx(library("deepseek-flash", "deepseek", PEAK, **usage))
    assert peak == pytest.approx(2 * off_peak)  # 0.3024 vs 0.1512 dollars
    assert off_peak == pytest.approx(0.6 * 0.15 + 0.4 * 0.003 + 0.1 * 0.6)


async def test_gemini_is_priced_at_the_date_of_the_call(clock, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    clock["at"] = datetime(2026, 11, 30, 12, tzinfo=UTC)  # the day before the change
    with gemini_fake(models=["gemini-4-argon"]) as (server, url):
        config = shipped("gemini", url)
        assert config.prices.input_per_mtok == 2.0  # what the catalogue shows at load
        meta = fg.usage(1_000_000, 100_000)
        meta["cachedContentTokenCount"] = 200_000
        server.queue(fg.turn(fg.text("ok"), meta=meta))
        clock["at"] = datetime(2026, 12, 1, 12, tzinfo=UTC)
        cost = await cost_of_turn(GeminiPlanner(config))
    expected = library(
        "gemini-4-argon", "google", clock["at"],
        input_tokens=1_000_000, cache_read_tokens=200_000, output_tokens=100_000,
    )  # fmt: skip
    assert cost == pytest.approx(expected) and cost == pytest.approx(0.8 * 4 + 0.2 * 0.2 + 0.1 * 20)


async def test_openai_cache_reads_cost_the_cache_price(clock, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with openai_fake({"gpt-6.1-sol": Strict(reasoning=True)}) as (server, url):
        server.responses.append(
            ResponsesReply(text="ok", usage=(1_000_000, 10_000, 0), cached_tokens=900_000)
        )
        cost = await cost_of_turn(OpenAIResponsesPlanner(shipped("gpt", url)))
    expected = library(
        "gpt-6.1-sol", "openai", OFF_PEAK,
        input_tokens=1_000_000, cache_read_tokens=900_000, output_tokens=10_000,
    )  # fmt: skip
    uncached = library(
        "gpt-6.1-sol", "openai", OFF_PEAK, input_tokens=1_000_000, output_tokens=10_000
    )
    assert cost == pytest.approx(expected) and cost < uncached / 2  # long-prompt tier included


def test_openrouter_is_priced_as_openrouter_charges():
    """The old catalogue priced OpenRouter with DeepSeek's direct price (price_ref)."""
    from agent.events import Usage

    config = shipped("openrouter", "https://openrouter.ai/api/v1")
    now = datetime.now(UTC)
    ours = config.prices.cost(Usage(input_tokens=1_000_000, output_tokens=1_000_000))
    expected = library(
        "deepseek/deepseek-v4.1-flash", "openrouter", now,
        input_tokens=1_000_000, output_tokens=1_000_000,
    )  # fmt: skip
    direct = library(
        "deepseek-flash", "deepseek", now, input_tokens=1_000_000, output_tokens=1_000_000
    )
    assert ours == pytest.approx(expected) and expected != pytest.approx(direct)


def test_kimi_is_priced_from_the_library_by_its_endpoint():
    config = shipped("kimi", "https://api.moonshot.ai/v1")
    assert config.prices.ref == ("moonshotai", "kimi-k2.6") and config.prices.known
