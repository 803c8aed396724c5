"""Pure functions from run events to chat messages.

The UI uses the same functions while a run streams (on the events seen so far) and when a
stored conversation is reopened (on the events read back from the database), so a live answer
and a reopened one look the same. Nothing here talks to Gradio, the service or the database:
messages are plain dicts in the shape ``gr.Chatbot`` accepts (``role``, ``content`` and, for the
collapsible panels, ``metadata`` with ``title``/``status``/``duration``/``log``/``id``).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent import events as ev
from frontend.answer_text import (
    WITHOUT_TOOLS_NOTE,
    answer_line,
    degraded_note,
    footnote,
    md_escape,
)
from frontend.run_state import Call, RunState, Turn, anything_pending, fold, stopped

Message = dict[str, Any]

_ANSWER_TAG = re.compile(r"<answer>.*?</answer>", re.IGNORECASE | re.DOTALL)


def render_user(
    question: str,
    choices: Sequence[str] = (),
    audio: str | None = None,
    audio_url: str | None = None,
) -> Message:
    """The person's question, its answer choices (if any) and the audio, when it is new;
    with ``audio_url``, the audio is a player in the message.

    All of it is the person's own text: escaped, so no HTML or Markdown in it acts."""
    parts = [md_escape(question.strip())]
    if choices:
        parts.append("\n".join(f"- {md_escape(c)}" for c in choices))
    if audio:
        parts.append(f"Audio: {md_escape(audio)}")
        if audio_url:
            parts.append(audio_player(audio_url, audio))
    return {"role": "user", "content": "\n\n".join(parts)}


def audio_player(url: str, label: str) -> str:
    """A recording as a compact player (the page moves the timeline's playhead with it)."""
    return (
        f'<audio class="bubble-audio" controls preload="metadata" src="{html.escape(url)}" '
        f'aria-label="Play {html.escape(label)}"></audio>'
    )


def audio_label(name: str, duration_s: float | None = None) -> str:
    label = name or "recording"
    if duration_s is not None:
        label += f" ({duration_s:.1f} s)"
    return label


def render_run(events: Sequence[ev.Event]) -> list[Message]:
    """Chat messages for one run's events (all of them, or those seen so far while streaming).

    One collapsible "Reasoning" panel per planner turn and one panel per tool call (status
    "pending" until its end, then "done" with the duration), then the answer as a normal
    message with a footnote of calls, time, tokens and cost; a failed run ends with a clear
    error message.
    """
    state = fold(events)
    run_id = events[0].run_id if events else ""
    messages: list[Message] = []
    for kind, key in state.order:
        if kind == "turn":
            message = _reasoning_message(state, state.turns[key], run_id)
        elif kind == "call":
            message = _tool_message(state, state.calls[key], run_id)
        elif kind == "verification":
            message = _verification_message(key, run_id)
        elif kind == "document":
            message = _document_message(key, run_id)
        elif kind == "answer":
            message = _answer_message(state)
        else:
            message = _failed_message(key)
        if message is not None:
            messages.append(message)
    if state.started is not None and not state.ended and not anything_pending(state):
        label = state.started.planner_label or state.started.planner
        messages.append(
            panel(f"Working: {label}", "Working…", "pending", ident=f"{run_id}:working")
        )
    elif state.started is None and state.queued is not None and not state.ended:
        messages.append(
            panel(queued_text(state.queued), "Waiting…", "pending", ident=f"{run_id}:queued")
        )
    return messages


def queued_text(event: ev.Queued) -> str:
    """The state of a run waiting for a slot: "Queued: N ahead"."""
    return f"Queued: {event.ahead} ahead"


def panel(
    title: str,
    content: str,
    status: str,
    *,
    ident: str,
    duration: float | None = None,
    log: str | None = None,
) -> Message:
    metadata: dict[str, Any] = {"title": title, "status": status, "id": ident}
    if duration is not None:
        metadata["duration"] = round(max(duration, 0.0), 2)
    if log:
        metadata["log"] = log
    return {"role": "assistant", "content": content, "metadata": metadata}


def _reasoning_message(state: RunState, turn: Turn, run_id: str) -> Message | None:
    if turn.thought is not None:
        text, thinking = turn.thought.text, turn.thought.reasoning
    else:
        text, thinking = "".join(turn.parts), "".join(turn.thinking)
    done = turn.thought is not None or state.ended
    notice = _first_notice(state, turn)  # e.g. why there is no reasoning summary
    if done and not text.strip() and not thinking.strip() and not notice:
        return None
    parts = []
    if thinking.strip():  # a reasoning model's own thinking, set apart as a quote
        parts.append("\n".join(f"> {line}" for line in md_escape(thinking.strip()).splitlines()))
    if text.strip():
        parts.append(md_escape(text.strip()))
    if notice:
        parts.append(f"_{md_escape(notice)}_")
    duration = None
    if turn.thought is not None:
        duration = (turn.thought.at - turn.started).total_seconds()
    return panel(
        "Reasoning",
        "\n\n".join(parts) or "…",
        "done" if done else "pending",
        ident=f"{run_id}:turn:{turn.turn}",
        duration=duration,
        log=f"turn {turn.turn}" + (f" · {turn.step}" if turn.step else ""),
    )


