"""Yes or no about a property (the music fast or in a minor key, the speaker a woman or angry,
the recording noisy), answered from what the tools measure, first word Yes, No or "I can't
tell" (no models: the tools' results are given as data, as the loop hands them to the planner).

Before, such questions fell through to a presence check: "Is the song in a major key?" on
C minor music was "Yes: music throughout ...", "Is the speaker a woman?" was "Yes: speech
from ...", "Is there background noise?" was "No: nothing in it sounds like sound".
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.planners.base import ChatMessage, FinalAnswer, ToolSpec
from agent.planners.offline import OfflinePlanner
from agent.planners.question_focus import open_ask
from agent.planners.question_types import classify
from bench.devsets_open import starts_yes_no

BASE = {"duration_s": 4.8, "peak_dbfs": -6.0, "rms_dbfs": -20.0}


def _frames(scores: dict[str, float], n: int = 10) -> list[dict[str, Any]]:
    labels = [{"label": k, "score": v} for k, v in scores.items()]
    return [{"start": 0.48 * i, "end": 0.48 * i + 0.96, "labels": labels} for i in range(n)]


def _tagged(**scores: float) -> dict[str, Any]:
    named = {k.replace("_", " ").replace("  ", ", "): v for k, v in scores.items()}
    labels = [{"label": k, "score": v} for k, v in named.items()]
    return {**BASE, "labels": labels, "frames": _frames(named), "timeline": []}


MUSIC = _tagged(Music=0.8, Piano=0.4, Tender_music=0.2)
C_MINOR_72 = {"tempo_bpm": 72.0, "key": "C minor", "key_confidence": 0.81, "beats": []}
SPEECH = _tagged(Speech=0.9)
VOICE = {"speech_seconds": 4.3, "spans": [{"start": 0.2, "end": 4.5}]}
HIGH = {**BASE, "loudness_lufs": -18.0, "silence_ratio": 0.02, "f0_median_hz": 210.0,
        "register": "high (typical adult female or child range)"}  # fmt: skip
LOW = {**HIGH, "f0_median_hz": 115.0, "register": "low (typical adult male range)"}
SAID = {"text": "I told you not to do that.", "segments": []}


async def _ask(question: str, **tool_data: dict[str, Any]) -> FinalAnswer:
    messages = [ChatMessage("user", question, data={"question": question, "choices": []})]
    for name, data in tool_data.items():
        messages.append(ChatMessage("tool", "...", name=name, data=data))
    tools = [ToolSpec(n, n, {"type": "object", "properties": {}}) for n in tool_data]
    chunks = [c async for c in OfflinePlanner().stream_turn(messages, tools)]
    return next(c for c in chunks if isinstance(c, FinalAnswer))


@pytest.mark.parametrize(
    ("question", "prop", "value", "target"),
    [
        ("Is the song in a major key?", "mode", "major", "music"),
        ("Is this in a minor key?", "mode", "minor", "music"),
        ("Is the music fast?", "tempo", "fast", "music"),
        ("Is the tempo slow?", "tempo", "slow", "music"),
        ("Is the music happy?", "mood", "happy", "music"),
        ("Is the music loud?", "loudness", "loud", "music"),
        ("Is the speaker angry?", "emotion", "angry", "speech"),
        ("Does the speaker sound calm?", "emotion", "calm", "speech"),
        ("Is the speaker a woman?", "gender", "female", "speech"),
        ("Is it a male voice?", "gender", "male", "speech"),
        ("Is this a man talking?", "gender", "male", "speech"),
        ("Is the speaker a child?", "child", "child", "speech"),
        ("Does the speaker have an accent?", "accent", "", "speech"),
        ("Is there background noise?", "noise", "noisy", "recording"),
        ("Is there any noise in the background?", "noise", "noisy", "recording"),
        ("Is the recording noisy?", "noise", "noisy", "recording"),
        ("Is the audio clean?", "noise", "clean", "recording"),
        ("Is the audio clipped?", "clipping", "", "recording"),
        ("Is it quiet?", "loudness", "quiet", "recording"),
        ("Is the volume low?", "loudness", "quiet", "recording"),
        ("Is the song in C minor?", "key", "C minor", "music"),
        ("Is it in F sharp major?", "key", "F# major", "music"),
        ("Is it in A minor?", "key", "A minor", "music"),
        ("Is it a minor key?", "mode", "minor", "music"),
        ("Is this song happy or sad?", "mood", "", "music"),
        ("Is the voice high-pitched?", "pitch", "high", "speech"),
        ("Does the speaker have a deep voice?", "pitch", "low", "speech"),
    ],
)
def test_a_property_question_is_read_as_one(question, prop, value, target):
    ask = open_ask(question)
    assert (ask.form, ask.prop, ask.value, ask.target) == ("property", prop, value, target)
    assert classify(question, []).kind == "property"


@pytest.mark.parametrize(
    ("question", "form", "target", "subject"),
    [
        ("Is there music?", "yes_no", "music", ""),
        ("Any music?", "yes_no", "music", ""),
        ("Anyone talking?", "yes_no", "speech", ""),
        ("Is there a dog barking?", "yes_no", "sound", "dog barking"),
        ("Is there a fast car?", "yes_no", "sound", "fast car"),
        ("Is there a baby crying?", "yes_no", "sound", "baby crying"),
        ("Does the speaker say seven?", "yes_no", "word", "seven"),
        ("Does she say the word happy?", "yes_no", "word", "happy"),
        ("Is there an echo?", "yes_no", "sound", "echo"),
        ("Is the singer a man or a woman?", "who", "speech", ""),
    ],
)
def test_presence_questions_stay_presence_questions(question, form, target, subject):
    ask = open_ask(question)
    assert (ask.form, ask.target, ask.subject) == (form, target, subject)


async def test_the_key_and_the_tempo_answer_the_question():
    answer = await _ask(
        "Is the song in a major key?", sound_events=MUSIC, music_analysis=C_MINOR_72
    )
    assert answer.text.startswith("No: the music analysis hears C minor"), answer.text
    answer = await _ask("Is it in a minor key?", sound_events=MUSIC, music_analysis=C_MINOR_72)
    assert answer.text.startswith("Yes:"), answer.text
    answer = await _ask("Is the music fast?", sound_events=MUSIC, music_analysis=C_MINOR_72)
    assert answer.text.startswith("No: about 72 beats per minute, which is slow"), answer.text
    answer = await _ask("Is the music slow?", sound_events=MUSIC, music_analysis=C_MINOR_72)
    assert answer.text.startswith("Yes: about 72 beats per minute"), answer.text
    moderate = {**C_MINOR_72, "tempo_bpm": 100.0}
    answer = await _ask("Is the music fast?", sound_events=MUSIC, music_analysis=moderate)
    assert answer.text.startswith("No: about 100 beats per minute, which is moderate"), answer.text
    fast = {**C_MINOR_72, "tempo_bpm": 140.0}
    answer = await _ask("Is the music fast?", sound_events=MUSIC, music_analysis=fast)
    assert answer.text.startswith("Yes: about 140 beats per minute, which is fast"), answer.text
    unsure = {**C_MINOR_72, "key_confidence": 0.3}
    answer = await _ask("Is the song in a major key?", sound_events=MUSIC, music_analysis=unsure)
    assert answer.text.startswith("I can't tell:") and answer.guess, answer.text


async def test_no_music_has_no_tempo():
    answer = await _ask("Is the music fast?", sound_events=SPEECH, music_analysis=C_MINOR_72)
    assert answer.text.startswith("No: no music was found, so there is no tempo"), answer.text


async def test_the_speaker_s_sex_from_the_voice_pitch():
    woman = dict(sound_events=SPEECH, speech_activity=VOICE, signal_stats=HIGH)
    man = dict(sound_events=SPEECH, speech_activity=VOICE, signal_stats=LOW)
    answer = await _ask("Is the speaker a woman?", **woman)
    assert answer.text.startswith("Yes: the voice sits at about 210 Hz"), answer.text
    answer = await _ask("Is the speaker a man?", **woman)
    assert answer.text.startswith("No: the voice sits at about 210 Hz"), answer.text
    answer = await _ask("Is it a male voice?", **man)
    assert answer.text.startswith("Yes: the voice sits at about 115 Hz"), answer.text
    unclear = {**HIGH, "f0_median_hz": 160.0, "register": "unclear"}
    answer = await _ask("Is the speaker a woman?", sound_events=SPEECH, speech_activity=VOICE,
                        signal_stats=unclear)  # fmt: skip
    assert answer.text.startswith("I can't tell:") and answer.guess, answer.text
    # nobody speaks: there is no speaker to be a woman
    quiet = dict(sound_events=_tagged(Dog=0.8), speech_activity={"speech_seconds": 0.0,
                 "spans": []}, signal_stats=HIGH)  # fmt: skip
    answer = await _ask("Is the speaker a woman?", **quiet)
    assert answer.text.startswith("No: nobody seems to speak"), answer.text


async def test_what_no_tool_measures_is_a_guess_that_says_so():
    heard = dict(sound_events=SPEECH, speech_activity=VOICE, transcribe=SAID)
    for question, what in (("Is the speaker angry?", "emotion"),
                           ("Does the speaker have an accent?", "accent")):  # fmt: skip
        answer = await _ask(question, **heard)
        assert answer.text.startswith(f"I can't tell: none of the tools measures {what}"), (
            answer.text
        )
        assert "0.2 s to 4.5 s" in answer.text and "I told you" in answer.text
        assert answer.guess and answer.confidence == 0.5


async def test_background_noise_from_the_tagger_and_the_silences():
    rain = _tagged(Speech=0.7, Rain=0.35)
    answer = await _ask("Is there background noise?", sound_events=rain, speech_activity=VOICE,
                        signal_stats=LOW)  # fmt: skip
    assert answer.text.startswith("Yes: besides the speech, the sound classifier hears Rain"), (
        answer.text)  # fmt: skip
    clean = _tagged(Speech=0.7, Heart_sounds_heartbeat=0.05)
    gaps = {**LOW, "silence_ratio": 0.4}
    answer = await _ask("Is there background noise?", sound_events=clean, speech_activity=VOICE,
                        signal_stats=gaps)  # fmt: skip
    assert answer.text.startswith("No: between the sounds it falls silent (under -50 dBFS 40%"), (
        answer.text)  # fmt: skip
    assert "sounds like sound" not in answer.text
    answer = await _ask("Is the audio clean?", sound_events=clean, speech_activity=VOICE,
                        signal_stats=gaps)  # fmt: skip
    assert answer.text.startswith("Yes:"), answer.text


async def test_the_main_sounds_own_classes_are_not_its_background():
    """A dog barking between silences: "Animal" on top, "Dog" and "Domestic animals, pets"
    under it are the same sound, not a background (was "Yes: besides animal, the sound
    classifier hears Domestic animals, pets (0.94), Dog (0.93)")."""
    dog = _tagged(Animal=0.96, Domestic_animals__pets=0.94, Dog=0.93, Bark=0.5)
    silent = {**BASE, "silence_ratio": 0.88}
    answer = await _ask("Is there background noise?", sound_events=dog, signal_stats=silent)
    assert answer.text.startswith("No: between the sounds it falls silent"), answer.text
    assert answer.text.endswith("nothing else reaches 0.15."), answer.text  # Dog is the sound
    barn = _tagged(Animal=0.9, Dog=0.8, Rain=0.45)  # a dog in the rain: the rain is
    answer = await _ask("Is there background noise?", sound_events=barn, signal_stats=silent)
    assert answer.text.startswith("Yes:") and "Rain" in answer.text, answer.text


async def test_loud_and_clipped_from_the_levels():
    answer = await _ask("Is the recording loud?", signal_stats=LOW)
    assert answer.text.startswith("Yes: it is loud, about -18 LUFS"), answer.text
    answer = await _ask("Is it quiet?", signal_stats={**LOW, "loudness_lufs": -35.0})
    assert answer.text.startswith("Yes: it is quiet, about -35 LUFS"), answer.text
    answer = await _ask("Is the audio clipped?", signal_stats=LOW)
    assert answer.text.startswith("No: its peak stays at -6.0 dBFS"), answer.text


async def test_describe_the_music_in_words():
    answer = await _ask("Describe the music.", sound_events=MUSIC, music_analysis=C_MINOR_72)
    assert answer.text == "Slow, tender music with piano: about 72 beats per minute, in C minor.", (
        answer.text)  # fmt: skip
    answer = await _ask("What is the tempo?", sound_events=MUSIC, music_analysis=C_MINOR_72)
    assert answer.text.startswith("Slow: about 72 beats per minute"), answer.text
    answer = await _ask("Any music?", sound_events=MUSIC, music_analysis=C_MINOR_72)
    assert answer.text.startswith("Yes: music throughout"), answer.text


async def test_every_property_answer_starts_with_yes_no_or_cant_tell():
    questions = ["Is the song in a major key?", "Is the music fast?", "Is the music happy?",
                 "Is the speaker angry?", "Is the speaker a woman?", "Is the speaker a child?",
                 "Is there background noise?", "Is the recording loud?", "Is the audio clipped?",
                 "Does the speaker have an accent?"]  # fmt: skip
    everything = dict(sound_events=MUSIC, music_analysis=C_MINOR_72, speech_activity=VOICE,
                      signal_stats=HIGH, transcribe=SAID)  # fmt: skip
    for question in questions:
        answer = await _ask(question, **everything)
        assert starts_yes_no(answer.text), (question, answer.text)


async def test_yes_and_no_choices_are_picked_by_the_property_too():
    question = "Is the speaker male?"
    messages = [
        ChatMessage("user", question, data={"question": question, "choices": ["Yes", "No"]})
    ]
    for name, data in (
        ("sound_events", SPEECH),
        ("speech_activity", VOICE),
        ("signal_stats", HIGH),
    ):
        messages.append(ChatMessage("tool", "...", name=name, data=data))
    tools = [ToolSpec(n, n, {"type": "object", "properties": {}}) for n in ("signal_stats",)]
    chunks = [c async for c in OfflinePlanner().stream_turn(messages, tools)]
    answer = next(c for c in chunks if isinstance(c, FinalAnswer))
    assert answer.choice == "No", answer.rationale  # 210 Hz: a woman's or a child's range
    # what nothing measures leaves the two choices tied: a guess
    question = "Does the speaker sound angry?"
    messages[0] = ChatMessage(
        "user", question, data={"question": question, "choices": ["Yes", "No"]}
    )
    chunks = [c async for c in OfflinePlanner().stream_turn(messages, tools)]
    answer = next(c for c in chunks if isinstance(c, FinalAnswer))
    assert answer.guess and "none of the tools measures emotion" in answer.rationale


async def test_a_key_named_in_full_and_a_high_or_deep_voice():
    answer = await _ask("Is the song in C minor?", sound_events=MUSIC, music_analysis=C_MINOR_72)
    assert answer.text.startswith("Yes: the music analysis hears C minor"), answer.text
    answer = await _ask("Is it in A minor?", sound_events=MUSIC, music_analysis=C_MINOR_72)
    assert answer.text.startswith("No: the music analysis hears C minor"), answer.text
    b_flat = {**C_MINOR_72, "key": "A# major"}  # the analysis names sharps: Bb is A#
    answer = await _ask("Is it in Bb major?", sound_events=MUSIC, music_analysis=b_flat)
    assert answer.text.startswith("Yes:"), answer.text
    voice = dict(sound_events=SPEECH, speech_activity=VOICE)
    answer = await _ask("Does the speaker have a deep voice?", **voice, signal_stats=LOW)
    assert answer.text.startswith("Yes: the voice sits at about 115 Hz, which is low"), answer.text
    answer = await _ask("Is the voice high-pitched?", **voice, signal_stats=LOW)
    assert answer.text.startswith("No: the voice sits at about 115 Hz"), answer.text


async def test_happy_or_sad_names_the_mood():
    sad = _tagged(Music=0.8, Sad_music=0.3, Happy_music=0.05)
    answer = await _ask("Is this song happy or sad?", sound_events=sad, music_analysis=C_MINOR_72)
    assert answer.text.startswith("Sad, to the sound classifier (sad music 0.30)"), answer.text
