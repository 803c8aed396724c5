"""Issue 16, defects 2, 3 and 5: the shipped catalogue entries against fakes that refuse what
Gemini and OpenAI refuse, and the smaller things a real provider does differently.

Each test names what the old code did; against it each one fails.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from agent import events as ev
from agent.audio import AudioStore
from agent.planners.base import ChatMessage, TextDelta, ToolCallRequest, ToolSpec
from agent.planners.gemini import GeminiPlanner
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.planners.openai_responses import OpenAIResponsesPlanner
from agent.registry import Registry
from agent.remote import ModelConfig
from agent.testing import ScriptedPlanner, ScriptedTool, ScriptedTurn
from agent.tools.openai_audio import OpenAIAudioChatTool
from agent.tools.transcribe import RemoteTranscribeTool
from frontend import answer_text, render
from tests import fake_gemini as fg
from tests.fake_openai import Reply, ResponsesReply, Strict
from tests.provider_kit import GEMINI_KEY, KEY, gemini_fake, openai_fake, run, tool_ctx

FIXTURES = Path(__file__).parent / "fixtures"
ENV = {
    "OPENAI_API_KEY": KEY, "DEEPSEEK_API_KEY": KEY, "GEMINI_API_KEY": GEMINI_KEY,
    "QWEN_OMNI_BASE_URL": "http://127.0.0.1:9/v1", "QWEN3_OMNI_BASE_URL": "http://127.0.0.1:9/v1",
}  # fmt: skip


@pytest.fixture
def store(tmp_path) -> AudioStore:
    return AudioStore(tmp_path / "audio")


@pytest.fixture(autouse=True)
def gemini_key(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)


def shipped(kind: str, name: str, url: str, **override: Any) -> tuple[dict[str, Any], ModelConfig]:
    """A shipped catalogue entry pointed at a fake."""
    registry = Registry(env=ENV)
    entry = next(e for e in registry.entries(kind) if e.name == name)  # type: ignore[arg-type]
    settings = {**entry.settings, "base_url": url, "max_retries": 0, **override}
    settings.pop("base_url_env", None)
    return settings, ModelConfig.from_entry(settings, registry.env)


SPEC = ToolSpec(
    "events",
    "Name the sounds.",
    {"type": "object", "properties": {"top_k": {"type": "integer"}}},  # optional argument
)


# -- defect 2: Gemini's stand-in signature ------------------------------------------------------


async def test_gemini_caption_first_is_accepted_on_its_first_request(store, tone_wav):
    """caption_first's opening call carries the stand-in signature: the old code sent its
    base64 and Gemini 3+ answered "Thought signature is not valid."."""
    ears = ScriptedTool(
        "ears", "A dog barks.", parameters={"type": "object", "properties": {"question": {}}}
    )
    ears.local = False
    with gemini_fake(models=["gemini-4-argon"]) as (server, url):
        server.queue(fg.turn(fg.text('{"answer": "A dog", "reasoning": "barking"}')))
        _, config = shipped("planner", "gemini", url)
        events = await run(
            GeminiPlanner(config), [ears], store, store.add_file(tone_wav),
            strategy="caption_first", question="Which animal?",
        )  # fmt: skip
    assert events[-1].type == "run_finished", events[-1]
    assert server.refused == []
    part = server.generate_requests[0].json["contents"][1]["parts"][0]
    assert part["thoughtSignature"] == "skip_thought_signature_validator"


# -- defect 3: reasoning summaries for organisations that are not verified ---------------------


async def test_an_unverified_organisation_gets_answers_without_summaries(store, tone_wav):
    """``reasoning.summary`` was always sent: every gpt request failed with a 400 naming it.
    Now: retried once without it, remembered for the process, and the trace says why."""
    with openai_fake({"gpt-6.1-sol": Strict(reasoning=True, refuse_summary=True)}) as (server, url):
        server.responses.extend(
            [ResponsesReply(summary="Check events.", calls=[("events", "{}")]),
             ResponsesReply(text="<answer>A dog.</answer>")]
        )  # fmt: skip
        _, config = shipped("planner", "gpt", url)
        events = await run(
            OpenAIResponsesPlanner(config), [ScriptedTool("events", "A dog.")], store,
            store.add_file(tone_wav),
        )  # fmt: skip
        bodies = [r.body for r in server.requests if r.path.endswith("/responses")]
        later = OpenAIResponsesPlanner(config)  # another run in the same process
        [c async for c in later.stream_turn([ChatMessage("user", "Hi")], [])]
    assert events[-1].type == "run_finished", events[-1]
    assert server.refused == ["summary_unverified"]  # once, then never asked again
    assert bodies[0]["reasoning"]["summary"] == "auto"
    assert all("summary" not in b.get("reasoning", {}) for b in bodies[1:])
    assert "summary" not in server.requests[-1].body.get("reasoning", {})
    notices = [e.notice for e in events if isinstance(e, ev.Thought) and e.notice]
    assert notices and "must be verified" in notices[0]
    text = json.dumps(render.render_run(events))
    assert text.count("No reasoning summary") == 1  # shown once, on the first turn


async def test_reasoning_summary_is_a_catalogue_option(store):
    with openai_fake({"gpt-6.1-sol": Strict(reasoning=True)}) as (server, url):
        _, config = shipped("planner", "gpt", url, reasoning_summary="none")
        planner = OpenAIResponsesPlanner(config)
        [c async for c in planner.stream_turn([ChatMessage("user", "Hi")], [])]
    assert server.requests[-1].body["reasoning"] == {"effort": "medium"}


# -- defect 5: the smaller things ----------------------------------------------------------------


async def test_models_that_keep_their_default_temperature_get_none(store, tone_wav):
    """Gemini 3+ and DeepSeek in thinking mode: the evidence strategy sent 0.2 and 0.9."""
    answers = [
        Reply(text='{"evidence": ["barking"]}'),
        Reply(text='{"answer": "dog", "rationale": "barking"}'),
        Reply(text='{"answer": "dog", "rationale": "barking again"}'),
    ]
    with openai_fake({"deepseek-flash": Strict(flavor="deepseek", thinking=True)}) as (server, url):
        server.chat_fn = lambda body: answers[min(len(server.chat_bodies()) - 1, 2)]
        _, config = shipped("planner", "deepseek", url)
        await run(
            OpenAICompatPlanner(config),
            [ScriptedTool("events", "A dog barks.")],
            store,
            store.add_file(tone_wav),
            strategy="evidence",
            choices=["dog", "cat"],
        )
    assert server.chat_bodies() and all("temperature" not in b for b in server.chat_bodies())
    for name in ("gemini", "deepseek", "kimi", "openrouter"):
        settings = next(e for e in Registry(env={}).entries("planner") if e.name == name).settings
        assert settings.get("supports_temperature") is False, name
    with gemini_fake(models=["gemini-4-argon"]) as (gserver, gurl):
        gserver.queue(fg.turn(fg.text("ok")))
        _, config = shipped("planner", "gemini", gurl, temperature=0.3)
        planner = GeminiPlanner(config)
        [c async for c in planner.stream_turn([ChatMessage("user", "Hi")], [], temperature=0.9)]
    assert "temperature" not in gserver.generate_requests[0].json.get("generationConfig", {})


async def test_responses_tools_say_strict_false(store, tone_wav):
    """Without ``strict`` the Responses API takes the tool as strict and refuses a schema with
    optional arguments ("Invalid schema for function ...")."""
    with openai_fake({"gpt-6.1-sol": Strict(reasoning=True)}) as (server, url):
        server.responses.append(ResponsesReply(calls=[("events", "{}")]))
        _, config = shipped("planner", "gpt", url)
        chunks = [c async for c in OpenAIResponsesPlanner(config).stream_turn(
            [ChatMessage("user", "What is heard?")], [SPEC])]  # fmt: skip
    assert server.refused == [] and chunks
    assert server.requests[-1].body["tools"][0]["strict"] is False


async def test_encrypted_reasoning_is_asked_for_without_an_effort(store, tone_wav):
    """store is always false, but the encrypted reasoning was asked for only with an effort:
    the reasoning item came back without it and the next turn was "not found"."""
    closed = ToolSpec(  # a schema strict mode accepts, so only the reasoning is at stake
        "events", "Name the sounds.",
        {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
    )  # fmt: skip
    with openai_fake({"gpt-6.1-sol": Strict(reasoning=True)}) as (server, url):
        server.responses.extend(
            [ResponsesReply(calls=[("events", "{}")]), ResponsesReply(text="<answer>dog</answer>")]
        )
        settings, _ = shipped("planner", "gpt", url)
        settings.pop("reasoning_effort")
        planner = OpenAIResponsesPlanner(ModelConfig.from_entry(settings, {"OPENAI_API_KEY": KEY}))
        messages = [ChatMessage("user", "What is heard?")]
        first = [c async for c in planner.stream_turn(messages, [closed])]
        calls = [c for c in first if isinstance(c, ToolCallRequest)]
        messages += [
            ChatMessage("assistant", "", tool_calls=calls, raw=first[-1].raw),
            ChatMessage("tool", "A dog.", tool_call_id=calls[0].id, name="events"),
        ]
        second = [c async for c in planner.stream_turn(messages, [closed])]
    assert server.refused == [], server.refused
    assert any(isinstance(c, TextDelta) and "dog" in c.text for c in second)
    assert all(b.body["include"] == ["reasoning.encrypted_content"] for b in server.requests[1:])


async def test_gpt_transcribe_reports_its_languages(store, tone_wav):
    """gpt-transcribe returns ``languages: [{"code": ...}]``; the tool read ``language``."""
    with openai_fake({"gpt-transcribe": Strict(json_only_transcription=True)}) as (server, url):
        server.transcripts.append({"text": "Bonjour.", "languages": [{"code": "fr"}]})
        _, config = shipped("tool", "gpt_transcribe", url)
        result = await RemoteTranscribeTool(config)(tool_ctx(store, tone_wav), {})
    assert server.refused == []
    assert result.data["language"] == "fr" and "fr" in result.output


async def test_omni_models_are_asked_for_text_only(store, tone_wav):
    """Without ``modalities = ["text"]`` vLLM-Omni also generates speech for every answer."""
    omni = Strict(flavor="vllm", omni=True)
    with openai_fake(
        {"Qwen/Qwen2.5-Omni-7B": omni, "Qwen/Qwen3-Omni-30B-A3B-Instruct": omni},
        key=None,  # self-hosted: any key
    ) as (server, url):
        server.chat_fn = lambda body: Reply(text="A tone.")
        results = []
        for name in ("qwen2_5_omni", "qwen3_omni"):
            _, config = shipped("tool", name, url)
            tool = OpenAIAudioChatTool(config)
            results.append(await tool(tool_ctx(store, tone_wav), {"question": "What?"}))
    assert [b["modalities"] for b in server.chat_bodies()] == [["text"], ["text"]]
    assert server.spoken == 0 and [r.output for r in results] == ["A tone.", "A tone."]


async def test_an_omni_model_asked_without_modalities_also_speaks(store, tone_wav):
    """What the entries' ``modalities = ["text"]`` saves: the fake vLLM-Omni answers as the
    real one does, with a second choice holding the talker's speech."""
    with openai_fake({"Qwen/Qwen2.5-Omni-7B": Strict(flavor="vllm", omni=True)}, key=None) as (
        server,
        url,
    ):
        server.chat_fn = lambda body: Reply(text="A tone.")
        _, config = shipped("tool", "qwen2_5_omni", url)
        config = dataclasses.replace(
            config, options={k: v for k, v in config.options.items() if k != "modalities"}
        )
        result = await OpenAIAudioChatTool(config)(tool_ctx(store, tone_wav), {"question": "?"})
        client = openai.OpenAI(base_url=url, api_key="none", max_retries=0)
        spoken = client.chat.completions.create(
            model="Qwen/Qwen2.5-Omni-7B", messages=[{"role": "user", "content": "Hi"}]
        )
    assert "modalities" not in server.chat_bodies()[0] and server.spoken == 2
    assert result.output == "A tone."  # the text is the first choice; the speech was made
    text, speech = spoken.choices
    assert text.message.content == "A tone." and text.message.audio is None
    assert speech.message.content is None and speech.index == text.index == 0
    assert base64.b64decode(speech.message.audio.data)[:4] == b"RIFF"


