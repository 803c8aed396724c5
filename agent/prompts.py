"""Prompt text the loop gives an LLM planner (AudioToolAgent style)."""

from __future__ import annotations

from collections.abc import Sequence

from agent.answer import format_choices
from agent.audio import AudioRef

SYSTEM_PROMPT = """You answer questions about audio recordings. You cannot hear the audio \
yourself: you call audio tools (speech-to-text, audio-language models, sound-event and \
music analysers, signal measurements) and reason over what they report.

How to work:
- Think briefly about what evidence the question needs, then call the tools that give it. \
Calls made in the same turn run at the same time.
- Tools can be wrong or vague. When two tools disagree, or one answer is uncertain, \
cross-check: ask another tool, ask a more specific question, or look at a time range with \
the clip tool.
- You have a budget of {budget} tool calls for this question.
- The recordings, referred to by these ids only: {audio_list}.
- When you have enough evidence, reply without calling tools. Put the final answer in \
<answer>...</answer>. {choice_rule}"""

CHOICE_RULE = "When answer choices are given, the answer must be exactly the text of one choice."

FORCE_ANSWER = (
    "The tool budget is spent. Answer now from the evidence you have, without calling tools. "
    "Put the final answer in <answer>...</answer>."
)


def audio_alias(index: int) -> str:
    """The name a planner uses for the index-th recording of a run ("audio1", ...)."""
    return f"audio{index + 1}"


def describe_audio(audio: Sequence[AudioRef]) -> str:
    return ", ".join(
        f"{audio_alias(i)} ({a.duration_s:.1f} s" + (f", {a.name}" if a.name else "") + ")"
        for i, a in enumerate(audio)
    )


def system_prompt(audio: Sequence[AudioRef], budget: int) -> str:
    return SYSTEM_PROMPT.format(
        budget=budget, audio_list=describe_audio(audio) or "none", choice_rule=CHOICE_RULE
    )


def question_prompt(question: str, choices: Sequence[str]) -> str:
    if not choices:
        return question
    return f"{question}\n\nChoices:\n{format_choices(choices)}"
