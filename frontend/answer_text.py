"""How an answer and a run's totals read, in Markdown: escaping, the answer line (with its
confidence, or "best guess"), the footnote of calls, time, tokens and cost."""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent import events as ev
from backend.service import says_it_cannot_tell

MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~])")


def md_escape(text: str) -> str:
    """Show tool and error text literally: escape the characters Markdown would act on."""
    return MD_SPECIAL.sub(r"\\\1", text)


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def guess_line(answer: ev.Answer) -> str:
    """How a guessed answer reads: "can't tell; best guess: X" for a choice, "best guess: Yes:
    ..." for an answer in words (which says what it could not tell itself); an answer that
    already begins "I can't tell" reads as it is, not as a guess of something."""
    if answer.choice is None:
        text = answer.text.strip()
        return text if says_it_cannot_tell(text) else f"best guess: {text}"
    return f"can't tell; best guess: {answer.choice.strip()}"


def input_tokens_text(input_tokens: int, cached: int) -> str:
    """Input tokens as shown: "1,034 in", or "1,034 in, 1,000 cached" when the provider
    served some from its prompt cache (priced at the cache price: agent/prices.py)."""
    text = f"{input_tokens:,} in"
    return f"{text}, {cached:,} cached" if cached else text


def footnote(
    finished: ev.RunFinished,
    planner_label: str = "",
    confidence: float | None = None,
    guess: str = "",
) -> str:
    """One line: calls, time, tokens and cost of a finished run."""
    tokens = finished.input_tokens + finished.output_tokens
    token_text = f"{tokens:,} tokens"
    if tokens:
        given = input_tokens_text(finished.input_tokens, finished.cache_read_tokens)
        token_text += f" ({given} · {finished.output_tokens:,} out)"
    if not finished.tokens_reported:  # a server that sends no counts is not 0 tokens
        token_text = f"{token_text}, some not reported" if tokens else "tokens not reported"
    parts = [
        plural(finished.calls, "tool call"),
        f"{finished.wall_s:.1f} s",
        token_text,
        f"${finished.cost:.4f}",
    ]
    if confidence is not None:
        parts.append(f"confidence {confidence:.2f}" + (f" ({guess})" if guess else ""))
    if planner_label:
        parts.append(planner_label)
    if finished.status == "forced":
        parts.append("answered when the tool budget was spent")
    elif finished.status == "cancelled":
        parts.append("cancelled")
    elif finished.status == "degraded":
        tools = ", ".join(finished.degraded_tools) or "a tool"
        parts.append(f"degraded: {tools} failed or timed out")
    return " · ".join(parts)


def answer_line(answer: ev.Answer, choices: Sequence[str] = ()) -> str:
    """The answer in one line: the choice (or the sentence) and its confidence; when the
    evidence could not decide, "Can't tell; best guess: X"."""
    if answer.guess:  # the evidence could not decide: never shown as if it knew
        line = guess_line(answer)
        line = f"**{md_escape(line[:1].upper() + line[1:])}**"
    elif answer.choice is not None:
        line = f"**Answer: {md_escape(answer.choice)}**"
    else:
        line = f"**Answer:** {md_escape(answer.text.strip())}"
    notes = []
    if answer.confidence is not None:
        notes.append(f"confidence {answer.confidence:.2f}")
    if notes:
        line += " · " + " · ".join(notes)
    if answer.choice is None and choices:
        line += "\n\n_(This answer does not match any of the choices.)_"
    return line


WITHOUT_TOOLS_NOTE = (
    "_No tool was called: this is the planner's text-only guess, not evidence from the recording._"
)


def degraded_note(finished: ev.RunFinished) -> str:
    """What a degraded run lacked: the tools that failed or timed out."""
    tools = ", ".join(md_escape(t) for t in finished.degraded_tools) or "some tools"
    return f"**Tools failed:** {tools}. The answer was made without them."
