"""The offline planner's "is there X" on the evidence the tools give: words whisper writes
over a sound with no voice in it (no voice activity, no speech class) are not speech; a "no"
names the classes that stand for the thing asked about, with their own scores."""

from __future__ import annotations

import pytest

from agent.local_models import embedding
from agent.planners.offline_evidence import Evidence, Frame
from agent.planners.offline_presence import sound_presence, speech_presence, word_presence

CAR_HORN = [("Vehicle", 0.51), ("Motor vehicle (road)", 0.23), ("Toot", 0.18)]


def test_words_over_a_car_horn_without_voice_activity_are_not_speech():
    # what the tools gave on an ESC-50 car horn: whisper wrote "Go, go, go!"
    evidence = Evidence(transcript="Go, go, go!", labels=CAR_HORN, speech_spans=[])
    found = speech_presence(evidence)
    assert found is not None and not found.present
    assert found.sentence.startswith("No")
    assert found.sentence.startswith("No, probably not: no voice activity was found and the")
    assert "Go, go, go!" in found.sentence  # says what whisper wrote, and why it is not believed


def test_a_word_asked_about_over_a_dog_bark_is_not_said_and_nobody_speaks():
    # "Does the speaker say the word seven?" where whisper wrote "nine, nine, nine, ..." over
    # a bark and no other tool heard a voice (no voice activity, no speech class)
    dog = [("Animal", 0.26), ("Domestic animals, pets", 0.2), ("Dog", 0.2)]
    evidence = Evidence(transcript="nine, nine, nine, nine.", labels=dog, speech_spans=[])
    found = word_presence("seven", evidence)
    assert found is not None and not found.present
    assert found.sentence.startswith('No: "seven" is not said, and nobody seems to speak: no voice')
    # with a voice there, the transcript is what it is checked against
    voiced = Evidence(transcript="nine, nine.", labels=[("Speech", 0.7)], speech_spans=[(0, 1)])
    found = word_presence("seven", voiced)
    assert found is not None and found.sentence.startswith('No: "seven" is not in the transcript')


def test_words_where_voice_activity_agrees_are_speech():
    evidence = Evidence(
        transcript="Go, go, go!", labels=CAR_HORN, speech_spans=[(0.4, 1.6)], speech_seconds=1.2
    )
    found = speech_presence(evidence)
    assert found is not None and found.present
    assert found.sentence.startswith("Yes: speech from 0.4 s to 1.6 s")


def test_the_speech_class_alone_is_speech():
    evidence = Evidence(transcript="", labels=[("Speech", 0.6)], speech_spans=[(0.0, 2.0)])
    found = speech_presence(evidence)
    assert found is not None and found.present


def test_a_short_word_heard_as_speech_on_its_own_stretch_is_speech():
    # what the tools gave on one FSDD "six" (dev set seed 0, dev-152): the tagger's windows
    # hear the background ("Whoosh" 0.50, "Speech" 0.03), its stretch on its own is "Speech"
    frames = [
        Frame(0.0, 0.96, [("Whoosh, swoosh, swish", 0.5), ("Sound effect", 0.32)]),
        Frame(0.48, 1.41, [("Sound effect", 0.18)]),
    ]
    word = {"start": 0.57, "end": 1.01, "labels": [{"label": "Speech", "score": 0.82}]}
    evidence = Evidence(
        transcript="6.",
        labels=[("Whoosh, swoosh, swish", 0.27), ("Sound effect", 0.25), ("Speech", 0.03)],
        frames=frames,
        timeline=[word],
        speech_spans=[(0.71, 0.89)],
        speech_seconds=0.18,
    )
    found = speech_presence(evidence)
    assert found is not None and found.present, found
    assert found.sentence.startswith("Yes: speech from 0.7 s to 0.9 s")
    # the same voice activity over a stretch that is not speech on its own stays a "no"
    noise = {
        "start": 0.57,
        "end": 1.01,
        "labels": [{"label": "Whoosh, swoosh, swish", "score": 0.6}],
    }
    evidence.timeline = [noise]
    found = speech_presence(evidence)
    assert found is not None and not found.present


@pytest.mark.models
def test_a_no_names_the_classes_for_the_thing_with_their_own_scores():
    # a duck, loud and clear: "Duck" counts for a hen only a little, and a "no" must not say
    # that the duck class stayed low (its weighted score for "hen" does)
    frames = [Frame(0.0, 0.96, [("Duck", 0.99), ("Fowl", 0.4)]), Frame(0.48, 1.44, [("Duck", 0.9)])]
    evidence = Evidence(labels=[("Duck", 0.9), ("Fowl", 0.3)], frames=frames, duration_s=1.5)
    found = sound_presence("hen", evidence, embedding.similarity)
    assert found is not None and not found.present
    assert found.sentence.endswith("; Chicken, rooster at most 0.00)."), found.sentence
    found = sound_presence("duck", evidence, embedding.similarity)
    assert found is not None and found.present and found.sentence.startswith("Yes: duck at")
