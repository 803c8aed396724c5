"""The dev sets' questions in words (bench.devsets_words): how answers are scored (what sound,
what number, which digits, which key), and how the sets are built for a seed."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from bench.compose import SR, Sources
from bench.devsets_open import ACCEPT, score_open
from bench.devsets_words import OPTIONS, SYNONYMS, score_words, words_questions


def sound(name: str) -> dict:
    return {"category": "words", "open": "sound_name", "answer": name, "accept": SYNONYMS[name]}


def said(answer: str, kind: str) -> dict:
    return {"category": "words", "open": kind, "answer": answer}


def test_every_esc50_class_has_everyday_names_that_name_no_other_class():
    assert set(SYNONYMS) == set(ACCEPT) and len(SYNONYMS) == 50  # ESC-50's 50 classes
    shared = {frozenset({"hen", "rooster"})}  # "a chicken": no listener tells them apart
    for name, accepted in SYNONYMS.items():
        for word in accepted:
            assert score_words(sound(name), f"A {word}."), (name, word)
            wrong = [
                other for other in SYNONYMS
                if other != name and frozenset({name, other}) not in shared
                and score_words(sound(other), f"A {word}.")
            ]  # fmt: skip
            assert not wrong, f"{word!r} ({name}) also names {wrong}"


@pytest.mark.parametrize(
    "name, answer, right",
    [
        ("dog", "A dog barking.", True),
        ("dog", "Barking dogs, from 0.0 to 5.0 s.", True),
        ("helicopter", "A helicopter (the sound classifier, up to 0.82).", True),
        ("chainsaw", "Probably a chainsaw, or an engine.", True),
        ("engine", "Probably a chainsaw or an engine.", False),  # the first named counts
        ("engine", "Chainsaw: light engine (high frequency) and sawing.", False),
        ("dog", "It sounds like: a dog", True),
        # the answers read as AudioSet paths
        ("dog", "Mostly animal, with domestic animals, pets and dog.", False),
        ("helicopter", "Vehicle: motorcycle and rumble (the sound classifier, up to 0.82)", False),
        ("chainsaw", "Vehicle: car and race car", False),
        ("engine", "Rattle: snake", False),
        ("door wood knock", "Drum: music and drum kit", False),
        ("door wood knock", "Someone knocking on a door.", True),
        ("crickets", "Crickets chirping at night.", True),
        ("chirping birds", "Crickets chirping at night.", False),
    ],
)
def test_a_sound_is_right_by_the_everyday_name_given_first(name, answer, right):
    assert score_words(sound(name), answer) is right


@pytest.mark.parametrize(
    "answer, right",
    [
        ("Three.", True),
        ("3", True),
        ('It says: "three."', True),
        ("The speaker says three (whisper heard it once).", True),
        ('It says: "Okay."', False),  # the non-answers
        ('"Cool."', False),
        ("3, 3", False),  # a repeated digit is wrong
        ("Three or eight.", False),
        ("Speech detected: 0.3 s, but nothing was recognised.", False),  # a time, not a digit
    ],
)
def test_a_single_digit_is_right_only_alone(answer, right):
    assert score_words(said("three", "digit"), answer) is right


@pytest.mark.parametrize(
    "answer, right",
    [
        ("1, 1, 0, 9, 1", True),
        ("One, one, zero, nine, one.", True),
        ("11091", True),
        ("Five digits: 1, 1, 0, 9, 1.", True),
        ("1, 1, 0, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1,", False),  # a repetition loop
        ("1, 0, 9, 1", False),  # one missing
        ("1, 1, 9, 0, 1", False),  # the order matters
        ('It says: "Here we are."', False),
        ('It says: "One. One. Zero. Nine. One." (whisper, 5 words)', True),  # one quotation
        ('It says: "One. One. Zero." Then: nine, one.', False),  # the first sentence counts
    ],
)
def test_a_digit_string_is_right_with_every_digit_in_order_and_no_more(answer, right):
    assert score_words(said("one one zero nine one", "digits"), answer) is right


@pytest.mark.parametrize(
    "answer, right",
    [
        ("Press 5.", True),
        ("Press five to leave a message.", True),
        ("Press 5 (the menu also says: for sales, press 1).", True),
        ("Mostly speech.", False),  # the answers
        ("There is no music was found (the sound classifier hears Speech (0.81)).", False),
        ('It says: "For sales, press 1. To leave a message, press 5."', False),
        ("For sales press 1, to leave a message press 5.", False),  # the menu, not the key
        ("Press 3.", False),
        # a transcript of the menu whose only digit heard is the key still reads the menu out
        ('It says: "To book, press it. For support, press I. For an operator, press 5."', False),
    ],
)
def test_a_key_is_right_when_it_is_the_only_digit_named(answer, right):
    assert score_words(said("5", "key"), answer) is right


def test_a_sound_is_scored_by_todays_table_not_the_one_recorded_with_the_item():
    item = {**sound("train"), "accept": ["train"]}  # built before "rail" was accepted
    assert score_words(item, "Rail transport: train and railroad car.")


def test_the_open_scorer_hands_questions_in_words_to_their_own_rules():
    assert score_open(said("three", "digit"), "3") is True
    assert score_open(said("5", "key"), "Press 5.") is True
    assert score_open(sound("dog"), "Mostly animal, with dog.") is False


class _Sink:
    def __init__(self, sources: Sources) -> None:
        self.src = sources
        self.items: list[dict] = []

    def add(self, category, sub, audio, question, choices, answer, task, expect_guess=False,
            **extra):  # fmt: skip
        item = {"category": category, "sub-category": sub, "question": question}
        self.items.append({**item, "choices": choices, "answer": answer, "audio": audio, **extra})

    def esc_pool(self) -> list[str]:
        return [n for n, _ in self.src.esc]


def _sources() -> Sources:
    gen = np.random.default_rng(0)
    tone = lambda f: (0.5 * np.sin(2 * np.pi * f * np.arange(SR) / SR)).astype(np.float32)  # noqa: E731
    esc = [(name, (0.1 * gen.standard_normal(SR)).astype(np.float32)) for name in SYNONYMS]
    digits = [(w, "s1", tone(200 + 40 * i)) for i, w in enumerate(["zero", "one", "two"])]
    return Sources(esc, digits)


def _build(seed: int, each: int = 4) -> list[dict]:
    sink = _Sink(_sources())
    words_questions(sink, seed, each=each)
    return sink.items


def test_the_set_is_the_same_for_a_seed_and_another_for_another(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda _: None)  # no phone menus: espeak-ng apart
    first, again, other = (_build(s) for s in (0, 0, 7))
    assert [i["question"] + i["answer"] for i in first] == [
        i["question"] + i["answer"] for i in again
    ]
    assert [i["answer"] for i in first] != [i["answer"] for i in other]
    shapes = [i["open"] for i in first]
    assert shapes == ["sound_name"] * 4 + ["digit"] * 4 + ["digits"] * 4
    for item in first:
        assert item["category"] == "words" and item["choices"] == []
        if item["open"] == "sound_name":
            assert item["accept"] == SYNONYMS[item["answer"]]
        if item["open"] == "digits":
            assert 3 <= len(item["answer"].split()) <= 5


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
def test_phone_menus_ask_for_a_key_the_menu_says():
    items = [i for i in _build(0, each=2) if i["open"] == "key"]
    assert len(items) == 2
    for item in items:
        line = next(line for line, asked in OPTIONS if item["question"] in asked)
        assert item["synthetic"] and line.format(k=item["answer"]) in item["menu"]
        assert item["audio"].size > 2 * SR and np.abs(item["audio"]).max() > 0.1
