"""Issue 34: provider edges as users with keys meet them. Kimi's stream counts on the
choice, prices keyed on the provider rather than the URL, ``<PROVIDER>_BASE_URL`` pointing
a shipped entry at another endpoint (here: the local fakes, reached only through the
variable)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from genai_prices import Usage as LibraryUsage
from genai_prices import calc_price

from agent.planners.base import ChatMessage, TurnEnd
from agent.registry import Registry
from tests import fake_gemini as fg
from tests.fake_openai import Reply, ResponsesReply, Strict
from tests.provider_kit import GEMINI_KEY, KEY, KEY_ENV, gemini_fake, openai_fake

NOW = datetime(2026, 12, 1, 12, 30, tzinfo=UTC)  # a Tuesday, off-peak for DeepSeek


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr("agent.prices.utc_now", lambda: NOW)


def library(model: str, provider: str, **usage: int) -> float:
    found = calc_price(LibraryUsage(**usage), model, provider_id=provider,
                       genai_request_timestamp=NOW)  # fmt: skip
    return float(found.total_price.quantize(Decimal("0.00000001")))


async def turn_end(planner) -> TurnEnd:  # type: ignore[no-untyped-def]
    chunks = [c async for c in planner.stream_turn([ChatMessage("user", "Hi")], [])]
    return next(c for c in chunks if isinstance(c, TurnEnd))


async def test_kimi_counts_on_the_choice_are_read_and_priced_behind_a_gateway():
    """Moonshot streams its usage in ``choices[0].usage`` (earendil-works/pi#2017): it
    showed "tokens not reported" and $0; behind a gateway (any URL but Moonshot's) its price
    was $0 too, being keyed on the base URL."""
    with openai_fake({"kimi-k2.6": Strict(flavor="kimi", thinking=True)}) as (server, url):
        registry = Registry(env={"MOONSHOT_API_KEY": KEY, "MOONSHOT_BASE_URL": url})
        server.chat.append(Reply(reasoning="r", text="ok", usage=(1_000_000, 100_000)))
        end = await turn_end(registry.planner("kimi"))
    assert server.refused == [] and len(server.chat_bodies()) == 1
    assert end.usage.reported and end.usage.input_tokens == 1_000_000
    expected = library("kimi-k2.6", "moonshotai", input_tokens=1_000_000, output_tokens=100_000)
    assert expected > 0 and end.cost == pytest.approx(expected)


def test_openrouter_priced_by_its_own_listing_at_any_url():
    from agent.events import Usage

    gateway = {"OPENROUTER_API_KEY": KEY, "OPENROUTER_BASE_URL": "http://gateway.test/v1"}
    config = Registry(env=gateway).planner("openrouter").config  # type: ignore[attr-defined]
    assert config.url() == "http://gateway.test/v1"
    cost = config.prices.cost(Usage(input_tokens=1_000_000, output_tokens=1_000_000))
    assert cost > 0 and cost == pytest.approx(
        library("deepseek/deepseek-v4.1-flash", "openrouter",
                input_tokens=1_000_000, output_tokens=1_000_000)
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "variable", "model", "strict"),
    [
        ("deepseek", "DEEPSEEK_BASE_URL", "deepseek-flash",
         Strict(flavor="deepseek", thinking=True)),
        ("openrouter", "OPENROUTER_BASE_URL", "deepseek/deepseek-v4.1-flash",
         Strict(flavor="openrouter", thinking=True)),
        ("gpt", "OPENAI_BASE_URL", "gpt-6.1-sol", Strict(reasoning=True)),
    ],
)  # fmt: skip
async def test_a_base_url_variable_points_a_shipped_entry_elsewhere(name, variable, model, strict):
    key_var = variable.replace("_BASE_URL", "_API_KEY")
    with openai_fake({model: strict}) as (server, url):
        if name == "gpt":
            server.responses.append(ResponsesReply(text="ok"))
        else:
            server.chat.append(Reply(text="ok"))
        planner = Registry(env={key_var: KEY, variable: url}).planner(name)
        end = await turn_end(planner)
    assert server.refused == [] and end.usage.reported
    assert [r.body["model"] for r in server.requests] == [model]


async def test_gemini_base_url_points_the_gemini_entry_elsewhere():
    with gemini_fake(models=["gemini-4-argon"]) as (server, url):
        server.queue(fg.turn(fg.text("ok"), meta=fg.usage(10, 2)))
        registry = Registry(env={"GEMINI_API_KEY": GEMINI_KEY, "GEMINI_BASE_URL": url})
        end = await turn_end(registry.planner("gemini"))
    assert server.refused == [] and end.usage.input_tokens == 10


# -- DeepSeek's weekends -------------------------------------------------------------------------

SATURDAY_PEAK_HOUR = datetime(2026, 12, 5, 2, 30, tzinfo=UTC)  # 10:30 Saturday in Beijing
SATURDAY_EVENING = datetime(2026, 12, 5, 12, 30, tzinfo=UTC)
FRIDAY_PEAK_HOUR = datetime(2026, 12, 4, 2, 30, tzinfo=UTC)
TOKENS = {"input_tokens": 1_000_000, "output_tokens": 100_000}


def deepseek_library(at: datetime) -> Decimal:
    return calc_price(LibraryUsage(**TOKENS), "deepseek-flash", provider_id="deepseek",
                      genai_request_timestamp=at).total_price  # fmt: skip


def test_upstream_still_charges_deepseek_peak_prices_on_weekends():
    """pydantic/genai-prices#582. When this fails the library prices weekends right:
    delete ``agent/providers/deepseek.py`` (and this test)."""
    assert deepseek_library(SATURDAY_PEAK_HOUR) == 2 * deepseek_library(SATURDAY_EVENING)


def test_a_deepseek_call_on_a_weekend_costs_the_off_peak_price():
    from agent.events import Usage

    config = Registry(env={"DEEPSEEK_API_KEY": KEY}).planner("deepseek").config  # type: ignore[attr-defined]
    usage = Usage(**TOKENS)
    weekend = config.prices.cost(usage, when=SATURDAY_PEAK_HOUR)
    assert weekend == pytest.approx(float(deepseek_library(SATURDAY_EVENING)))
    assert config.prices.cost(usage, when=FRIDAY_PEAK_HOUR) == pytest.approx(2 * weekend)
    assert config.prices.at(SATURDAY_PEAK_HOUR).input_per_mtok == pytest.approx(
        config.prices.at(SATURDAY_EVENING).input_per_mtok
    )  # what the catalogue shows agrees
    sunday_night_beijing = datetime(2026, 12, 6, 17, 0, tzinfo=UTC)  # Monday 01:00 Beijing
    assert config.prices.cost(usage, when=sunday_night_beijing) == pytest.approx(weekend)


# -- an answer that names no choice ---------------------------------------------------------------

CHOICES = ["dog barking", "cat meowing"]


def similarity(text: str, options: list[str]):  # type: ignore[no-untyped-def]
    import numpy as np

    near = {"unknown": [0.21, 0.18], "a canine": [0.82, 0.3]}
    return np.asarray(near.get(text, [0.0, 0.0]))


def test_an_answer_naming_no_choice_is_mapped_as_a_guess():
    from agent.answer import match_choice

    unknown = match_choice("<answer>unknown</answer>", CHOICES, similarity)
    assert unknown.rule == "embedding" and unknown.choice == "dog barking" and unknown.guess
    assert unknown.confidence(0.9) == 0.21 and unknown.confidence(None) == 0.21
    canine = match_choice("a canine", CHOICES, similarity)  # other words, but close
    assert canine.choice == "dog barking" and not canine.guess and canine.confidence(0.9) == 0.9
    assert not match_choice("the dog", CHOICES, similarity).guess


async def test_the_answer_event_marks_the_unmatched_answer_a_best_guess(tmp_path, tone_wav):
    from agent.audio import AudioStore
    from agent.run import RunRequest, run_question
    from agent.testing import ScriptedPlanner, ScriptedTurn

    store = AudioStore(tmp_path / "audio")
    planner = ScriptedPlanner([ScriptedTurn(text="<answer>unknown</answer>")])
    request = RunRequest("Which?", [store.add_file(tone_wav)], planner, [], choices=CHOICES)
    events = [e async for e in run_question(request, store=store, similarity=similarity)]
    answer = next(e for e in events if e.type == "answer")
    assert answer.choice == "dog barking" and answer.match_rule == "embedding"
    assert answer.guess is True and answer.confidence == 0.21


# -- a model's announced end ---------------------------------------------------------------------


def test_the_catalogue_names_gpt_audios_shutdown_and_successor_from_openai():
    registry = Registry(env={"OPENAI_API_KEY": KEY})
    tools = {t["name"]: t for t in registry.catalogue()["tools"]}
    audio = tools["gpt_audio"]
    assert audio["shutdown"] == "2027-01-20" and audio["successor"] == "gpt-audio-1.5"
    assert "2027-01-20" in audio["retirement"] and "move to gpt-audio-1.5" in audio["retirement"]
    closed = next(
        p for p in registry.catalogue()["presets"] if p["name"] == "audiotoolagent_closed"
    )
    assert any(r.startswith("gpt_audio: shut") and "2027-01-20" in r for r in closed["retiring"])
    for entry in registry.entries("planner") + registry.entries("tool"):
        if entry.provider == "openai":  # OpenAI's own documentation, not a third party's
            for key in ("source", "successor_source"):
                url = entry.settings.get(key)
                assert url is None or url.startswith("https://developers.openai.com/"), url


async def test_the_doctor_warns_before_a_catalogued_shutdown(tmp_path):
    """The provider's model list gives no date here: the catalogue's is used."""
    from datetime import date, timedelta

    from agent import doctor

    ends = (date.today() + timedelta(days=30)).isoformat()
    path = tmp_path / "models.toml"
    with openai_fake({"m": Strict()}) as (server, url):
        server.chat_fn = lambda body: Reply(text="A tone.")
        path.write_text(
            f'[[tool]]\nname = "ears"\nprovider = "openai_compatible"\ninterface = "audio_chat"\n'
            f'model = "m"\nbase_url = "{url}"\nkey_env = "{KEY_ENV}"\n'
            f'shutdown = "{ends}"\nsuccessor = "m-2"\n'
            '[[tool]]\nname = "later"\nprovider = "openai_compatible"\ninterface = "audio_chat"\n'
            'model = "m"\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "UNSET_KEY_X"\n'
            f'shutdown = "{ends}"\nsuccessor = "m-2"\n'
        )
        checks = {c.name: c for c in await doctor.run_checks(Registry(path, env={KEY_ENV: KEY}),
                                                             timeout_s=5)}  # fmt: skip
    ears = checks["ears"]
    assert ears.status == "shuts_down" and ears.shutdown_date == ends
    assert f"shuts down {ends} (30 days left); move to m-2" in ears.detail
    assert f"shuts down {ends}" in doctor.table([ears])
    assert checks["later"].status == "skipped" and "move to m-2" in checks["later"].detail


# -- an empty reasoning_content ------------------------------------------------------------------


async def test_a_kimi_that_refuses_an_empty_reasoning_gets_the_field_left_out_once_asked(
    tmp_path, tone_wav
):
    """Decided: "" goes back (Moonshot's kimi-cli, DeepSeek); a deployment that refuses it
    (earendil-works/pi#4251) gets the turn again without the field, and later turns too."""
    from agent.audio import AudioStore
    from agent.testing import ScriptedTool
    from tests.provider_kit import run

    store = AudioStore(tmp_path / "audio")
    kimi = Strict(flavor="kimi", thinking=True, refuse_empty_reasoning=True)
    with openai_fake({"kimi-k2.6": kimi}) as (server, url):
        server.chat.extend(
            [Reply(tool_calls=[("events", "{}")]), Reply(tool_calls=[("events", "{}")]),
             Reply(reasoning="Done.", text="<answer>A dog.</answer>")]
        )  # fmt: skip
        planner = Registry(env={"MOONSHOT_API_KEY": KEY, "MOONSHOT_BASE_URL": url}).planner("kimi")
        events = await run(planner, [ScriptedTool("events", "A dog.")], store,
                           store.add_file(tone_wav))  # fmt: skip
    assert events[-1].type == "run_finished", events[-1]
    assert server.refused == ["kimi_empty_reasoning"]  # once: the form is remembered
    bodies = server.chat_bodies()
    assert len(bodies) == 4
    last_calls = [m for m in bodies[-1]["messages"] if m.get("tool_calls")]
    assert len(last_calls) == 2 and all("reasoning_content" not in m for m in last_calls)


async def test_the_default_kimi_still_gets_an_empty_reasoning_back(tmp_path, tone_wav):
    from agent.audio import AudioStore
    from agent.testing import ScriptedTool
    from tests.provider_kit import run

    store = AudioStore(tmp_path / "audio")
    with openai_fake({"kimi-k2.6": Strict(flavor="kimi", thinking=True)}) as (server, url):
        server.chat.extend(
            [Reply(tool_calls=[("events", "{}")]), Reply(text="<answer>A dog.</answer>")]
        )
        planner = Registry(env={"MOONSHOT_API_KEY": KEY, "MOONSHOT_BASE_URL": url}).planner("kimi")
        events = await run(planner, [ScriptedTool("events", "A dog.")], store,
                           store.add_file(tone_wav))  # fmt: skip
    assert events[-1].type == "run_finished" and server.refused == []
    [call] = [m for m in server.chat_bodies()[1]["messages"] if m.get("tool_calls")]
    assert call["reasoning_content"] == ""
