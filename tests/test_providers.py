"""Real providers as they are today, against the strict fakes through the official SDKs:
capabilities from the catalogue, the Responses API, retries by the SDK, classified errors.

Each test names the defect of issue 8 it guards; against the old code each one fails.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from agent.audio import AudioStore
from agent.context import tool_timeout
from agent.planners.base import ChatMessage, TextDelta, ToolCallRequest, ToolSpec, TurnEnd
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.planners.openai_responses import OpenAIResponsesPlanner
from agent.registry import DEFAULT_CONFIG, Registry
from agent.remote import ModelConfig, Prices
from agent.run import RunRequest, run_question
from agent.testing import ScriptedTool
from agent.tools.base import ToolContext, ToolError
from agent.tools.openai_audio import OpenAIAudioChatTool
from agent.tools.transcribe import RemoteTranscribeTool
from agent.tools.windows import quiet_windows, windows
from tests.fake_openai import FakeOpenAI, Reply, ResponsesReply, Strict
from tests.servers import serve

KEY = "sk-test-PROVIDERS-0123456789"


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", KEY)


@pytest.fixture
def store(tmp_path: Path) -> AudioStore:
    return AudioStore(tmp_path / "audio")


def entry(url: str, name: str = "p", **options) -> ModelConfig:
    return ModelConfig.from_entry(
        {
            "name": name,
            "provider": "openai_compatible",
            "model": options.pop("model", "m"),
            "base_url": url,
            "key_env": "FAKE_OPENAI_KEY",
            "max_retries": options.pop("max_retries", 2),
            "timeout_s": options.pop("timeout_s", 20),
            **options,
        }
    )


@pytest.fixture
def strict() -> Iterator[tuple[FakeOpenAI, str]]:
    server = FakeOpenAI(
        key=KEY,
        models={
            "reasoner": Strict(reasoning=True),
            "m": Strict(),
            "repeats": Strict(repeat_names=True),
            "unverified": Strict(reasoning=True, refuse_stream=True),
            "voxtral": Strict(no_system_with_audio=True),
            "mp3-only": Strict(audio_formats=("mp3",)),
        },
    )
    with serve(server.app) as base:
        yield server, f"{base}/v1"


async def run(planner, tools, store, audio, **kwargs):
    request = RunRequest(kwargs.pop("question", "What is it?"), [audio], planner, tools, **kwargs)
    return [e async for e in run_question(request, store=store)]


SPEC = ToolSpec("sound_events", "Name the sounds.", {"type": "object", "properties": {}})


# -- capabilities ------------------------------------------------------------------------------


async def test_evidence_on_a_fixed_temperature_model_sends_no_temperature(strict, store, tone_wav):
    """gpt-5-class models reject temperature 0.2/0.9: the evidence strategy failed on them."""
    server, url = strict
    server.chat.extend(
        [
            Reply(tool_calls=[("events", "{}")]),
            Reply(text="<answer>a dog</answer>"),
            Reply(text='{"evidence": ["barking"]}'),
            Reply(text='{"answer": "dog", "rationale": "barking"}'),
            Reply(text='{"answer": "dog", "rationale": "barking again"}'),
        ]
    )
    planner = OpenAICompatPlanner(
        entry(
            url,
            model="reasoner",
            supports_temperature=False,
            max_tokens=500,
            max_tokens_param="max_completion_tokens",
        )
    )
    tool = ScriptedTool("events", "A dog barks.")
    events = await run(planner, [tool], store, store.add_file(tone_wav), strategy="evidence")
    assert events[-1].type == "run_finished", events[-1]
    bodies = server.chat_bodies()
    assert all("temperature" not in b and "max_tokens" not in b for b in bodies)
    assert all(b["max_completion_tokens"] == 500 for b in bodies)
    answers = [b for b in bodies if "Evidence (in this order)" in str(b["messages"])]
    assert len(answers) == 2 and "strongest reason" in str(answers[1]["messages"])
    assert "strongest reason" not in str(answers[0]["messages"])


async def test_repeated_full_function_names_are_not_concatenated(strict, store, tone_wav):
    """Some servers repeat the function name in every chunk: sound_eventssound_events."""
    server, url = strict
    server.chat.append(Reply(tool_calls=[("sound_events", '{"start": 0, "end": 1}')]))
    planner = OpenAICompatPlanner(entry(url, model="repeats"))
    chunks = [c async for c in planner.stream_turn([ChatMessage("user", "hi")], [SPEC])]
    calls = [c for c in chunks if isinstance(c, ToolCallRequest)]
    assert [(c.name, c.arguments) for c in calls] == [("sound_events", {"start": 0, "end": 1})]


async def test_a_refused_stream_falls_back_to_one_call(strict):
    """Unverified organisations get a 400 for streaming some models; that was a failed turn."""
    server, url = strict
    server.chat.extend(
        [Reply(text="thinking", tool_calls=[("sound_events", "{}")]), Reply(text="done")]
    )
    planner = OpenAICompatPlanner(entry(url, model="unverified", supports_temperature=False))
    first = [c async for c in planner.stream_turn([ChatMessage("user", "hi")], [SPEC])]
    assert [c.text for c in first if isinstance(c, TextDelta)] == ["thinking"]
    assert [c.name for c in first if isinstance(c, ToolCallRequest)] == ["sound_events"]
    assert isinstance(first[-1], TurnEnd) and first[-1].usage.input_tokens == 100
    second = [c async for c in planner.stream_turn([ChatMessage("user", "again")], [])]
    assert [c.text for c in second if isinstance(c, TextDelta)] == ["done"]
    streamed = [b.get("stream", False) for b in server.chat_bodies()]
    assert streamed == [True, False, False]  # refused once, then remembered


async def test_unpaired_tool_history_is_rejected_by_the_fake(strict):
    """The strict fake answers 400 to a tool call without its result, as the API does."""
    server, url = strict
    planner = OpenAICompatPlanner(entry(url))
    call = ToolCallRequest("call_1", "sound_events", {})
    history = [
        ChatMessage("user", "hi"),
        ChatMessage("assistant", "", tool_calls=[call]),
        ChatMessage("user", "and?"),
    ]
    with pytest.raises(Exception, match="did not have response messages"):
        [c async for c in planner.stream_turn(history, [SPEC])]
    assert server.chat_bodies()[-1]["messages"][1]["tool_calls"][0]["id"] == "call_1"


# -- audio tools -------------------------------------------------------------------------------


def _ctx(store: AudioStore, path: Path) -> ToolContext:
    audio = store.add_file(path)
    return ToolContext(audio, store.samples(audio))


async def test_voxtral_gets_its_instructions_in_the_user_turn(strict, store, tone_wav):
    """Voxtral rejects a system message next to audio: every call as configured was a 400."""
    server, url = strict
    server.chat.append(Reply(text="A tone."))
    configured = OpenAIAudioChatTool(entry(url, "voxtral", model="voxtral"))
    with pytest.raises(ToolError, match="System prompt is not supported with audio"):
        await configured(_ctx(store, tone_wav), {"question": "What is heard?"})
    fixed = OpenAIAudioChatTool(
        entry(url, "voxtral", model="voxtral", system_prompt_with_audio=False)
    )
    result = await fixed(_ctx(store, tone_wav), {"question": "What is heard?"})
    assert result.output == "A tone."
    body = server.chat_bodies()[-1]
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["messages"][0]["content"][0]["text"].startswith("Listen to the audio")


async def test_an_audio_format_the_server_refuses_is_one_clear_error(strict, store, tone_wav):
    server, url = strict
    tool = OpenAIAudioChatTool(entry(url, "mp3only", model="mp3-only", audio_formats=["mp3"]))
    with pytest.raises(ToolError, match="accepts only mp3"):
        await tool(_ctx(store, tone_wav), {"question": "?"})
    assert server.chat_bodies() == []  # refused before any request
    told_wav = OpenAIAudioChatTool(entry(url, "mp3only", model="mp3-only"))
    with pytest.raises(ToolError, match="Invalid value: 'wav'"):
        await told_wav(_ctx(store, tone_wav), {"question": "?"})


async def test_whisper_gets_the_language_and_cuts_at_silence(strict, store, tmp_path):
    """vLLM's Whisper assumes English without a language; fixed windows cut words."""
    import soundfile as sf

    server, url = strict
    rate = 16_000
    t = np.arange(rate * 2) / rate
    samples = 0.3 * np.sin(2 * np.pi * 300 * t)
    samples[int(1.15 * rate) : int(1.35 * rate)] = 0.0  # a pause between two words
    path = tmp_path / "words.wav"
    sf.write(path, samples, rate)
    assert windows(2.0, 1.5) == [(0.0, 1.0), (1.0, 2.0)]  # the old cut: inside a word
    cuts = quiet_windows(samples, 1.5, rate)
    assert len(cuts) == 2 and 1.15 <= cuts[0][1] <= 1.35
    server.transcript_fn = lambda wav: {"text": "word", "segments": []}
    tool = RemoteTranscribeTool(entry(url, "whisper", model="m", max_audio_s=1.5, language="de"))
    await tool(_ctx(store, path), {})
    sent = [r.body for r in server.requests if r.path.endswith("/audio/transcriptions")]
    assert len(sent) == 2 and all(body["language"] == "de" for body in sent)