async def test_a_server_that_sends_no_usage_is_not_reported_as_zero_tokens(store, tone_wav):
    """A local server that sends no usage while streaming showed "0 tokens"."""
    with openai_fake({"m": Strict(flavor="vllm", usage_in_stream=False)}, key=None) as (
        server,
        url,
    ):
        server.chat.append(Reply(text="<answer>A tone.</answer>"))
        config = ModelConfig.from_entry(
            {
                "name": "local",
                "provider": "openai_compatible",
                "model": "m",
                "base_url": url,
                "key_env": "X",
            }
        )
        events = await run(OpenAICompatPlanner(config), [], store, store.add_file(tone_wav))
    assert server.chat_bodies()[0]["stream_options"] == {"include_usage": True}
    finished = events[-1]
    assert finished.type == "run_finished" and finished.tokens_reported is False
    assert "tokens not reported" in answer_text.footnote(finished)
    thought = next(e for e in events if isinstance(e, ev.Thought))
    assert thought.usage.reported is False


async def test_an_answer_without_any_tool_call_is_marked(store, tone_wav, tmp_path):
    """A planner that answered from the question alone looked like any other answer."""
    planner = ScriptedPlanner([ScriptedTurn(text="<answer>Dog barking</answer>")])
    events = await run(planner, [ScriptedTool("events", "A dog.")], store, store.add_file(tone_wav))
    answer = next(e for e in events if isinstance(e, ev.Answer))
    assert answer.without_tools is True
    assert "text-only guess" in json.dumps(render.render_run(events))
    used = ScriptedPlanner(
        [ScriptedTurn(calls=[("events", {})]), ScriptedTurn(text="<answer>Dog</answer>")]
    )
    events = await run(used, [ScriptedTool("events", "A dog.")], store, store.add_file(tone_wav))
    assert next(e for e in events if isinstance(e, ev.Answer)).without_tools is False


