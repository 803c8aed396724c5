"""The everyday names of sounds (``agent/planners/everyday_names.json``, reviewed by hand)
and the rule that picks one from the sound classifier's scores (``sound_naming``).

Every class gets a test: each ESC-50 class and each of the classifier's 521 AudioSet classes
has a phrase a person would say ("a dog barking"), not a class path ("Animal: dog, bark").
"""

from __future__ import annotations

import re

import pytest

from agent.local_models.yamnet import class_names
from agent.planners.everyday_names import (
    GENERIC,
    NOT_A_SOURCE,
    VAGUE,
    depth,
    esc50_classes,
    esc50_evidence,
    esc50_name,
    everyday_name,
    head_of,
    lineage,
    table,
    tier,
)
from agent.planners.offline_evidence import Evidence, Frame
from agent.planners.sound_naming import (
    SPLIT_SHARE,
    branch_of,
    name_sound,
    naming_sentence,
)

AUDIOSET = class_names()
ESC50 = esc50_classes()
# an article or a plural/mass noun first, lower case, words and a few marks only
PHRASE = re.compile(r"^[a-z][a-zA-Z' -]*[a-z]$")


def check_phrase(phrase: str, label: str = "") -> None:
    assert phrase and phrase == phrase.strip(), phrase
    assert PHRASE.match(phrase), f"{phrase!r} is not a plain everyday phrase"
    assert ":" not in phrase and "," not in phrase and "(" not in phrase, phrase
    assert phrase.split()[0] not in ("an", "a") or len(phrase.split()) > 1, phrase
    if label and "," in label:  # a class with synonyms is not named by its list of synonyms
        assert phrase.lower() != label.lower(), phrase


def test_the_table_names_every_class_the_classifier_outputs():
    assert list(table()["classes"]) == AUDIOSET
    assert len(ESC50) == 50 and len(set(ESC50)) == 50
    for name in ("generic", "vague", "not_a_source"):
        assert set(table()[name]) <= set(AUDIOSET), name


@pytest.mark.parametrize("category", ESC50)
def test_every_esc50_class_has_an_everyday_name(category):
    phrase = esc50_name(category)
    check_phrase(phrase)
    assert "_" not in phrase
    assert esc50_name(category.replace("_", " ")) == phrase
    for label in esc50_evidence(category):  # the classes that name it exist and are sources
        assert label in AUDIOSET, label
        assert tier(label) != NOT_A_SOURCE, label


@pytest.mark.parametrize("label", AUDIOSET)
def test_every_audioset_class_has_an_everyday_name(label):
    phrase = everyday_name(label)
    check_phrase(phrase, label)
    chain = lineage(label)
    assert all(head in AUDIOSET for head in chain), chain
    assert len(chain) == len(set(chain)) and depth(label) == len(chain) - 1


def test_esc50_names_are_the_ones_people_use():
    assert esc50_name("dog") == "a dog barking"
    assert esc50_name("door_wood_knock") == "someone knocking on a door"
    assert esc50_name("helicopter") == "a helicopter"
    assert esc50_name("chainsaw") == "a chainsaw"
    assert everyday_name("Bark") == "a dog barking" and head_of("Bark") == "Dog"
    assert everyday_name("Knock") == "someone knocking on a door"
    assert head_of("Caw") == "Bird" and depth("Caw") == 2
    assert tier("Animal") == GENERIC and tier("Whir") == VAGUE and tier("Echo") == NOT_A_SOURCE
    assert everyday_name("Some other tagger's class, with synonyms") == "some other tagger's class"


def _evidence(windows: list[list[tuple[str, float]]], duration: float = 4.8) -> Evidence:
    """Frames every 0.48 s (0.96 s long), the whole-clip scores their mean."""
    frames = [Frame(0.48 * i, 0.48 * i + 0.96, labels) for i, labels in enumerate(windows)]
    totals: dict[str, float] = {}
    for labels in windows:
        for label, score in labels:
            totals[label] = totals.get(label, 0.0) + score / len(windows)
    labels = sorted(totals.items(), key=lambda x: -x[1])
    return Evidence(labels=labels, frames=frames, duration_s=duration)