def test_the_tool_timeout_covers_one_call_with_its_retries(tmp_path):
    """180 s was shorter than one 300 s adapter timeout plus a retry."""
    config = entry("http://127.0.0.1:9/v1", "slow", timeout_s=300, max_retries=1)
    tool = OpenAIAudioChatTool(config)
    request = RunRequest("?", [], OpenAICompatPlanner(config), [tool])
    assert tool_timeout(request, tool) >= 300 * 2 > request.tool_timeout_s


# -- retries -----------------------------------------------------------------------------------


async def test_retry_after_is_honoured(strict, store, tone_wav):
    """One test retried after 0.1 s against Retry-After: 30."""
    server, url = strict
    server.chat.extend([Reply(status=429, retry_after=1, code="rate_limit_exceeded"), Reply()])
    planner = OpenAICompatPlanner(entry(url))
    begun = time.monotonic()
    chunks = [c async for c in planner.stream_turn([ChatMessage("user", "hi")], [])]
    assert time.monotonic() - begun >= 0.95
    assert isinstance(chunks[-1], TurnEnd) and len(server.chat_bodies()) == 2


async def test_backoff_without_retry_after_comes_from_the_catalogue(strict):
    """The SDK's own 0.5-8 s backoff gave up within seconds on per-minute rate limits."""
    server, url = strict
    server.chat.extend([Reply(status=503, error="overloaded"), Reply()])
    planner = OpenAICompatPlanner(entry(url, retry_base_delay_s=2.0, retry_max_delay_s=2.0))
    begun = time.monotonic()
    [c async for c in planner.stream_turn([ChatMessage("user", "hi")], [])]
    assert time.monotonic() - begun >= 1.45  # 2 s x jitter in [0.75, 1]; the SDK's: <= 0.5 s
    assert len(server.chat_bodies()) == 2
    assert ModelConfig.from_entry({"name": "d", "provider": "openai"}).retry.worst_wait_s() >= 30


