"""Questions without choices answered in words that answer them, and sounds in a row, offline,
on real recordings composed in code from the fixtures (tests/fixtures/PROVENANCE.md).

A yes/no question starts with Yes or No and checks the thing itself: the hen among the
tagger's classes, the word in the transcript, the music among the music classes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from agent.audio import load_samples
from agent.registry import Registry
from bench.devsets import normalise
from tests.offline_runs import ask_offline, compose, fixture_clip, pause
from tests.servers import start_deadline_s

pytestmark = pytest.mark.models
FIXTURES = Path(__file__).parent / "fixtures"
SR = 16_000


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry(env={})


def _dog() -> np.ndarray:
    return load_samples(FIXTURES / "dog_bark_esc50.wav")


async def test_is_there_a_sound_checks_that_sound(registry, tmp_path):
    dog = _dog()
    answer, events = await ask_offline(registry, tmp_path, dog, "Is there a sound of a hen?")
    assert answer.text.startswith("No: nothing in it sounds like hen"), answer.text
    answer, events = await ask_offline(registry, tmp_path, dog, "Is there a dog barking?")
    assert answer.text.startswith("Yes: dog barking at "), answer.text
    assert answer.confidence is not None
    # the tagger was asked to follow the classes that fit the name over time
    call = next(e for e in events if e.type == "tool_call" and e.tool == "sound_events")
    assert "Bark" in call.arguments["track"]


async def test_does_the_speaker_say_a_word(registry, tmp_path):
    clip = compose([fixture_clip(n) for n in ("digit_7_jackson_2.wav", "digit_1_george_1.wav")])
    said, _ = await ask_offline(registry, tmp_path, clip, "Does the speaker say the word seven?")
    assert said.text.startswith('Yes: "seven" is said at '), said.text
    not_said, _ = await ask_offline(registry, tmp_path, clip, "Does the speaker say the word two?")
    assert not_said.text.startswith('No: "two" is not in the transcript'), not_said.text


async def test_a_single_short_word_is_someone_talking(registry, tmp_path):
    # one FSDD "six", padded as the dev sets pad it: the tagger's 0.96 s windows hear
    # "Whoosh", the word's own stretch "Speech"
    six = normalise(fixture_clip("digit_6_lucas_2.wav"))
    clip = np.concatenate([pause(0.57), six, pause(0.36)]).astype(np.float32)
    answer, _ = await ask_offline(registry, tmp_path, clip, "Is anyone talking?")
    assert answer.text.startswith("Yes: speech from"), answer.text


async def test_is_there_music(registry, tmp_path):
    trumpet = load_samples(FIXTURES / "trumpet_sorohanro_librosa.ogg")
    answer, _ = await ask_offline(registry, tmp_path, trumpet, "Is there music, and what kind?")
    assert answer.text.startswith("Yes: music"), answer.text
    speech = load_samples(FIXTURES / "speech_padded_librispeech_3436-172162-0000.wav")
    answer, _ = await ask_offline(registry, tmp_path, speech, "Is there music in the background?")
    assert answer.text.startswith("No: no music was found"), answer.text
    # silence holds nothing: that answers "is there X" with no
    question = "Is there music in the background?"
    answer, _ = await ask_offline(registry, tmp_path, pause(1.0), question)
    assert answer.text.startswith("No: the recording is silent"), answer.text


async def test_when_and_what_kind(registry, tmp_path):
    bark = normalise(load_samples(FIXTURES / "dog_bark_esc50.wav")[: 2 * SR])
    clip = np.concatenate([pause(2.0), bark, pause(1.5)]).astype(np.float32)
    answer, _ = await ask_offline(registry, tmp_path, clip, "When does the dog bark?")
    assert answer.text.startswith("At "), answer.text
    first = float(answer.text[3:].split("–")[0])
    assert 1.5 <= first <= 3.5, answer.text
    answer, _ = await ask_offline(registry, tmp_path, _dog(), "What kind of animal is this?")
    assert answer.text.startswith("A dog barking ("), answer.text


async def test_sounds_in_a_row_are_scored_where_their_evidence_lies(registry, tmp_path):
    """Two whole recordings one after another, choices "A, then B": the order that puts each
    sound where it is heard wins; a sound found nowhere gets its choice no support."""
    rooster = load_samples(FIXTURES / "rooster_esc50_cut.wav")
    clip = np.concatenate([normalise(rooster), pause(0.5), normalise(_dog())]).astype(np.float32)
    choices = ["dog, then rooster", "rooster, then dog", "rooster, then siren", "siren, then dog"]
    question = "In what order are the sounds heard?"
    answer, _ = await ask_offline(registry, tmp_path, clip, question, choices)
    assert answer.choice == "rooster, then dog", answer.rationale
    assert "siren not found" in answer.rationale


def test_command_line_shows_a_guess_as_a_best_guess(tmp_path):
    import os
    import subprocess
    import sys

    silent = tmp_path / "silence.wav"
    sf.write(silent, np.zeros(2 * SR, np.float32), SR)
    env = {**os.environ, "AUDIO_AGENT_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "agent", "ask", str(silent), "Which sound is this?",
               "--choice", "Dog", "--choice", "Rain"]  # fmt: skip
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, timeout=start_deadline_s()
    )
    assert done.returncode == 0, done.stderr
    assert "\nBest guess: Dog (confidence 0.50)" in done.stdout, done.stdout
    assert "Answer:" not in done.stdout
