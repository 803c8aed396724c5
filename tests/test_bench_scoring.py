"""The benchmark scorers against hand-worked cases of each official rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.formats import Item
from bench.instruction_following import follows
from bench.judge import parse_scores
from bench.report import config_report
from bench.scoring import RunFacts, exact_choice, official_token_match, pro_match, score_item
from storage.benchmarks import ResultRow

CHOICES = ["Dog barking", "Cat meowing", "Dog growling", "Rain"]


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("Dog barking", True),  # the choice itself
        ("dog barking.", True),  # case and punctuation do not matter
        ("I hear a dog barking loudly", True),  # extra words no wrong choice has
        ("barking", False),  # partial: "dog" missing
        ("Dog barking, not growling", False),  # a token only a wrong choice has
        ("Dog barking in the rain", False),  # distractor word from a wrong choice
        ("B", False),  # a letter is not the answer's text
        ("", False),  # empty prediction
        ("dog", False),  # shared word only
    ],
)
def test_mmau_token_rule(prediction: str, expected: bool) -> None:
    assert official_token_match("Dog barking", prediction, CHOICES) is expected


def test_token_rule_credits_the_wrong_order_and_exact_choice_does_not() -> None:
    choices = ["Piano, then drums", "Drums, then piano", "Only piano", "Only drums"]
    answer = choices[0]
    wrong_order = "Drums, then piano"
    assert official_token_match(answer, wrong_order, choices) is True  # same tokens
    assert exact_choice(wrong_order, answer) is False
    assert exact_choice("piano, then drums!", answer) is True


def test_token_rule_ignores_a_choice_with_the_answers_own_tokens() -> None:
    # "dog." has the answer's tokens: not a wrong choice, so nothing of it is forbidden
    assert official_token_match("Dog", "a dog", ["Dog", "dog.", "Cat"]) is True


def similarity(text: str, options: list[str]) -> np.ndarray:
    """A stand-in embedding: shared letters (deterministic, enough to rank)."""
    return np.array([len(set(text.lower()) & set(o.lower())) for o in options], dtype=float)


def test_mmau_pro_choice_matching() -> None:
    assert pro_match("Rain", CHOICES, similarity) == ("Rain", "exact")
    assert pro_match("rainy weather", CHOICES, similarity)[1] == "minilm"
    assert pro_match("a cat is meowing", CHOICES, None) == ("Cat meowing", "overlap")


def item(kind: str = "choice", **raw: object) -> Item:
    return Item(
        id="q1",
        benchmark="mmau-pro",
        question=str(raw.pop("question", "What is heard?")),
        choices=list(raw.pop("choices", CHOICES)),  # type: ignore[call-overload]
        answer=str(raw.pop("answer", "Dog barking")),
        audio=[Path("a.wav"), Path("b.wav")],
        kind=kind,  # type: ignore[arg-type]
        groups={"category": str(raw.get("category", "sound"))},
        raw=dict(raw),
    )


def test_open_items_without_a_judge_are_not_scored_and_not_counted() -> None:
    open_item = item("open", choices=[], answer="A dog barks twice.", category="open")
    unscored = score_item(open_item, RunFacts(prediction="a dog"))
    assert unscored.value is None and unscored.not_scored
    judged = score_item(open_item, RunFacts(prediction="a dog"), verdict={"value": 0.8})
    assert judged.value == 0.8
    right = score_item(item(), RunFacts(prediction="Dog barking"), similarity=similarity)
    rows = [
        ResultRow(item_id=str(i), config_key="k", run_key=str(i), config={"planner": "p",
                  "strategy": "react", "tools": []}, labels={"category": c}, score=s.public(),
                  run_id="r")
        for i, (c, s) in enumerate([("open", unscored), ("sound", right)])
    ]  # fmt: skip
    report = config_report(rows, "mmau-pro")
    assert report["accuracy"] == 100.0 and report["not_scored"] == 1
    assert report["mmau_pro"]["not_scored"] == {"open": 1}
    assert report["mmau_pro"]["weighted_performance"] == 1.0


def test_mmau_pro_closed_item_without_choices_is_left_out() -> None:
    score = score_item(item(choices=["Rain"]), RunFacts(prediction="Rain"))
    assert score.value is None and "two choices" in (score.not_scored or "")


def test_multi_audio_item_scored_like_any_closed_one() -> None:
    multi = item(category="multi", answer="Cat meowing")
    assert len(multi.audio) == 2
    assert score_item(multi, RunFacts(prediction="Cat meowing"), similarity=similarity).correct
    wrong = score_item(multi, RunFacts(prediction="Dog barking"), similarity=similarity)
    assert wrong.correct is False and wrong.pro_choice == "Dog barking"


@pytest.mark.parametrize(
    ("identifier", "kwargs", "good", "bad"),
    [
        ("Include Keywords", {"keywords": "dog, bark"}, "The dog will bark", "A dog"),
        ("Keyword Frequency", {"keyword": "dog", "N": 2}, "dog and dog", "dog"),
        ("Forbidden Words", {"forbidden_words": "cat, rain"}, "A dog", "A cat"),
        ("Number Paragraphs", {"N": 2}, "one *** two", "one"),
        ("Number Words (at least)", {"N": 3}, "a b c", "a b"),
        ("Number Words (at most)", {"N": 2}, "a b", "a b c"),
        ("Number Words (range)", {"N1": 2, "N2": 3}, "a b c", "a"),
        ("Number Sentences (at least)", {"N": 2}, "One. Two.", "One."),
        ("Postscript", {"postscript_marker": "P.S."}, "Hi. P.S. bye", "Hi."),
        ("Number Placeholder", {"N": 2}, "[a] and [b]", "[a]"),
        ("Number Bullets", {"N": 2}, "* a\n* b", "* a"),
        ("Title", {}, "<<Dogs>> text", "Dogs"),
        ("Minimum Number Highlighted Section", {"N": 1}, "a *b* c", "a b c"),
        ("Multiple Sections", {"N": 2, "section_splitter": "SECTION"}, "SECTION a SECTION b",
         "SECTION a"),
        ("Two Responses", {}, "yes ****** no", "yes ****** yes"),
        ("All Uppercase", {}, "A DOG", "A dog"),
        ("All Lowercase", {}, "a dog", "A dog"),
        ("All-capital Words (at least)", {"N": 2}, "A DOG barks", "A dog"),
        ("Start Checker", {"start_phrase": "Well,"}, "well I think", "I think"),
        ("End Checker", {"end_phrase": "the end"}, "That is The End.", "That is all."),
        ("Quotation", {}, '"a dog"', "a dog"),
        ("No Commas", {}, "a dog", "a, dog"),
    ],
)  # fmt: skip
def test_instruction_following_rules(identifier, kwargs, good, bad) -> None:
    assert follows(good, identifier, kwargs, "q") is True
    assert follows(bad, identifier, kwargs, "q") is False


def test_instruction_following_repeat_prompt_unknown_rule_and_json_kwargs() -> None:
    assert follows("What is heard? A dog.", "Repeat Prompt", None, "what is heard?")
    assert not follows("A dog.", "Repeat Prompt", None, "What is heard?")
    assert not follows("anything", "Some Future Rule", {}, "q")
    assert follows("dog dog", "Keyword Frequency", '{"keyword": "dog", "N": 2}', "q")
    # no forbidden word (or an empty one after a separator) forbids nothing, as upstream
    assert follows("A dog", "Forbidden Words", {}, "q")
    assert follows("A dog", "Forbidden Words", {"forbidden_words": "cat, "}, "q")
    assert not follows("A cat", "Forbidden Words", {"forbidden_words": "cat, "}, "q")
    instruction = item("instruction", choices=[], category="instruction following",
                       task_identifier="All Lowercase", kwargs=None)  # fmt: skip
    assert score_item(instruction, RunFacts(prediction="a dog barks")).value == 1.0
    assert score_item(instruction, RunFacts(prediction="A dog barks")).value == 0.0


def test_judge_scores_parsed_as_mmau_pro_reads_them() -> None:
    text = "CORRECTNESS: 4 - ok\nRELEVANCE: 5 - ok\nCOMPLETENESS: 2 - thin\nCLARITY: 5\nOVERALL: 4"
    assert parse_scores(text)["overall"] == 4.0
    missing = parse_scores("CORRECTNESS: 5\nRELEVANCE: 5\nCLARITY: 5")  # completeness: 3
    assert missing["completeness"] == 3.0 and missing["overall"] == 4.5
    neutral = parse_scores("CORRECTNESS: 1\nRELEVANCE: 1\nCOMPLETENESS: 1\nCLARITY: 1\nOVERALL: 3")
    assert neutral["overall"] == 1.0  # an overall of 3 is replaced by the criteria's mean


def test_dev_set_questions_in_words_are_scored_by_their_own_scorer() -> None:
    """The dev sets' open questions (MMAU format, no choices, an ``open`` kind) are read as
    ``bench.devsets_open`` reads them, as ``bench.run_benchmark`` does; the token rule read
    "Three sounds: ..." against "three" as a miss."""

    def words(kind: str, answer: str, **raw: object) -> Item:
        return Item(id="d1", benchmark="mmau", question="How many?", choices=[], answer=answer,
                    audio=[Path("a.wav")], kind="choice", groups={"category": "open"},
                    raw={"open": kind, "answer": answer, **raw})  # fmt: skip

    many = words("how_many", "three")
    right = score_item(many, RunFacts(prediction="Three sounds: a dog, a bell, rain."))
    assert right.correct is True and right.value == 1.0 and right.kind == "words"
    assert score_item(many, RunFacts(prediction="Two sounds: a dog, rain.")).correct is False
    yes_no = words("yes_no", "no")
    assert score_item(yes_no, RunFacts(prediction="No: nothing like a dog.")).correct is True
    assert score_item(yes_no, RunFacts(prediction="Yes: a dog at 1 s.")).correct is False