def test_the_most_specific_confident_child_is_named_not_its_parents():
    dog = [("Animal", 0.99), ("Domestic animals, pets", 0.95), ("Dog", 0.9), ("Bark", 0.7)]
    quiet = [("Silence", 0.99)]
    naming = name_sound(_evidence([dog, dog, quiet, quiet, quiet, quiet, quiet, quiet, quiet]))
    assert naming is not None
    assert naming.phrase == "a dog barking" and naming.alternative is None
    assert naming_sentence(naming) == "A dog barking (0.0–1.4 s)."
    # a child far weaker than its head does not name it: the head does
    faint = [("Dog", 0.9), ("Bark", 0.2)]
    assert name_sound(_evidence([faint] * 10)).phrase == "a dog"


def test_a_broad_parent_is_named_only_when_nothing_more_specific_is_heard():
    vehicle = [("Vehicle", 0.9), ("Motor vehicle (road)", 0.4)]
    assert name_sound(_evidence([vehicle] * 10)).phrase == "a vehicle"
    assert naming_sentence(name_sound(_evidence([vehicle] * 10))).startswith("Probably a vehicle")
    with_car = [("Vehicle", 0.9), ("Car", 0.4)]
    assert name_sound(_evidence([with_car] * 10)).phrase == "a car"
    # the place or the recording is not what makes the sound
    assert name_sound(_evidence([[("Inside, small room", 0.9), ("Silence", 0.5)]] * 10)) is None


def test_split_evidence_names_both_most_likely_first():
    both = [("Chainsaw", 0.6), ("Engine", 0.5), ("Medium engine (mid frequency)", 0.4)]
    naming = name_sound(_evidence([both] * 10))
    assert naming.phrase == "a chainsaw" and naming.alternative == "an engine"
    assert naming.rival_share >= SPLIT_SHARE and naming.split and not naming.sure
    said = "Probably a chainsaw, or possibly an engine (whole recording)."
    assert naming_sentence(naming) == said
    # a clear winner: no alternative, and a stronger answer than the split one
    clear = [("Chainsaw", 0.9), ("Engine", 0.2)]
    alone = name_sound(_evidence([clear] * 10))
    assert alone.alternative is None and alone.sure and alone.strength > naming.strength
    assert naming_sentence(alone) == "A chainsaw (whole recording)."


def test_kin_is_no_alternative_and_a_sound_quality_is_no_source():
    kin = [("Siren", 0.8), ("Emergency vehicle", 0.7), ("Police car (siren)", 0.6)]
    assert name_sound(_evidence([kin] * 10)).alternative is None
    # "Whir" describes the sound; an aircraft a little weaker is still named first
    whir = [("Whir", 0.7), ("Aircraft", 0.45)]
    assert name_sound(_evidence([whir] * 10)).phrase == "an aircraft"


def test_a_question_about_animals_names_an_animal():
    mixed = [("Speech", 0.9), ("Dog", 0.5), ("Bark", 0.4)]
    assert name_sound(_evidence([mixed] * 10)).phrase == "someone speaking"
    assert name_sound(_evidence([mixed] * 10), branch_of("animal")).phrase == "a dog barking"
    assert branch_of("sound") is None and branch_of("noise") is None


def test_times_are_where_the_named_sound_is():
    quiet = [("Silence", 0.99)]
    bark = [("Dog", 0.9), ("Bark", 0.8)]
    windows = [quiet, quiet, quiet, quiet, bark, bark, quiet, quiet, quiet, bark]
    naming = name_sound(_evidence(windows, duration=5.3))
    assert naming_sentence(naming) == "A dog barking (1.9–3.4 s and 4.3–5.3 s)."


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("What sound is this?", "A dog barking (whole recording)."),
        ("What is making this sound?", "A dog barking (whole recording)."),
        ("What is in this recording?", "A dog barking (whole recording)."),  # was "Mostly animal"
        ("Is there an animal, and what kind?", "; it sounds like a dog barking."),
    ],
)
def test_answers_in_words_name_the_sound_in_everyday_words(question, said):
    from agent.planners.offline_words import answer_in_words
    from agent.planners.question_types import classify

    dog = [("Animal", 0.99), ("Domestic animals, pets", 0.95), ("Dog", 0.9), ("Bark", 0.7)]
    evidence = _evidence([dog] * 10)
    evidence.peak_dbfs, evidence.rms_dbfs = -3.0, -20.0
    qtype = classify(question, [])
    worded = answer_in_words(qtype.ask, qtype.kind, question, evidence, None)
    assert worded.text.endswith(said), worded.text
    assert ":" not in worded.text.split(";")[-1] and "Mostly" not in worded.text