async def test_insufficient_quota_is_not_retried(strict, store, tone_wav):
    server, url = strict
    server.chat.extend(
        [Reply(status=429, error="You exceeded your current quota.", code="insufficient_quota")] * 3
    )
    events = await run(OpenAICompatPlanner(entry(url)), [], store, store.add_file(tone_wav))
    failed = events[-1]
    assert failed.type == "run_failed" and failed.kind == "quota"
    assert "'p'" in failed.message and "add credit" in failed.message
    assert len(server.chat_bodies()) == 1


@pytest.mark.parametrize(
    ("model", "key", "kind", "words"),
    [
        ("gone", KEY, "not_found", "pick a current model id"),
        ("m", "sk-wrong-0123456789", "auth", "put a valid key in FAKE_OPENAI_KEY"),
    ],
)
async def test_permanent_errors_are_one_sentence_and_not_retried(
    strict, store, tone_wav, monkeypatch, model, key, kind, words
):
    server, url = strict
    monkeypatch.setenv("FAKE_OPENAI_KEY", key)
    events = await run(
        OpenAICompatPlanner(entry(url, model=model)), [], store, store.add_file(tone_wav)
    )
    failed = events[-1]
    assert failed.type == "run_failed" and failed.kind == kind and words in failed.message
    assert len(server.chat_bodies()) == 1


# -- the Responses API -------------------------------------------------------------------------


def responses_entry(url: str, **options) -> ModelConfig:
    return entry(
        url,
        "gpt",
        model=options.pop("model", "reasoner"),
        api="responses",
        supports_temperature=False,
        reasoning_effort="medium",
        **options,
    )


