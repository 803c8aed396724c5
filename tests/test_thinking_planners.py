"""Thinking models over Chat Completions, from the shipped catalogue entries, through the
real loop against fakes that refuse what DeepSeek, Kimi and OpenRouter refuse.

Issue 16, defect 1: the reasoning was read but never sent back, so the second request of any
question that needs a tool was refused ("The `reasoning_content` in the thinking mode must
be passed back to the API."), and ``caption_first`` inserted a tool call the model never
made, with no reasoning at all.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.audio import AudioStore
from agent.planners.openai_compat import OpenAICompatPlanner
from agent.registry import Registry
from agent.remote import ModelConfig
from agent.testing import ScriptedTool
from tests.fake_openai import Reply, Strict
from tests.provider_kit import KEY, openai_fake, run

MODELS = {
    "deepseek-flash": Strict(flavor="deepseek", thinking=True),
    "kimi-k2.6": Strict(flavor="kimi", thinking=True, fixed_temperature=1.0),
    "deepseek/deepseek-v4.1-flash": Strict(flavor="openrouter", thinking=True),
    "Qwen/Qwen3-32B": Strict(flavor="vllm", thinking=True, reasoning_key="reasoning"),
}
KEY_VARS = ("DEEPSEEK_API_KEY", "MOONSHOT_API_KEY", "OPENROUTER_API_KEY", "LOCAL_LLM_API_KEY")


@pytest.fixture
def store(tmp_path) -> AudioStore:
    return AudioStore(tmp_path / "audio")


def shipped(name: str, url: str) -> OpenAICompatPlanner:
    """The shipped catalogue's entry ``name``, pointed at the fake."""
    registry = Registry(env={var: KEY for var in KEY_VARS} | {"LOCAL_LLM_BASE_URL": url})
    entry = next(e for e in registry.entries("planner") if e.name == name)
    settings: dict[str, Any] = {**entry.settings, "base_url": url, "max_retries": 0}
    return OpenAICompatPlanner(ModelConfig.from_entry(settings, registry.env))


def two_turns(first: Reply) -> list[Reply]:
    return [first, Reply(reasoning="The events say dog.", text="<answer>A dog barks.</answer>")]


@pytest.mark.parametrize("name", ["deepseek", "kimi"])
async def test_a_question_that_needs_a_tool_gets_its_answer(name, store, tone_wav):
    with openai_fake(MODELS) as (server, url):
        planner = shipped(name, url)
        server.chat.extend(
            two_turns(Reply(reasoning="I need the sound events.", tool_calls=[("events", "{}")]))
        )
        tool = ScriptedTool("events", "A dog barks twice.")
        events = await run(planner, [tool], store, store.add_file(tone_wav))
    assert events[-1].type == "run_finished", events[-1]
    assert server.refused == []
    sent = server.chat_bodies()[1]["messages"]
    calls = [m for m in sent if m.get("tool_calls")]
    assert calls[0]["reasoning_content"] == "I need the sound events."
    assert all("temperature" not in body for body in server.chat_bodies())


async def test_a_turn_with_no_reasoning_goes_back_with_an_empty_one(store, tone_wav):
    """DeepSeek may skip its reasoning on a tool-call turn; the field must still be there."""
    with openai_fake(MODELS) as (server, url):
        planner = shipped("deepseek", url)
        server.chat.extend(two_turns(Reply(tool_calls=[("events", "{}")])))
        events = await run(
            planner, [ScriptedTool("events", "A dog.")], store, store.add_file(tone_wav)
        )
    assert events[-1].type == "run_finished", events[-1]
    assert [m for m in server.chat_bodies()[1]["messages"] if m.get("tool_calls")][0][
        "reasoning_content"
    ] == ""


