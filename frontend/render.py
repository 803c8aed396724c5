"""Pure functions from run events to chat messages and trace tables.

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
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, assert_never

from agent import events as ev
from backend.service import CompareSummary, MessageView, RunView
from backend.service import summary_row as stored_row

Message = dict[str, Any]

TRACE_COLUMNS = ["tool", "model", "time (s)", "cached", "error", "tokens", "cost ($)"]

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~])")
_ANSWER_TAG = re.compile(r"<answer>.*?</answer>", re.IGNORECASE | re.DOTALL)


def md_escape(text: str) -> str:
    """Show tool and error text literally: escape the characters Markdown would act on."""
    return _MD_SPECIAL.sub(r"\\\1", text)


# ---------------------------------------------------------------------------------- user


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


# ---------------------------------------------------------------------------------- runs


@dataclass
class _Turn:
    turn: int
    started: datetime  # when the planner was asked (the event before its first delta)
    parts: list[str] = field(default_factory=list)  # the visible text
    thinking: list[str] = field(default_factory=list)  # a reasoning model's own thinking
    step: str | None = None  # the strategy's step ("plan 1", "answer" ...)
    thought: ev.Thought | None = None


@dataclass
class _Call:
    call: ev.ToolCall
    result: ev.ToolResultEvent | None = None


@dataclass
class _RunState:
    """The events of one run folded into what is shown, in the order it first appeared."""

    order: list[tuple[str, Any]] = field(default_factory=list)
    turns: dict[int, _Turn] = field(default_factory=dict)
    calls: dict[str, _Call] = field(default_factory=dict)
    started: ev.RunStarted | None = None
    queued: ev.Queued | None = None  # the latest, while the run waits for a slot
    answer: ev.Answer | None = None
    finished: ev.RunFinished | None = None
    failed: ev.RunFailed | None = None
    last_at: datetime | None = None

    @property
    def ended(self) -> bool:
        return self.finished is not None or self.failed is not None


def _fold(events: Sequence[ev.Event]) -> _RunState:
    state = _RunState()
    for event in events:
        _apply(state, event)
        state.last_at = event.at
    return state


def _apply(state: _RunState, event: ev.Event) -> None:
    if isinstance(event, ev.RunStarted):
        state.started = event
    elif isinstance(event, ev.Queued):
        state.queued = event
    elif isinstance(event, ev.PlannerDelta):
        turn = _turn(state, event.turn, event.at)
        (turn.thinking if event.kind == "reasoning" else turn.parts).append(event.text)
        turn.step = turn.step or event.step
    elif isinstance(event, ev.Thought):
        turn = _turn(state, event.turn, event.at)
        turn.thought = event
        turn.step = turn.step or event.step
    elif isinstance(event, ev.ToolCall):
        state.calls[event.call_id] = _Call(event)
        state.order.append(("call", event.call_id))
    elif isinstance(event, ev.ToolResultEvent):
        entry = state.calls.get(event.call_id)
        if entry is None:  # a result without its call: show it anyway
            call = ev.ToolCall(
                run_id=event.run_id, seq=event.seq, at=event.at, call_id=event.call_id,
                tool=event.tool,
            )  # fmt: skip
            entry = state.calls[event.call_id] = _Call(call)
            state.order.append(("call", event.call_id))
        entry.result = event
    elif isinstance(event, ev.Verification):
        state.order.append(("verification", event))
    elif isinstance(event, ev.DocumentUpdate):
        state.order.append(("document", event))
    elif isinstance(event, ev.Answer):
        state.answer = event
        state.order.append(("answer", None))
    elif isinstance(event, ev.RunFinished):
        state.finished = event
        if state.answer is None:
            state.order.append(("answer", None))
    elif isinstance(event, ev.RunFailed):
        state.failed = event
        state.order.append(("failed", event))
    else:
        assert_never(event)


def _turn(state: _RunState, turn: int, at: datetime) -> _Turn:
    if turn not in state.turns:
        state.turns[turn] = _Turn(turn, started=state.last_at or at)
        state.order.append(("turn", turn))
    return state.turns[turn]


def render_run(events: Sequence[ev.Event]) -> list[Message]:
    """Chat messages for one run's events (all of them, or those seen so far while streaming).

    One collapsible "Reasoning" panel per planner turn and one panel per tool call (status
    "pending" until its end, then "done" with the duration), then the answer as a normal
    message with a footnote of calls, time, tokens and cost; a failed run ends with a clear
    error message.
    """
    state = _fold(events)
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
    if state.started is not None and not state.ended and not _anything_pending(state):
        label = state.started.planner_label or state.started.planner
        messages.append(
            _panel(f"Working: {label}", "Working…", "pending", ident=f"{run_id}:working")
        )
    elif state.started is None and state.queued is not None and not state.ended:
        messages.append(
            _panel(queued_text(state.queued), "Waiting…", "pending", ident=f"{run_id}:queued")
        )
    return messages


def queued_text(event: ev.Queued) -> str:
    """The state of a run waiting for a slot: "Queued: N ahead"."""
    return f"Queued: {event.ahead} ahead"


def _stopped(state: _RunState) -> bool:
    """The run was stopped (Stop, or the API's stop): its status is ``cancelled``."""
    return state.failed is not None and state.failed.kind == "cancelled"


def _anything_pending(state: _RunState) -> bool:
    return any(t.thought is None for t in state.turns.values()) or any(
        c.result is None for c in state.calls.values()
    )


def _panel(
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


def _reasoning_message(state: _RunState, turn: _Turn, run_id: str) -> Message | None:
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
    return _panel(
        "Reasoning",
        "\n\n".join(parts) or "…",
        "done" if done else "pending",
        ident=f"{run_id}:turn:{turn.turn}",
        duration=duration,
        log=f"turn {turn.turn}" + (f" · {turn.step}" if turn.step else ""),
    )


def _first_notice(state: _RunState, turn: _Turn) -> str:
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


def _tool_message(state: _RunState, entry: _Call, run_id: str) -> Message:
    call, result = entry.call, entry.result
    parts = [_arguments_md(call.arguments)]
    log = None
    if result is None:
        if _stopped(state):
            parts.append("**Stopped:** the run was stopped before this call finished.")
            status, log = "done", "stopped"
        elif state.ended:
            parts.append("**No result:** the run ended before this call finished.")
            status, log = "done", "no result"
        else:
            parts.append("_Running…_")
            status = "pending"
        return _panel(
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
    return _panel(
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
    return _panel(
        f"Cross-check of {event.scope}: " + ", ".join(event.compared),
        "\n".join(lines),
        "done",
        ident=f"{run_id}:verification:{event.seq}",
        log="agree" if event.agreement else "disagree",
    )


def _document_message(event: ev.DocumentUpdate, run_id: str) -> Message:
    return _panel(
        f"Working document · iteration {event.iteration}",
        md_escape(event.text.strip()) or "_(empty)_",
        "done",
        ident=f"{run_id}:document:{event.seq}",
        log=event.note or None,
    )


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def guess_line(answer: ev.Answer) -> str:
    """How a guessed answer reads: "can't tell; best guess: X" for a choice, "best guess: Yes:
    ..." for an answer in words (which says what it could not tell itself)."""
    if answer.choice is None:
        return f"best guess: {answer.text.strip()}"
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
        _plural(finished.calls, "tool call"),
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


def _repeats(rationale: str, reasoning: str) -> bool:
    """Whether the rationale is (a part of) the reasoning text, spacing and case aside."""
    said = " ".join(reasoning.split()).casefold()
    return bool(said) and " ".join(rationale.split()).casefold() in said


def _last_reasoning(state: _RunState) -> str:
    """The visible text of the run's last planner turn ("" without one)."""
    if not state.turns:
        return ""
    turn = state.turns[max(state.turns)]
    return turn.thought.text if turn.thought is not None else "".join(turn.parts)


WITHOUT_TOOLS_NOTE = (
    "_No tool was called: this is the planner's text-only guess, not evidence from the recording._"
)


def degraded_note(finished: ev.RunFinished) -> str:
    """What a degraded run lacked: the tools that failed or timed out."""
    tools = ", ".join(md_escape(t) for t in finished.degraded_tools) or "some tools"
    return f"**Tools failed:** {tools}. The answer was made without them."


def _answer_message(state: _RunState) -> Message | None:
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


# --------------------------------------------------------------------------- conversations


TRACE_NOT_LOADED = (
    "This earlier answer's reasoning and tool calls were not loaded with the conversation, so "
    "that a long one opens fast: **Show all traces** (under the chat) "
    "loads them here; the **Trace** tab shows the calls and timeline of "
    "any run."
)


def render_summary(run: RunView) -> list[Message]:
    """An earlier run read without its trace (``RunView.complete`` False: only its start,
    answer and end): one closed panel that says what it did and where its trace is, then
    its answer (or failure) as when it was live."""
    info = run.info
    title = f"Trace: {_plural(info.calls, 'tool call')}, not loaded"
    panel = _panel(title, TRACE_NOT_LOADED, "done", ident=f"{info.id}:trace")
    return [panel, *render_run(run.events)]


def render_run_view(run: RunView) -> list[Message]:
    """A stored run: its whole trace, or its summary when only that was read."""
    return render_run(run.events) if run.complete else render_summary(run)


def last_audio(views: Sequence[MessageView]) -> str | None:
    """The recording of the last message in ``views`` that has one."""
    return next((v.message.audio_id for v in reversed(views) if v.message.audio_id), None)


def render_conversation(
    views: Sequence[MessageView],
    audio_labels: Mapping[str, str] | None = None,
    previous_audio: str | None = None,
    audio_urls: Mapping[str, str] | None = None,
) -> list[Message]:
    """A stored conversation: each question with the full trace of its runs, as when live
    (or their summary, for runs read without their trace).

    ``audio_labels`` maps audio ids to a label ("dog.wav (5.0 s)"); the label is shown on a
    question whose audio differs from the previous question's (``previous_audio``: that of
    the question before ``views``, when they are the end of a conversation), as a player
    when ``audio_urls`` has the recording's address. Stored
    assistant messages repeat the runs' answers, so they are only shown for a question
    without an answer event.
    """
    labels = audio_labels or {}
    messages: list[Message] = []
    answered = False
    for view in views:
        info = view.message
        if info.role == "user":
            audio = None
            if info.audio_id and info.audio_id != previous_audio:
                audio = labels.get(info.audio_id, "recording")
                previous_audio = info.audio_id
            url = (audio_urls or {}).get(info.audio_id or "") if audio else None
            messages.append(render_user(info.text, info.choices, audio, url))
            if len(view.runs) > 1:  # compare mode: each run under its heading, then a summary
                messages.extend(render_compare(view.runs))
                answered = True  # the summary replaces the stored headline
                continue
            answered = False
            for run in view.runs:
                messages.extend(render_run_view(run))
                answered = answered or any(isinstance(e, ev.Answer) for e in run.events)
        elif not answered:
            messages.append({"role": "assistant", "content": md_escape(info.text)})
    return messages


# ------------------------------------------------------------------------------ compare

COMPARE_COLUMNS = [
    "planner", "strategy", "answer", "confidence", "calls", "time", "cost", "tokens",
]  # fmt: skip


def short_label(label: str) -> str:
    """The label without its parenthesis, for narrow headings ("Offline rule planner")."""
    return label.split(" (", 1)[0].strip() or label


def contender_label(planner_label: str, strategy: str) -> str:
    return f"{short_label(planner_label)} · {strategy}"


def planner_label_of(events: Sequence[ev.Event], default: str = "") -> str:
    started = next((e for e in events if isinstance(e, ev.RunStarted)), None)
    if started is None:
        return default
    return started.planner_label or started.planner


def summary_row(
    events: Sequence[ev.Event],
    *,
    run_id: str = "",
    planner: str = "",
    strategy: str = "",
    planner_label: str = "",
) -> dict[str, Any]:
    """One run of a comparison from its events (while they stream): the keys of the rows of
    ``backend.service.CompareSummary``; ``status`` is "running" until the run ends. The
    keyword arguments describe a run that has no event yet."""
    state = _fold(events)
    started = state.started
    answer = state.answer
    row: dict[str, Any] = {
        "run_id": run_id or (events[0].run_id if events else ""),
        "planner": started.planner if started else planner,
        "planner_label": planner_label_of(events, planner_label or planner),
        "strategy": started.strategy if started else strategy,
        "answer": (answer.choice or answer.text.strip() or None) if answer else None,
        "confidence": answer.confidence if answer else None,
        "guess": bool(answer and answer.guess),
        "without_tools": bool(answer and answer.without_tools),
        "status": "running",
        "calls": sum(1 for c in state.calls.values() if c.result is not None),
        "tokens": sum(
            e.usage.input_tokens + e.usage.output_tokens
            for e in events
            if isinstance(e, ev.Thought | ev.ToolResultEvent)
        ),
        "cost": sum(e.cost for e in events if isinstance(e, ev.Thought | ev.ToolResultEvent)),
        "wall_s": None,
    }
    if state.finished is not None:
        f = state.finished
        row.update(status=f.status, calls=f.calls, tokens=f.input_tokens + f.output_tokens,
                   cost=f.cost, wall_s=f.wall_s)  # fmt: skip
    elif state.failed is not None:
        kind = state.failed.kind
        row["status"] = kind if kind in ("cancelled", "interrupted") else "failed"
        if state.last_at is not None and started is not None:
            row["wall_s"] = (state.last_at - started.at).total_seconds()
    return row


def stored_summary_row(run: RunView) -> dict[str, Any]:
    """One run of a comparison from its stored totals (a reopened conversation)."""
    answer = next((e for e in run.events if isinstance(e, ev.Answer)), None)
    return stored_row(run.info, planner_label_of(run.events, run.info.planner), answer)


def compare_rows(summary: CompareSummary) -> list[list[str]]:
    """The summary table (columns ``COMPARE_COLUMNS``), one row per run; a run that did not end
    well says so in its answer cell."""
    rows = []
    for run in summary.runs:
        wall, status = run.get("wall_s"), run["status"]
        answer = run.get("answer") or ("…" if status == "running" else "(no answer)")
        if run.get("answer") and run.get("guess"):
            answer = f"best guess: {answer}"
        if run.get("answer") and run.get("without_tools"):
            answer += " (no tool called: a text-only guess)"
        if status not in ("ok", "running"):
            answer += f" ({status})"
        confidence = run.get("confidence")
        rows.append(
            [
                short_label(run.get("planner_label") or run["planner"]),
                run["strategy"],
                answer,
                f"{confidence:.2f}" if confidence is not None else "",
                str(run.get("calls") or 0),
                f"{wall:.1f} s" if wall is not None else "",
                f"${run.get('cost') or 0.0:.4f}",
                f"{run.get('tokens') or 0:,}",
            ]
        )
    return rows


def compare_headline(summary: CompareSummary) -> str:
    """One Markdown line: whether the runs agree and the majority answer."""
    n = len(summary.runs)
    running = sum(1 for r in summary.runs if r["status"] == "running")
    if running:
        return f"**{n - running} of {n} runs finished.**"
    votes = " · ".join(f"{md_escape(_clip(a, 60))}: {c}" for a, c in summary.votes.items())
    sure = _confidences(summary)
    if summary.agreement and summary.majority and summary.all_guessed:
        return (
            f"**All {n} runs guessed; they agree on a guess:** best guess "
            f"{md_escape(summary.majority)} ({sure})"
        )
    if summary.agreement and summary.majority:
        guessed = f"; {summary.guessed} of them as a best guess" if summary.guessed else ""
        extra = f" ({sure}{guessed})" if sure or guessed else ""
        return f"**All {n} runs agree:** {md_escape(summary.majority)}{extra}"
    if summary.majority:
        count = summary.votes[summary.majority]
        lead = "**All runs guessed, and disagree.**" if summary.all_guessed else (
            "**The runs disagree.**")  # fmt: skip
        return (
            f"{lead} Majority answer: **{md_escape(summary.majority)}** "
            f"({count} of {n} runs; votes {votes})"
        )
    if summary.all_guessed:
        return f"**All {n} runs guessed, and no answer has a majority** (votes {votes})"
    if not summary.votes:
        return f"**None of the {n} runs gave an answer.**"
    return f"**No majority** among {n} runs (votes {votes})"


def _confidences(summary: CompareSummary) -> str:
    """Each run's confidence, in run order ("confidence 0.25 · 0.25 · 0.31")."""
    values = [r.get("confidence") for r in summary.runs]
    if all(v is None for v in values):
        return ""
    return "confidence " + " · ".join("–" if v is None else f"{v:.2f}" for v in values)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def compare_table_md(summary: CompareSummary) -> str:
    header = "| " + " | ".join(COMPARE_COLUMNS) + " |"
    rule = "|" + "---|" * len(COMPARE_COLUMNS)
    body = [
        "| " + " | ".join(md_escape(cell) for cell in row) + " |" for row in compare_rows(summary)
    ]
    return "\n".join([header, rule, *body])


def render_compare_summary(summary: CompareSummary) -> Message:
    """The comparison's result as a chat message: the headline and a table of the runs."""
    content = (
        f"**Comparison of {len(summary.runs)} runs**\n\n{compare_headline(summary)}\n\n"
        + compare_table_md(summary)
    )
    return {"role": "assistant", "content": content}


def render_compare(runs: Sequence[RunView]) -> list[Message]:
    """Sibling runs of one question, one after another, each under a heading; then a summary."""
    messages: list[Message] = []
    for number, run in enumerate(runs, 1):
        label = contender_label(planner_label_of(run.events, run.info.planner), run.info.strategy)
        heading = f"**Run {number} of {len(runs)}: {md_escape(label)}**"
        messages.append({"role": "assistant", "content": heading})
        messages.extend(render_run_view(run))
    summary = CompareSummary.from_rows([stored_summary_row(r) for r in runs])
    messages.append(render_compare_summary(summary))
    return messages


# ---------------------------------------------------------------------------------- trace


def trace_rows(events: Sequence[ev.Event]) -> list[list[str]]:
    """One row per tool call (columns ``TRACE_COLUMNS``); a running call has empty cells."""
    state = _fold(events)
    rows = []
    for kind, key in state.order:
        if kind != "call":
            continue
        call, result = state.calls[key].call, state.calls[key].result
        if result is None:
            time = "stopped" if _stopped(state) else "no result" if state.ended else "running…"
            rows.append([call.tool, call.model or "", time, "", "", "", ""])
            continue
        tokens = f"{result.usage.input_tokens + result.usage.output_tokens:,}"
        if result.usage.cache_read_tokens:
            tokens += f" ({result.usage.cache_read_tokens:,} cached)"
        rows.append(
            [
                call.tool,
                call.model or "",
                f"{result.duration_s:.2f}",
                "yes" if result.cached else "",
                result.error or "",
                tokens,
                f"{result.cost:.4f}",
            ]
        )
    return rows


def trace_totals(events: Sequence[ev.Event]) -> str:
    """Totals of a run as one Markdown line (from ``run_finished`` when there is one)."""
    state = _fold(events)
    results = [c.result for c in state.calls.values() if c.result is not None]
    tool_time = sum(r.duration_s for r in results)
    errors = sum(1 for r in results if r.error)
    cached = sum(1 for r in results if r.cached)
    parts = [_plural(len(state.calls), "tool call")]
    if errors:
        parts.append(f"{errors} failed")
    if cached:
        parts.append(f"{cached} cached")
    parts.append(f"tool time {tool_time:.2f} s")
    if state.finished is not None:
        f = state.finished
        parts += [
            f"wall {f.wall_s:.1f} s",
            f"tokens {input_tokens_text(f.input_tokens, f.cache_read_tokens)} · "
            f"{f.output_tokens:,} out",
            f"cost ${f.cost:.4f}",
            f"status {f.status}",
        ]
    elif _stopped(state):
        parts.append("status cancelled (stopped)")
    elif state.failed is not None:
        parts.append(f"failed ({state.failed.kind})")
    elif events:
        parts.append("running")
    if state.started is not None:
        parts.append(state.started.planner_label or state.started.planner)
    return "**Totals:** " + " · ".join(md_escape(p) for p in parts)