async def test_responses_streams_reasoning_calls_and_sends_them_back(strict, store, tone_wav):
    server, url = strict
    server.responses.extend(
        [
            ResponsesReply(summary="I should listen.", calls=[("events", "{}")]),
            ResponsesReply(summary="A bark.", text="<answer>Dog</answer>", usage=(400, 20, 5)),
        ]
    )
    planner = OpenAIResponsesPlanner(responses_entry(url, prices={"input_per_mtok": 2.0}))
    tool = ScriptedTool("events", "A dog barks.")
    events = await run(planner, [tool], store, store.add_file(tone_wav), strategy="react")
    assert events[-1].type == "run_finished", events[-1]
    deltas = [e for e in events if e.type == "planner_delta"]
    assert "".join(d.text for d in deltas if d.kind == "reasoning") == "I should listen.A bark."
    assert next(e for e in events if e.type == "answer").text.strip() == "Dog"
    first, second = (r.body for r in server.requests if r.path.endswith("/responses"))
    assert first["stream"] and first["store"] is False and "temperature" not in first
    assert first["reasoning"]["effort"] == "medium"
    assert first["tools"][0]["name"] == "events" and first["tools"][0]["type"] == "function"
    kinds = [item.get("type", item.get("role")) for item in second["input"]]
    assert kinds == ["user", "reasoning", "function_call", "function_call_output"]
    assert second["input"][1]["encrypted_content"].startswith("enc-")
    assert events[-1].input_tokens == 120 + 400


async def test_responses_fall_back_when_streaming_is_refused(strict):
    server, url = strict
    server.responses.append(ResponsesReply(summary="hm", text="<answer>ok</answer>"))
    planner = OpenAIResponsesPlanner(responses_entry(url, model="unverified"))
    chunks = [c async for c in planner.stream_turn([ChatMessage("user", "hi")], [SPEC])]
    texts = [(c.kind, c.text) for c in chunks if isinstance(c, TextDelta)]
    assert texts == [("reasoning", "hm"), ("text", "<answer>ok</answer>")]
    assert [r.body.get("stream") for r in server.requests] == [True, None]


async def test_responses_history_without_its_reasoning_is_rejected(strict):
    """A reasoning model's function call must go back with its reasoning item."""
    server, url = strict
    planner = OpenAIResponsesPlanner(responses_entry(url))
    call = ToolCallRequest("call_1", "events", {})
    raw = {"items": [{"type": "function_call", "id": "fc_77", "call_id": "call_1",
                      "name": "events", "arguments": "{}"}]}  # fmt: skip
    history = [
        ChatMessage("user", "hi"),
        ChatMessage("assistant", "", tool_calls=[call], raw=raw),
        ChatMessage("tool", "A dog.", tool_call_id="call_1", name="events"),
    ]
    with pytest.raises(Exception, match="without its required 'reasoning' item"):
        [c async for c in planner.stream_turn(history, [SPEC])]


# -- catalogue facts ---------------------------------------------------------------------------


def test_every_remote_entry_is_dated_and_sourced():
    raw = tomllib.loads(DEFAULT_CONFIG.read_text())
    remote = [i for i in raw["planner"] + raw["tool"] if i.get("provider", "local") != "local"]
    assert len(remote) >= 6  # gpt, deepseek, gemini, openrouter, gpt_audio, gemini_audio at least
    for item in remote:
        assert item.get("checked") in ("2026-12-01", "2026-12-03"), item["name"]
        assert str(item.get("source", "")).startswith("https://"), item["name"]


def test_presets_default_to_models_live_today():
    raw = tomllib.loads(DEFAULT_CONFIG.read_text())
    models = {i["name"]: i.get("model") for i in raw["planner"] + raw["tool"]}
    shut_down = {"gpt-5", "gemini-2.5-pro", "gemini-2.5-flash", "deepseek-chat"}
    assert raw["preset"]
    for preset in raw["preset"]:
        for name in [preset["planner"], *preset["tools"]]:
            assert models[name] not in shut_down, (preset["name"], name)
    assert models["gpt"] == "gpt-6.1-sol"