async def test_openrouter_gets_its_reasoning_details_back_joined(store, tone_wav):
    """OpenRouter streams reasoning_details in pieces; they go back as one block per index."""
    with openai_fake(MODELS) as (server, url):
        planner = shipped("openrouter", url)
        server.chat.extend(
            two_turns(Reply(reasoning="Listen for animals first.", tool_calls=[("events", "{}")]))
        )
        events = await run(
            planner, [ScriptedTool("events", "A dog.")], store, store.add_file(tone_wav)
        )
    assert events[-1].type == "run_finished", events[-1]
    assert server.refused == []
    [call] = [m for m in server.chat_bodies()[1]["messages"] if m.get("tool_calls")]
    assert call["reasoning_details"] == [
        {
            "type": "reasoning.text",
            "text": "Listen for animals first.",
            "format": "unknown",
            "index": 0,
        }
    ]


async def test_qwen3_on_vllm_gets_its_reasoning_where_its_template_reads_it(store, tone_wav):
    """vLLM's reasoning parser sends ``reasoning``; Qwen3's chat template reads
    ``reasoning_content`` (the local_llm entry renames it; tag protocol, no tool parser)."""
    with openai_fake(MODELS) as (server, url):
        planner = shipped("local_llm", url)
        server.chat.extend(
            two_turns(
                Reply(
                    reasoning="Check the events.",
                    text='<tool_call>{"name": "events", "arguments": {}}</tool_call>',
                )
            )
        )
        events = await run(
            planner, [ScriptedTool("events", "A dog.")], store, store.add_file(tone_wav)
        )
    assert events[-1].type == "run_finished", events[-1]
    [turn] = [m for m in server.chat_bodies()[1]["messages"] if m["role"] == "assistant"]
    assert turn["reasoning_content"] == "Check the events." and "reasoning" not in turn
    assert "stream_options" in server.chat_bodies()[0]  # usage asked for when streaming


async def test_caption_first_never_sends_a_call_the_model_did_not_make(store, tone_wav):
    """The opening caption is the app's call: a thinking model gets it as a note with its
    result, not as an assistant tool call without reasoning (DeepSeek refuses that)."""
    ears = ScriptedTool(
        "ears",
        "A dog barks twice in a yard.",
        parameters={"type": "object", "properties": {"question": {"type": "string"}}},
    )
    ears.local = False  # an audio-language model: the caption's backend
    with openai_fake(MODELS) as (server, url):
        planner = shipped("deepseek", url)
        server.chat.extend(
            [
                Reply(
                    reasoning="Ask about the animal.",
                    tool_calls=[("ask_audio", '{"question": "Which animal?"}')],
                ),
                Reply(reasoning="It is a dog.", text='{"answer": "A dog", "reasoning": "barking"}'),
            ]
        )
        events = await run(
            planner, [ears], store, store.add_file(tone_wav), strategy="caption_first",
            question="Which animal is it?",
        )  # fmt: skip
    assert events[-1].type == "run_finished", events[-1]
    assert server.refused == []
    first = server.chat_bodies()[0]["messages"]
    assert not any(m.get("tool_calls") for m in first)
    note = next(
        m for m in first if m["role"] == "user" and "ran these tools for you" in m["content"]
    )
    assert "A dog barks twice in a yard." in note["content"]
    second = server.chat_bodies()[1]["messages"]
    [own] = [m for m in second if m.get("tool_calls")]
    assert own["reasoning_content"] == "Ask about the animal."


async def test_a_model_not_marked_thinking_gets_no_reasoning_back(store, tone_wav):
    """Servers that are not marked ``thinking`` may refuse a field they do not know (the
    fake plays OpenAI, whose request types have no ``reasoning_content``)."""
    with openai_fake({"m": Strict()}) as (server, url):
        config = ModelConfig.from_entry(
            {
                "name": "plain",
                "provider": "openai_compatible",
                "model": "m",
                "base_url": url,
                "key_env": "FAKE_OPENAI_KEY",
            },  # fmt: skip
            {"FAKE_OPENAI_KEY": KEY},
        )
        server.chat.extend(two_turns(Reply(reasoning="Hmm.", tool_calls=[("events", "{}")])))
        events = await run(
            OpenAICompatPlanner(config), [ScriptedTool("events", "A dog.")], store,
            store.add_file(tone_wav),
        )  # fmt: skip
    assert events[-1].type == "run_finished", events[-1]
    assert server.refused == []