async def test_the_benchmark_output_counts_answers_without_tools(tmp_path, monkeypatch):
    from bench.run_benchmark import run as bench_run

    monkeypatch.setenv("FAKE_OPENAI_KEY", KEY)
    with openai_fake({"m": Strict()}) as (server, url):
        server.chat_fn = lambda body: Reply(text="<answer>Dog barking</answer>")
        config = tmp_path / "models.toml"
        config.write_text(
            f'[[planner]]\nname = "guesser"\nprovider = "openai_compatible"\nmodel = "m"\n'
            f'base_url = "{url}"\nkey_env = "FAKE_OPENAI_KEY"\n'
        )
        items = [{"id": "0", "audio_id": "./dog_bark_esc50.wav", "question": "Which sound?",
                  "choices": ["Rain", "Dog barking"], "answer": "Dog barking"}]  # fmt: skip
        file = tmp_path / "mini.json"
        file.write_text(json.dumps(items))
        out = tmp_path / "pred.json"
        args = argparse.Namespace(
            file=file, audio_root=FIXTURES, planner="guesser", tools=[], preset=None,
            strategy="react", budget=None, limit=0, config=config, out=out, verbose=False,
        )  # fmt: skip
        summary = await bench_run(args)
    assert summary["without_tools"] == {"all": 1}
    assert json.loads(out.read_text())[0]["without_tools"] is True


