"""Prompt text the loop gives an LLM planner (AudioToolAgent style)."""

from __future__ import annotations

from collections.abc import Sequence

from agent.answer import format_choices
from agent.audio import AudioRef

# The same text for every question and turn, so that with the tool list it is a prefix the
# providers cache (OpenAI, DeepSeek, Gemini implicit caching): what varies (the recordings,
# the budget) comes with the question, after it.
SYSTEM_PROMPT = """You answer questions about audio recordings you cannot hear: call the \
audio tools for the evidence the question needs, then reason over what they report.
- Calls made in one turn run at the same time.
- Tools can be wrong. When they disagree or an answer is unsure, cross-check: another \
tool, a more specific question, or one time range (the clip tool).
- Stay within the tool budget given with the question.
- When the evidence suffices, reply without tools, the final answer in \
<answer>...</answer>; when choices are given it is exactly the text of one choice."""

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


def system_prompt() -> str:
    return SYSTEM_PROMPT


def run_context(audio: Sequence[AudioRef], budget: int) -> str:
    """What the planner is told with each new question: its recordings and its budget."""
    return f"Recordings: {describe_audio(audio) or 'none'}. Tool budget: {budget} calls."


def question_prompt(question: str, choices: Sequence[str]) -> str:
    if not choices:
        return question
    return f"{question}\n\nChoices:\n{format_choices(choices)}"
