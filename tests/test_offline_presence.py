"""The offline planner's "is there speech" on the evidence the tools give: words whisper
writes over a sound with no voice in it (no voice activity, no speech class) are not speech."""

from __future__ import annotations

from agent.planners.offline_evidence import Evidence
from agent.planners.offline_presence import speech_presence

CAR_HORN = [("Vehicle", 0.51), ("Motor vehicle (road)", 0.23), ("Toot", 0.18)]


def test_words_over_a_car_horn_without_voice_activity_are_not_speech():
    # what the tools gave on an ESC-50 car horn: whisper wrote "Go, go, go!"
    evidence = Evidence(transcript="Go, go, go!", labels=CAR_HORN, speech_spans=[])
    found = speech_presence(evidence)
    assert found is not None and not found.present
    assert found.sentence.startswith("No")
    assert "Go, go, go!" in found.sentence  # says what whisper wrote, and why it is not believed


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
