"""Questions that expect a number or a key to press, asked of real recordings through the
offline planner and the local tools (FSDD digits; a synthetic phone menu: PROVENANCE.md)."""

from __future__ import annotations

import pytest

from agent.registry import Registry
from tests.offline_runs import ask_offline, compose, fixture_clip

pytestmark = pytest.mark.models


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry(env={})


@pytest.mark.parametrize(
    ("name", "said"), [("digit_5_jackson_0.wav", "Five."), ("digit_9_nicolas_0.wav", "Nine.")]
)
async def test_a_spoken_digit_is_heard_as_a_digit(registry, tmp_path, name, said):
    # the free reading of these is "Bye." and "nice"
    answer, _ = await ask_offline(
        registry, tmp_path, compose([fixture_clip(name)], gap=0.4),
        "What number does the speaker say?",
    )  # fmt: skip
    assert answer.text == said


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("Which button do I press to leave a message?", "Press 5 to leave a message."),
        ("which key do i press to get an operator?", "Press 0 for an operator."),
    ],
)
async def test_the_key_said_for_what_is_asked(registry, tmp_path, question, said):
    menu = fixture_clip("ivr_operator_message_espeak.wav")
    answer, _ = await ask_offline(registry, tmp_path, menu, question)
    assert answer.text == said
