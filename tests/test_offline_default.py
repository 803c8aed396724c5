"""The offline default end to end: the rule planner with the bundled models, under every
strategy, on real recordings; and the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.audio import AudioStore
from agent.registry import Registry
from agent.run import RunRequest, run_question
from tests.servers import start_deadline_s

pytestmark = pytest.mark.models
FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent
DOG = FIXTURES / "dog_bark_esc50.wav"
SOUND_CHOICES = ["Dog barking", "Rain", "Church bells", "Siren"]


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry(env={})


@pytest.mark.parametrize("strategy", ["react", "caption_first", "refine", "evidence"])
async def test_every_strategy_answers_the_dog_clip_offline(registry, tmp_path, strategy):
    store = AudioStore(tmp_path / "audio")
    request = RunRequest(
        "Which sound is heard in this recording?",
        [store.add_file(DOG)],
        registry.planner("offline"),
        registry.tools(),
        choices=SOUND_CHOICES,
        strategy=strategy,
    )
    events = [e async for e in run_question(request, store=store, similarity=registry.similarity)]
    assert events[-1].type == "run_finished", events[-1]
    answer = next(e for e in events if e.type == "answer")
    assert answer.choice == "Dog barking"
    assert all(not e.error for e in events if e.type == "tool_result")
    if strategy == "refine":
        assert any(e.type == "document" for e in events)
    if strategy == "evidence":
        assert any(e.type == "verification" and e.scope == "candidates" for e in events)


async def test_spoken_digit_and_follow_up_history(registry, tmp_path):
    from agent.context import PriorTurn

    store = AudioStore(tmp_path / "audio")
    digit = store.add_file(FIXTURES / "digit_6_theo_4.wav")
    request = RunRequest(
        "Which number is spoken?",
        [digit],
        registry.planner("offline"),
        registry.tools(),
        choices=["two", "six", "seven", "nine"],
        history=[PriorTurn("Is someone speaking?", "Yes")],
    )
    events = [e async for e in run_question(request, store=store, similarity=registry.similarity)]
    assert next(e for e in events if e.type == "answer").choice == "six"
    call = next(e for e in events if e.type == "tool_call" and e.tool == "transcribe")
    assert call.arguments == {
        "prompt": "two, six, seven, nine",
        "options": ["two", "six", "seven", "nine"],  # whisper reads each option forced
    }


def test_command_line_streams_events_as_json(tmp_path):
    env = {**os.environ, "AUDIO_AGENT_DATA_DIR": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY"):
        env.pop(var, None)
    command = [sys.executable, "-m", "agent", "ask", str(DOG), "Which sound is this?", "--json"]
    for choice in SOUND_CHOICES:
        command += ["--choice", choice]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=start_deadline_s()
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_finished"
    assert next(e for e in events if e["type"] == "answer")["choice"] == "Dog barking"

    text = subprocess.run(
        command[:6] + ["--choice", "Dog barking", "--choice", "Rain"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=start_deadline_s(),
    )  # fmt: skip
    assert text.returncode == 0 and "Answer: Dog barking" in text.stdout
    assert "-> sound_events" in text.stdout


def test_command_line_reports_bad_input(tmp_path):
    env = {**os.environ, "AUDIO_AGENT_DATA_DIR": str(tmp_path)}
    bad = tmp_path / "broken.mp3"
    bad.write_bytes(b"not audio")
    done = subprocess.run(
        [sys.executable, "-m", "agent", "ask", str(bad), "What?"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=start_deadline_s(),
    )  # fmt: skip
    assert done.returncode == 2 and "not a supported audio or video file" in done.stderr


async def test_silence_is_called_silence(registry, tmp_path):
    import numpy as np
    import soundfile as sf

    path = tmp_path / "silence.wav"
    sf.write(path, np.zeros(32_000), 16_000)
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(path)
    for question, choices, words in [
        ("What does the speaker say?", [], "No speech was detected"),
        ("Which sound is heard?", ["Dog", "Rain"], "the recording is silent"),
    ]:
        request = RunRequest(
            question, [audio], registry.planner("offline"), registry.tools(), choices=choices
        )
        events = [e async for e in run_question(request, store=store)]
        answer = next(e for e in events if e.type == "answer")
        assert words in answer.text + answer.rationale
        assert answer.guess == bool(choices)  # a choice on silence is a guess, and says so
        assert events[-1].type == "run_finished"