def _first_notice(state: RunState, turn: Turn) -> str:
    """A turn's notice, shown on the first turn of the run that carries it (not on every
    later turn that repeats it)."""
    notice = turn.thought.notice if turn.thought is not None else ""
    if not notice:
        return ""
    first = min(
        t.turn for t in state.turns.values() if t.thought is not None and t.thought.notice == notice
    )
    return notice if first == turn.turn else ""


def tool_title(tool: str, model: str | None) -> str:
    return f"Tool: {tool} · {model}" if model else f"Tool: {tool}"


def _arguments_md(arguments: Mapping[str, Any]) -> str:
    if not arguments:
        return "**Arguments:** none (defaults)"
    text = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    if len(text) <= 80:
        return f"**Arguments:** `{text}`"
    pretty = json.dumps(arguments, ensure_ascii=False, sort_keys=True, indent=2)
    return f"**Arguments:**\n```json\n{pretty}\n```"


def _tool_message(state: RunState, entry: Call, run_id: str) -> Message:
    call, result = entry.call, entry.result
    parts = [_arguments_md(call.arguments)]
    log = None
    if result is None:
        if stopped(state):
            parts.append("**Stopped:** the run was stopped before this call finished.")
            status, log = "done", "stopped"
        elif state.ended:
            parts.append("**No result:** the run ended before this call finished.")
            status, log = "done", "no result"
        else:
            parts.append("_Running…_")
            status = "pending"
        return panel(
            tool_title(call.tool, call.model), "\n\n".join(parts), status,
            ident=f"{run_id}:call:{call.call_id}", log=log,
        )  # fmt: skip
    if result.error:
        parts.append(f"**Error:** {md_escape(result.error)}")
        log = "failed"
    if result.output.strip():
        parts.append("**Output:**\n\n" + md_escape(result.output.strip()))
    elif not result.error:
        parts.append("**Output:** _(empty)_")
    if result.cached:
        parts.append("_Served from the cache: an identical call was made before._")
        log = "cached" if log is None else f"{log} · cached"
    return panel(
        tool_title(call.tool, call.model),
        "\n\n".join(parts),
        "done",
        ident=f"{run_id}:call:{call.call_id}",
        duration=result.duration_s,
        log=log,
    )


def _verification_message(event: ev.Verification, run_id: str) -> Message:
    lines = []
    if event.question:
        lines += [f"**Question:** {md_escape(event.question)}", ""]
    lines += ["| source | says |", "|---|---|"]
    lines += [
        f"| {md_escape(name)} | {md_escape(' '.join(text.split()))} |"
        for name, text in event.answers.items()
    ]
    lines += ["", f"**Agreement:** {'yes' if event.agreement else 'no'}"]
    if event.resolution:
        lines += ["", f"**Resolution:** {md_escape(event.resolution)}"]
    return panel(
        f"Cross-check of {event.scope}: " + ", ".join(event.compared),
        "\n".join(lines),
        "done",
        ident=f"{run_id}:verification:{event.seq}",
        log="agree" if event.agreement else "disagree",
    )


def _document_message(event: ev.DocumentUpdate, run_id: str) -> Message:
    return panel(
        f"Working document · iteration {event.iteration}",
        md_escape(event.text.strip()) or "_(empty)_",
        "done",
        ident=f"{run_id}:document:{event.seq}",
        log=event.note or None,
    )


def _repeats(rationale: str, reasoning: str) -> bool:
    """Whether the rationale is (a part of) the reasoning text, spacing and case aside."""
    said = " ".join(reasoning.split()).casefold()
    return bool(said) and " ".join(rationale.split()).casefold() in said


def _last_reasoning(state: RunState) -> str:
    """The visible text of the run's last planner turn ("" without one)."""
    if not state.turns:
        return ""
    turn = state.turns[max(state.turns)]
    return turn.thought.text if turn.thought is not None else "".join(turn.parts)


def _answer_message(state: RunState) -> Message | None:
    answer, finished = state.answer, state.finished
    parts: list[str] = []
    if answer is not None:
        choices = state.started.choices if state.started else []
        parts.append(answer_line(answer, choices))
        # the planner's own <answer> tag is shown above as the answer
        rationale = _ANSWER_TAG.sub("", answer.rationale).strip()
        if answer.choice is None and rationale.startswith(answer.text.strip()):
            rationale = rationale[len(answer.text.strip()) :].strip()  # said just above
        if rationale and _repeats(rationale, _ANSWER_TAG.sub("", _last_reasoning(state))):
            rationale = ""  # the last reasoning panel says it already
        if rationale:
            parts.append(md_escape(rationale))
        if answer.forced and (finished is None or finished.status != "forced"):
            parts.append("_Answered when the tool budget was spent._")
        if answer.without_tools:
            parts.append(WITHOUT_TOOLS_NOTE)
    if finished is not None and finished.status == "degraded":
        parts.append(degraded_note(finished))
    if finished is not None:
        label = state.started.planner_label if state.started else ""
        # the confidence (and a guess) are on the answer line, not repeated here
        parts.append(f"<sub>{md_escape(footnote(finished, label))}</sub>")
    if not parts:
        return None
    return {"role": "assistant", "content": "\n\n".join(parts)}


def _failed_message(event: ev.RunFailed) -> Message:
    if event.kind == "cancelled":
        text = f"**Stopped.** {md_escape(event.message)}"
    elif event.kind == "interrupted":
        text = f"**Interrupted:** {md_escape(event.message)}"
    else:
        text = f"**The run failed** ({md_escape(event.kind)}): {md_escape(event.message)}"
    return {"role": "assistant", "content": text}