async def test_a_responses_turn_with_text_and_a_call_goes_back_whole(store):
    """Found by the SDK's request types: a turn that said something before its call went
    back without the message item's required ``status`` (the old code dropped it)."""
    spec = ToolSpec("events", "Name the sounds.", {"type": "object", "properties": {}})
    with openai_fake({"gpt-6.1-sol": Strict(reasoning=True)}) as (server, url):
        server.responses.extend(
            [ResponsesReply(text="Let me listen.", summary="Check.", calls=[("events", "{}")]),
             ResponsesReply(text="A dog.")]
        )  # fmt: skip
        _, config = shipped("planner", "gpt", url)
        planner = OpenAIResponsesPlanner(config)
        messages = [ChatMessage("user", "What is heard?")]
        first = [c async for c in planner.stream_turn(messages, [spec])]
        calls = [c for c in first if isinstance(c, ToolCallRequest)]
        messages += [
            ChatMessage("assistant", "Let me listen.", tool_calls=calls, raw=first[-1].raw),
            ChatMessage("tool", "A dog.", tool_call_id=calls[0].id, name="events"),
        ]
        [c async for c in planner.stream_turn(messages, [spec])]
    assert server.refused == []
    sent = server.requests[-1].body["input"]
    assert next(i for i in sent if i.get("type") == "message")["status"] == "completed"