def test_prices_come_from_genai_prices_with_catalogue_overrides():
    registry = Registry(env={"GEMINI_API_KEY": "k", "OPENAI_API_KEY": "k"})
    gemini = ModelConfig.from_entry(registry._entry("tool", "gemini_audio").settings)
    assert gemini.prices.source == "genai-prices" and gemini.prices.input_per_mtok > 0
    custom = ModelConfig.from_entry(
        {"name": "x", "provider": "openai", "model": "gpt-audio",
         "prices": {"audio_input_per_mtok": 99}}
    )  # fmt: skip
    assert custom.prices.audio_input_per_mtok == 99 and custom.prices.output_per_mtok == 10
    assert custom.prices.source == "genai-prices + catalogue"
    unknown = ModelConfig.from_entry({"name": "y", "provider": "openai", "model": "no-such"})
    assert unknown.prices == Prices()


def test_audio_tokens_without_their_own_price_cost_the_input_price():
    """gemini_audio had no audio price, so its audio cost about $0."""
    from agent.events import Usage

    prices = Prices(input_per_mtok=0.75, output_per_mtok=3.75)
    usage = Usage(input_tokens=32 * 60 + 100, output_tokens=0)
    assert prices.cost(usage, audio_tokens=32 * 60) == pytest.approx((32 * 60 + 100) * 0.75 / 1e6)


# -- Gemini ------------------------------------------------------------------------------------


GEMINI_KEY = "AIzaFAKE-providers-0123456789"


@pytest.fixture
def gemini(monkeypatch):
    from tests import fake_gemini as fg

    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    server = fg.FakeGemini(require_signatures=True, models=["gemini-3.8-flash"])
    with serve(server.app) as url:
        yield server, url


def gemini_entry(url: str, **options) -> ModelConfig:
    return ModelConfig.from_entry(
        {"name": "gemini", "provider": "gemini", "model": "gemini-3.8-flash", "base_url": url,
         "key_env": "GEMINI_API_KEY", "max_retries": 1, "timeout_s": 20, **options}
    )  # fmt: skip


async def test_gemini_forced_answer_keeps_declarations_with_mode_none(gemini):
    """The forced final answer dropped the tool declarations."""
    from agent.planners.gemini import GeminiPlanner
    from tests import fake_gemini as fg

    server, url = gemini
    server.queue(
        fg.turn(fg.call("sound_events", {}, call_id="c1", signature=b"sig")),
        fg.turn(fg.text("<answer>Dog</answer>")),
    )
    planner = GeminiPlanner(gemini_entry(url))
    messages = [ChatMessage("system", "Answer."), ChatMessage("user", "What animal?")]
    first = [c async for c in planner.stream_turn(messages, [SPEC])]
    calls = [c for c in first if isinstance(c, ToolCallRequest)]
    messages += [
        ChatMessage("assistant", "", tool_calls=calls, raw=first[-1].raw),
        ChatMessage("tool", "Dog", tool_call_id="c1", name="sound_events"),
    ]
    [c async for c in planner.stream_turn(messages, [], force_answer=True)]
    body = server.generate_requests[1].json
    assert body["tools"][0]["functionDeclarations"][0]["name"] == "sound_events"
    assert body["toolConfig"]["functionCallingConfig"]["mode"] == "NONE"


async def test_gemini_rebuilt_history_passes_the_signature_check(gemini):
    """A model turn rebuilt without its original had no thought signature: a 400 on Gemini 3+."""
    from agent.planners.gemini import GeminiPlanner
    from tests import fake_gemini as fg

    server, url = gemini
    server.queue(fg.turn(fg.text("<answer>Dog</answer>")))
    planner = GeminiPlanner(gemini_entry(url))
    call = ToolCallRequest("gemini_call_1", "sound_events", {})
    messages = [
        ChatMessage("user", "What animal?"),
        ChatMessage("assistant", "", tool_calls=[call]),
        ChatMessage("tool", "Dog", tool_call_id="gemini_call_1", name="sound_events"),
    ]
    chunks = [c async for c in planner.stream_turn(messages, [SPEC])]
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["<answer>Dog</answer>"]
    unsigned = {"role": "model", "parts": [{"functionCall": {"name": "sound_events"}}]}
    messages[1] = ChatMessage("assistant", "", tool_calls=[call], raw=unsigned)
    from agent.planners.base import PlannerError

    with pytest.raises(PlannerError, match="missing a thought_signature"):
        [c async for c in planner.stream_turn(messages, [SPEC])]


