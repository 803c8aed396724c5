"""Reading what a question asks for (no models): questions typed as people type them, the
shape of "A, then B" choices, and the offline planner's modules importing one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agent.number_words import canonical, count_word, digits_as_words, leading_number
from agent.planners.question_focus import (
    choice_sequence,
    focus_of,
    is_sequence_question,
    is_yes_no_choices,
    open_ask,
)
from agent.planners.question_types import classify, tool_arguments

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("question", "form", "target", "subject"),
    [
        ("Is there music in the background?", "yes_no", "music", ""),
        ("Is there music in this recording, and what kind?", "yes_no", "music", ""),
        ("Does the speaker say the word look?", "yes_no", "word", "look"),
        ("Does he say the word estate?", "yes_no", "word", "estate"),
        ("Is the number seven said?", "yes_no", "word", "seven"),
        ("Does she say 'seven'?", "yes_no", "word", "seven"),
        ("Is two among the numbers said?", "yes_no", "word", "two"),
        ("Does the speaker mention a mountain?", "yes_no", "word", "mountain"),
        ("Is there a sound of a hen?", "yes_no", "sound", "hen"),
        ("Is there a dog barking?", "yes_no", "sound", "dog barking"),
        ("Can you hear a car horn?", "yes_no", "sound", "car horn"),
        ("is anyone talking", "yes_no", "speech", ""),
        ("Does the speaker say something?", "yes_no", "speech", ""),
        ("Is there speech?", "yes_no", "speech", ""),
        ("Can you hear someone coughing?", "yes_no", "sound", "coughing"),
        ("Can you hear people clapping?", "yes_no", "sound", "clapping"),
        ("Is anyone there?", "yes_no", "speech", ""),
        ("Can you hear people talking?", "yes_no", "speech", ""),
        ("When does the dog bark?", "when", "sound", "dog bark"),
        ("When does the speech start?", "when", "speech", ""),
        ("What kind of animal is this?", "kind", "sound", "animal"),
        ("What's that noise?", "kind", "sound", "noise"),
        ("Is the singer a man or a woman?", "who", "speech", ""),
        ("what does he say", "said", "speech", ""),
    ],
)
def test_open_questions_as_people_type_them(question, form, target, subject):
    ask = open_ask(question)
    assert (ask.form, ask.target, ask.subject) == (form, target, subject)


def test_and_what_kind_and_the_edge_of_a_when():
    assert open_ask("Is there music in this recording, and what kind?").and_kind
    assert not open_ask("Is there music in the background?").and_kind
    assert open_ask("When does the speech start?").edge == "start"
    assert open_ask("When does the music end?").edge == "end"


def test_a_when_question_is_not_an_order_question():
    # "start" used to make it "which sound comes first"
    assert focus_of("When does the speech start?", []) is None
    assert focus_of("Which sound is heard at the start?", ["dog", "rain"]).position == 1


def test_sequence_choices():
    assert choice_sequence("dog, then rain") == ["dog", "rain"]
    assert choice_sequence("First a dog, then rain, then a siren") == ["a dog", "rain", "a siren"]
    assert choice_sequence("dog -> rain") == ["dog", "rain"]
    assert choice_sequence("dog followed by rain") == ["dog", "rain"]
    assert choice_sequence("dog barking") == ["dog barking"]
    assert is_sequence_question(["dog, then rain", "rain, then dog"])
    assert not is_sequence_question(["dog", "rain, then dog"])
    assert focus_of("In what order?", ["dog, then rain", "rain, then dog"]).kind == "sequence"


def test_yes_no_choices():
    assert is_yes_no_choices(["Yes", "No"])
    assert is_yes_no_choices(["no, it is not", "yes, it is"])
    assert not is_yes_no_choices(["yes", "maybe"])


def test_dispatch_of_open_questions():
    hen = classify("Is there a sound of a hen?", [])
    assert hen.kind == "presence" and hen.tools == ("sound_events",)
    word = classify("Does the speaker say the word look?", [])
    assert word.tools == ("transcribe", "speech_activity")
    # words are listened for with their own times and no hint that names them
    assert tool_arguments("transcribe", word, []) == {"per_span": True, "word_timestamps": True}
    seven = classify("Is the number seven said?", [])
    assert tool_arguments("transcribe", seven, [])["prompt"].startswith("zero, one, two")
    music = classify("Is there music in the background?", [])
    assert set(music.tools) == {"sound_events", "music_analysis"}
    assert classify("Is there a dog?", ["yes", "no"]).kind == "presence"
    assert classify("Which sound?", ["dog, then rain", "rain, then dog"]).kind == "sequence"


def test_number_words_in_one_place():
    assert leading_number("three times") == 3.0
    assert leading_number("three times", word_first=False) is None
    assert leading_number("about 120 BPM") == 120.0
    assert canonical("7") == "seven" and canonical("oh") == "zero"
    assert digits_as_words(["oh", "7", "dog"]) == ["oh", "seven", "dog"]
    assert count_word(0) == "no" and count_word(3) == "three" and count_word(42) == "42"


def _imports(path: Path, package: str) -> set[str]:
    """The modules of ``package`` a file imports, at any depth (function-level too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.startswith(package)}


def test_the_offline_planner_modules_import_one_way():
    """No import circle among the offline planner's modules (there were two: question_types
    and offline_timeline, offline_timeline and offline_speakers), function-level included."""
    modules = {f"agent.planners.{p.stem}": p for p in (ROOT / "agent" / "planners").glob("*.py")}
    modules["agent.number_words"] = ROOT / "agent" / "number_words.py"
    graph = {name: _imports(path, "agent.") & set(modules) for name, path in modules.items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph[start]:
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    circles = sorted(name for name in graph if reaches(name, name, {name}))
    assert circles == []