async def test_gemini_audio_is_priced_and_oversized_inline_audio_refused(gemini, store, tone_wav):
    """gemini_audio had no audio price: its cost showed about $0."""
    from agent.tools.gemini_audio import GeminiAudioTool
    from tests import fake_gemini as fg

    server, url = gemini
    server.queue(fg.turn(fg.text("A tone."), meta=fg.usage(32 * 2 + 20, 5, audio=32 * 2)))
    tool = GeminiAudioTool(gemini_entry(url))
    assert tool.config.prices.source == "genai-prices"
    result = await tool(_ctx(store, tone_wav), {"question": "What is heard?"})
    price = tool.config.prices
    assert result.cost == pytest.approx(
        (84 * price.input_per_mtok + 5 * price.output_per_mtok) / 1e6
    )
    assert result.cost > 0
    server.max_request_bytes = 10_000  # smaller than this request: the real API's 400
    with pytest.raises(ToolError, match="payload size exceeds the limit"):
        await tool(_ctx(store, tone_wav), {"question": "Again?"})


# -- retry classification and the total deadline ---------------------------------------------


async def test_gemini_rate_limit_is_retried_and_a_spent_quota_is_not(gemini):
    """A spent quota and a per-minute rate limit are both 429 RESOURCE_EXHAUSTED: both were
    retried. Only the QuotaFailure's per-minute quota is worth waiting for."""
    from agent.planners.base import PlannerError
    from agent.planners.gemini import GeminiPlanner
    from tests import fake_gemini as fg

    server, url = gemini
    config = gemini_entry(url, max_retries=3, retry_base_delay_s=0.1, retry_max_delay_s=0.1)
    server.queue(fg.rate_limited("gemini-3.8-flash"), fg.turn(fg.text("<answer>Dog</answer>")))
    chunks = [c async for c in GeminiPlanner(config).stream_turn([ChatMessage("user", "hi")], [])]
    assert isinstance(chunks[-1], TurnEnd) and len(server.generate_requests) == 2

    for limit in (20, 0):  # the day's quota used up; a tier with no quota for the model
        before = len(server.generate_requests)
        server.queue(*[fg.quota_spent("gemini-3.8-flash", limit=limit)] * 4)
        with pytest.raises(PlannerError) as failed:
            [c async for c in GeminiPlanner(config).stream_turn([ChatMessage("user", "hi")], [])]
        assert len(server.generate_requests) == before + 1  # not retried
        assert failed.value.kind == "quota"
        message = str(failed.value)
        assert "'gemini'" in message and "quota" in message and "GEMINI_API_KEY" in message
        assert message.count(". ") == 0 and "\n" not in message  # one sentence


async def test_gemini_retries_stop_at_the_total_deadline(gemini):
    from agent.planners.base import PlannerError
    from agent.planners.gemini import GeminiPlanner
    from tests import fake_gemini as fg

    server, url = gemini
    config = gemini_entry(
        url, max_retries=5, retry_base_delay_s=1, retry_max_delay_s=1, retry_deadline_s=1.5
    )
    server.queue(*[fg.rate_limited("gemini-3.8-flash")] * 6)
    with pytest.raises(PlannerError) as failed:
        [c async for c in GeminiPlanner(config).stream_turn([ChatMessage("user", "hi")], [])]
    assert len(server.generate_requests) == 2  # the third try would start after 2 s > 1.5 s
    assert "'gemini'" in str(failed.value) and "retry deadline of 1.5 s" in str(failed.value)


async def test_openai_retries_stop_at_the_total_deadline(strict):
    """Retries were bounded only by attempts x waits, never by a total time."""
    from agent.planners.base import PlannerError

    server, url = strict
    server.chat.extend([Reply(status=503, error="overloaded")] * 6)
    config = entry(url, max_retries=5, retry_base_delay_s=1, retry_max_delay_s=1,
                   retry_deadline_s=1.5)  # fmt: skip
    with pytest.raises(PlannerError) as failed:
        [c async for c in OpenAICompatPlanner(config).stream_turn([ChatMessage("user", "hi")], [])]
    assert len(server.chat_bodies()) == 2
    assert "'p'" in str(failed.value) and "retry deadline of 1.5 s" in str(failed.value)
    assert ModelConfig.from_entry({"name": "d", "provider": "openai"}).retry.deadline_s == 90
