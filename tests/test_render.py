"""The pure rendering functions: events in, chat messages, trace and compare tables and the
timeline picture out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from agent import events as ev
from backend.service import CompareSummary, MessageView, RunView
from frontend import compare_view, render, stored_view, timeline, trace_calls
from storage.schemas import MessageInfo, RunInfo

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
CHOICES = ["Dog barking", "Rain", "Church bells", "Siren"]


class Clock:
    """Builds events of one run with seq 1, 2, 3 ... and times 0.5 s apart."""

    def __init__(self, run_id: str = "run1") -> None:
        self.run_id = run_id
        self.seq = 0

    def __call__(self, cls: type, **fields: object) -> ev.Event:
        self.seq += 1
        at = T0 + timedelta(seconds=0.5 * self.seq)
        return cls(run_id=self.run_id, seq=self.seq, at=at, **fields)


def started(e: Clock, choices: list[str] | None = None) -> ev.Event:
    return e(
        ev.RunStarted,
        question="Which sound is this?",
        choices=CHOICES if choices is None else choices,
        audio_ids=["a" * 64],
        planner="offline",
        planner_label="Offline rule planner (not an LLM)",
        tools=["sound_events"],
    )


def full_run(e: Clock) -> list[ev.Event]:
    return [
        started(e),
        e(ev.PlannerDelta, turn=1, text="It is about sounds. "),
        e(ev.PlannerDelta, turn=1, text="I will ask sound_events."),
        e(ev.Thought, turn=1, text="It is about sounds. I will ask sound_events."),
        e(
            ev.ToolCall,
            call_id="c1",
            tool="sound_events",
            arguments={"top_k": 5},
            model="yamnet-w8a8",
        ),
        e(
            ev.ToolResultEvent,
            call_id="c1",
            tool="sound_events",
            output="Top sound classes: Dog 0.91, Bark 0.85",
            duration_s=0.42,
        ),
        e(ev.PlannerDelta, turn=2, text="Dog is the strongest class."),
        e(ev.Thought, turn=2, text="Dog is the strongest class."),
        e(
            ev.Answer,
            text="Dog barking",
            choice="Dog barking",
            match_rule="exact",
            confidence=0.9,
            rationale="YAMNet hears a dog (0.91).",
        ),
        e(ev.RunFinished, calls=1, input_tokens=1200, output_tokens=34, cost=0.0, wall_s=2.5),
    ]


def panels(messages: list[dict]) -> list[dict]:
    """The collapsible panels, without the "planner working" placeholder of a live run."""
    return [
        m
        for m in messages
        if m.get("metadata", {}).get("title") and not m["metadata"]["id"].endswith(":working")
    ]


def test_tool_panel_goes_from_pending_to_done() -> None:
    e = Clock()
    events = [
        started(e),
        e(
            ev.ToolCall,
            call_id="c1",
            tool="sound_events",
            arguments={"top_k": 5},
            model="yamnet-w8a8",
        ),
    ]
    [pending] = panels(render.render_run(events))
    assert pending["metadata"]["title"] == "Tool: sound_events · yamnet-w8a8"
    assert pending["metadata"]["status"] == "pending"
    assert "duration" not in pending["metadata"]
    assert '{"top_k": 5}' in pending["content"]

    events.append(
        e(ev.ToolResultEvent, call_id="c1", tool="sound_events", output="Dog 0.91", duration_s=0.42)
    )
    [done] = panels(render.render_run(events))
    assert done["metadata"]["title"] == pending["metadata"]["title"]
    assert done["metadata"]["id"] == pending["metadata"]["id"]  # the same panel, updated
    assert done["metadata"]["status"] == "done"
    assert done["metadata"]["duration"] == 0.42
    assert "Dog 0.91" in done["content"]
    assert '{"top_k": 5}' in done["content"]


def test_reasoning_streams_into_one_panel_per_turn() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.PlannerDelta, turn=1, text="It is about "),
        e(ev.PlannerDelta, turn=1, text="sounds."),
    ]
    [reasoning] = render.render_run(events)
    assert reasoning["metadata"]["title"] == "Reasoning"
    assert reasoning["metadata"]["status"] == "pending"
    assert reasoning["content"] == "It is about sounds."

    events.append(e(ev.Thought, turn=1, text="It is about sounds."))
    [reasoning] = panels(render.render_run(events))
    assert reasoning["metadata"]["status"] == "done"
    assert reasoning["metadata"]["duration"] == 1.5  # from run_started (0.5 s) to the thought (2 s)

    events.append(e(ev.PlannerDelta, turn=2, text="Next."))
    titles = [m["metadata"]["title"] for m in panels(render.render_run(events))]
    assert titles == ["Reasoning", "Reasoning"]


def test_error_panel_is_marked_and_cached_is_shown() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.ToolCall, call_id="c1", tool="transcribe", arguments={}),
        e(ev.ToolCall, call_id="c2", tool="sound_events", arguments={}, model="yamnet-w8a8"),
        e(
            ev.ToolResultEvent,
            call_id="c1",
            tool="transcribe",
            output="",
            error="transcribe failed: RuntimeError: no model",
            duration_s=0.01,
        ),
        e(
            ev.ToolResultEvent,
            call_id="c2",
            tool="sound_events",
            output="Dog 0.91",
            cached=True,
            duration_s=0.0,
        ),
    ]
    failed, cached = panels(render.render_run(events))
    assert failed["metadata"]["title"] == "Tool: transcribe"
    assert failed["metadata"]["status"] == "done"
    assert "failed" in failed["metadata"]["log"]
    assert "**Error:**" in failed["content"]
    assert "no model" in failed["content"]
    assert "none (defaults)" in failed["content"]
    assert cached["metadata"]["log"] == "cached"
    assert "cache" in cached["content"]

    rows = trace_calls.trace_rows(events)
    assert rows[0][0] == "transcribe" and "no model" in rows[0][4]
    assert rows[1][:4] == ["sound_events", "yamnet-w8a8", "0.00", "yes"]


def test_answer_with_choice_rationale_and_footnote() -> None:
    messages = render.render_run(full_run(Clock()))
    answer = messages[-1]
    assert "metadata" not in answer  # a normal message, not a panel
    assert answer["content"].startswith("**Answer: Dog barking**")
    assert "YAMNet hears a dog" in answer["content"]
    footnote = answer["content"].splitlines()[-1]
    assert "1 tool call" in footnote
    assert "2.5 s" in footnote
    assert "1,234 tokens" in footnote
    assert "$0.0000" in footnote
    assert "Offline rule planner (not an LLM)" in footnote
    assert [m["metadata"]["title"] for m in panels(messages)] == [
        "Reasoning",
        "Tool: sound_events · yamnet-w8a8",
        "Reasoning",
    ]
    assert all(m["metadata"]["status"] == "done" for m in panels(messages))


def test_answer_without_a_matching_choice_says_so() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.Answer, text="A cat", choice=None, match_rule="none"),
        e(ev.RunFinished, calls=0, input_tokens=0, output_tokens=0, cost=0.0, wall_s=0.1),
    ]
    answer = render.render_run(events)[-1]["content"]
    assert "A cat" in answer
    assert "does not match any of the choices" in answer


def test_failed_run_shows_a_clear_error_and_closes_open_panels() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.PlannerDelta, turn=1, text="Thinking"),
        e(ev.ToolCall, call_id="c1", tool="sound_events", arguments={}),
        e(ev.RunFailed, kind="planner_error", message="The planner endpoint returned 500."),
    ]
    messages = render.render_run(events)
    assert all(m["metadata"]["status"] == "done" for m in panels(messages))
    assert "No result" in panels(messages)[-1]["content"]
    last = messages[-1]
    assert "metadata" not in last
    assert "The run failed" in last["content"]
    assert "planner\\_error" in last["content"]  # escaped for Markdown, shows as planner_error
    assert "returned 500" in last["content"]


def test_cancelled_run_says_stopped() -> None:
    e = Clock()
    events = [started(e), e(ev.RunFailed, kind="cancelled", message="Stopped by you.")]
    assert "Stopped" in render.render_run(events)[-1]["content"]


def test_waiting_for_the_planner_shows_a_working_panel() -> None:
    e = Clock()
    events = [started(e)]
    [working] = render.render_run(events)
    assert working["metadata"]["status"] == "pending"
    assert "Offline rule planner" in working["metadata"]["title"]
    events.append(e(ev.PlannerDelta, turn=1, text="Thinking"))
    assert [m["metadata"]["title"] for m in render.render_run(events)] == ["Reasoning"]
    events.append(e(ev.Thought, turn=1, text="Thinking"))
    assert render.render_run(events)[-1]["metadata"]["id"].endswith(":working")


def test_tool_output_is_shown_literally() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.ToolCall, call_id="c1", tool="transcribe", arguments={}),
        e(ev.ToolResultEvent, call_id="c1", tool="transcribe", output="# not a *heading* <b>"),
    ]
    [panel] = panels(render.render_run(events))
    assert "\\# not a \\*heading\\* \\<b\\>" in panel["content"]


def test_conversation_is_rendered_like_the_live_run() -> None:
    now = T0
    run = full_run(Clock())
    user = MessageInfo(
        id="m1",
        conversation_id="c",
        position=1,
        role="user",
        text="Which sound is this?",
        choices=CHOICES,
        audio_id="a" * 64,
        created_at=now,
    )
    reply = MessageInfo(
        id="m2",
        conversation_id="c",
        position=2,
        role="assistant",
        text="Dog barking",
        created_at=now,
    )
    info = RunInfo(
        id="run1",
        message_id="m1",
        planner="offline",
        strategy="react",
        status="ok",
        created_at=now,
    )
    views = [MessageView(user, [RunView(info, run)]), MessageView(reply)]
    messages = stored_view.render_conversation(views, {"a" * 64: "dog.wav (5.0 s)"})
    assert messages[0] == render.render_user(user.text, CHOICES, "dog.wav (5.0 s)")
    assert messages[1:] == render.render_run(run)  # the stored reply is not shown twice
    assert "- Dog barking" in messages[0]["content"]
    assert "dog.wav" in messages[0]["content"]


def test_an_earlier_run_read_without_its_trace_shows_its_answer() -> None:
    """A run read with only its summary events (``RunView.complete`` False): a closed panel
    saying its trace is not loaded, then the same answer and footnote as the whole run."""
    from backend.service import SUMMARY_EVENT_TYPES

    run = full_run(Clock())
    summary = [e for e in run if e.type in SUMMARY_EVENT_TYPES]
    info = RunInfo(
        id="run1", message_id="m1", planner="offline", strategy="react", status="ok",
        calls=1, created_at=T0,
    )  # fmt: skip
    panel, *rest = stored_view.render_run_view(RunView(info, summary, complete=False))
    assert panel["metadata"]["title"] == "Trace: 1 tool call, not loaded"
    assert panel["metadata"]["status"] == "done" and "Show all traces" in panel["content"]
    whole = render.render_run(run)
    assert rest[-1]["content"].endswith(whole[-1]["content"].rsplit("\n\n", 1)[-1])
    assert rest[-1]["content"].startswith("**Answer:")
    assert stored_view.render_run_view(RunView(info, run)) == whole


def test_trace_totals() -> None:
    totals = trace_calls.trace_totals(full_run(Clock()))
    assert "1 tool call ·" in totals
    assert "1,200 in" in totals
    assert "$0.0000" in totals
    assert "status ok" in totals


def test_model_thinking_step_verification_and_document() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.PlannerDelta, turn=1, text="Checking the tools.", kind="reasoning", step="plan 1"),
        e(ev.PlannerDelta, turn=1, text="I will compare.", step="plan 1"),
        e(
            ev.Thought,
            turn=1,
            text="I will compare.",
            reasoning="Checking the tools.",
            step="plan 1",
        ),
        e(
            ev.Verification,
            scope="tools",
            question="Is it a dog?",
            compared=["a", "b"],
            answers={"a": "dog", "b": "wolf"},
            agreement=False,
            resolution="Trust a.",
        ),
        e(ev.DocumentUpdate, iteration=1, text="A dog barks twice.", note="refined"),
    ]
    reasoning, check, document, _working = render.render_run(events)
    assert reasoning["content"] == "> Checking the tools.\n\nI will compare."
    assert reasoning["metadata"]["log"] == "turn 1 · plan 1"
    assert check["metadata"]["title"] == "Cross-check of tools: a, b"
    assert check["metadata"]["log"] == "disagree"
    assert "Is it a dog?" in check["content"] and "Trust a." in check["content"]
    assert "| source | says |" in check["content"] and "| b | wolf |" in check["content"]
    assert document["metadata"]["title"] == "Working document · iteration 1"
    assert document["content"] == "A dog barks twice."


# ------------------------------------------------------------------------------ compare


def compare_run(run_id: str, strategy: str, answer: str | None, wall_s: float = 2.0) -> list:
    e = Clock(run_id)
    events = [
        e(
            ev.RunStarted,
            question="Which sound is this?",
            choices=CHOICES,
            audio_ids=["a" * 64],
            planner="offline",
            planner_label="Offline rule planner (not an LLM)",
            tools=["sound_events"],
            strategy=strategy,
        ),
        e(ev.ToolCall, call_id="c1", tool="sound_events", arguments={}),
        e(ev.ToolResultEvent, call_id="c1", tool="sound_events", output="Dog 0.9"),
    ]
    if answer is None:
        events.append(e(ev.RunFailed, kind="planner_error", message="It broke."))
        return events
    events += [
        e(ev.Answer, text=answer, choice=answer, rationale="Because."),
        e(ev.RunFinished, calls=1, input_tokens=100, output_tokens=20, cost=0.001,
          wall_s=wall_s),
    ]  # fmt: skip
    return events


def run_view(run_id: str, strategy: str, events: list) -> RunView:
    answer = next((x for x in events if isinstance(x, ev.Answer)), None)
    finished = next((x for x in events if isinstance(x, ev.RunFinished)), None)
    info = RunInfo(
        id=run_id,
        message_id="m1",
        group_id="g",
        planner="offline",
        strategy=strategy,
        status="ok" if finished else "failed",
        answer_text=answer.text if answer else None,
        answer_choice=answer.choice if answer else None,
        calls=finished.calls if finished else 1,
        input_tokens=finished.input_tokens if finished else 0,
        output_tokens=finished.output_tokens if finished else 0,
        cost=finished.cost if finished else 0.0,
        wall_s=finished.wall_s if finished else None,
        created_at=T0,
    )
    return RunView(info, events)


def test_summary_row_while_streaming_and_at_the_end() -> None:
    events = compare_run("r1", "react", "Dog barking", wall_s=3.25)
    running = compare_view.summary_row(events[:2])
    assert running["status"] == "running" and running["answer"] is None
    assert running["strategy"] == "react" and running["calls"] == 0
    done = compare_view.summary_row(events)
    assert done == {
        "run_id": "r1",
        "planner": "offline",
        "planner_label": "Offline rule planner (not an LLM)",
        "strategy": "react",
        "answer": "Dog barking",
        "confidence": None,
        "guess": False,
        "without_tools": False,
        "status": "ok",
        "calls": 1,
        "tokens": 120,
        "cost": 0.001,
        "wall_s": 3.25,
    }
    failed = compare_view.summary_row(compare_run("r2", "evidence", None))
    assert failed["status"] == "failed" and failed["answer"] is None
    # before its first event a run is known only by what was asked for
    waiting = compare_view.summary_row([], run_id="r3", planner="gpt", strategy="refine")
    assert waiting["planner"] == "gpt"


def test_compare_headline_and_rows() -> None:
    def summary(*answers: str | None) -> CompareSummary:
        rows = [
            compare_view.summary_row(compare_run(f"r{i}", s, a))
            for i, (s, a) in enumerate(zip(["react", "evidence", "refine"], answers, strict=False))
        ]
        return CompareSummary.from_rows(rows)

    agree = summary("Dog barking", "Dog barking")
    assert compare_view.compare_headline(agree) == "**All 2 runs agree:** Dog barking"
    majority = compare_view.compare_headline(summary("Dog barking", "Rain", "Dog barking"))
    assert "disagree" in majority and "**Dog barking** (2 of 3 runs" in majority
    split = compare_view.compare_headline(summary("Dog barking", "Rain"))
    assert "No majority" in split and "Rain: 1" in split
    assert "None of the 2 runs" in compare_view.compare_headline(summary(None, None))

    running = CompareSummary.from_rows(
        [compare_view.summary_row(compare_run("r1", "react", "Rain")), compare_view.summary_row([])]
    )
    assert compare_view.compare_headline(running) == "**1 of 2 runs finished.**"

    rows = compare_view.compare_rows(summary("Dog barking", None))
    assert rows[0] == ["Offline rule planner", "react", "Dog barking", "", "1", "2.0 s",
                       "$0.0010", "120"]  # fmt: skip
    assert rows[1][2] == "(no answer) (failed)" and rows[1][5].endswith(" s")
    table = compare_view.compare_table_md(summary("Dog | barking", "Rain"))
    assert table.splitlines()[0] == "| " + " | ".join(compare_view.COMPARE_COLUMNS) + " |"
    assert "Dog \\| barking" in table  # a pipe in an answer does not break the table


def test_compare_summary_of_guesses_says_so_with_each_confidence() -> None:
    def guessed(run_id: str, strategy: str, confidence: float, guess: bool = True) -> list:
        events = compare_run(run_id, strategy, "siren")
        answer = next(i for i, x in enumerate(events) if isinstance(x, ev.Answer))
        update = {"confidence": confidence, "guess": guess}
        events[answer] = events[answer].model_copy(update=update)
        return events

    all_guessed = CompareSummary.from_rows(
        [compare_view.summary_row(guessed(f"r{i}", "react", 0.25)) for i in range(4)]
    )
    headline = compare_view.compare_headline(all_guessed)
    assert headline.startswith("**All 4 runs guessed; they agree on a guess:** best guess siren")
    assert "confidence 0.25 · 0.25 · 0.25 · 0.25" in headline and "agree:**" not in headline
    row = compare_view.compare_rows(all_guessed)[0]
    assert row[2:4] == ["best guess: siren", "0.25"]
    assert compare_view.COMPARE_COLUMNS[2:4] == ["answer", "confidence"]
    mixed = CompareSummary.from_rows(
        [compare_view.summary_row(guessed("r1", "react", 0.81, guess=False)),
         compare_view.summary_row(guessed("r2", "evidence", 0.3))]
    )  # fmt: skip
    assert compare_view.compare_headline(mixed) == (
        "**All 2 runs agree:** siren (confidence 0.81 · 0.30; 1 of them as a best guess)"
    )
    assert mixed.headline == (
        "siren (all 2 runs agree; 1 of them as a best guess, confidence 0.30-0.81)"
    )
    assert all_guessed.public()["all_guessed"] is True


def test_a_compare_run_that_called_no_tool_says_so_in_its_row() -> None:
    events = compare_run("r1", "react", "siren")
    answer = next(i for i, x in enumerate(events) if isinstance(x, ev.Answer))
    events[answer] = events[answer].model_copy(update={"without_tools": True})
    live = compare_view.summary_row(events)
    assert live["without_tools"] is True
    row = compare_view.compare_rows(CompareSummary.from_rows([live]))[0]
    assert row[2] == "siren (no tool called: a text-only guess)"
    plain = compare_view.compare_rows(CompareSummary.from_rows([compare_view.summary_row(
        compare_run("r2", "react", "siren"))]))[0]  # fmt: skip
    assert plain[2] == "siren"


def test_a_guessed_answer_in_words_reads_best_guess() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.Answer, text="No: nothing in it sounds like hen.", confidence=0.3, guess=True),
        e(ev.RunFinished, calls=0, input_tokens=0, output_tokens=0, cost=0.0, wall_s=0.1),
    ]
    line = render.render_run(events)[-1]["content"].split("\n\n")[0]
    assert line == "**Best guess: No: nothing in it sounds like hen.** · confidence 0.30"


def test_reopened_compare_message_shows_every_run_and_the_summary() -> None:
    first = compare_run("r1", "react", "Dog barking")
    second = compare_run("r2", "evidence", "Rain")
    user = MessageInfo(
        id="m1", conversation_id="c", position=1, role="user", text="Which sound is this?",
        choices=CHOICES, audio_id="a" * 64, created_at=T0,
    )  # fmt: skip
    headline = MessageInfo(
        id="m2", conversation_id="c", position=2, role="assistant",
        text="No majority among 2 planners", created_at=T0,
    )  # fmt: skip
    views = [
        MessageView(user, [run_view("r1", "react", first), run_view("r2", "evidence", second)]),
        MessageView(headline),
    ]
    messages = stored_view.render_conversation(views)
    contents = [m["content"] for m in messages]
    assert contents[1] == "**Run 1 of 2: Offline rule planner · react**"
    heading_2 = contents.index("**Run 2 of 2: Offline rule planner · evidence**")
    assert messages[2:heading_2] == render.render_run(first)
    summary = messages[-1]["content"]
    assert summary.startswith("**Comparison of 2 runs**")
    assert "No majority" in summary and "| react | Dog barking |" in summary
    assert "| evidence | Rain |" in summary
    assert "No majority among 2 planners" not in contents  # the stored headline, not twice


def test_answer_tag_is_not_repeated_in_the_rationale() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.Answer, text="Dog barking", choice="Dog barking",
          rationale="The model hears a dog. <answer>Dog barking</answer>"),
        e(ev.RunFinished, calls=0, input_tokens=9, output_tokens=3, cost=0.0, wall_s=0.2),
    ]  # fmt: skip
    content = render.render_run(events)[-1]["content"]
    assert "The model hears a dog." in content and "answer\\>" not in content


# ------------------------------------------------------------------------------ timeline


def test_tracks_from_events_group_spans_by_tool() -> None:
    e = Clock()
    spans = [{"start": 0.5, "end": 1.0, "label": "Dog"}, {"start": 2, "end": 1.5, "label": "x"}]
    events = [
        started(e),
        e(ev.ToolResultEvent, call_id="c1", tool="sound_events", output="",
          data={"spans": spans}),
        e(ev.ToolResultEvent, call_id="c2", tool="speech_activity", output="",
          data={"spans": [{"start": 0.1, "end": 0.2}, {"start": "bad"}]}),
        e(ev.ToolResultEvent, call_id="c3", tool="sound_events", output="",
          data={"spans": spans[:1]}),  # a repeated span is drawn once
        e(ev.ToolResultEvent, call_id="c4", tool="transcribe", output="", error="failed",
          data={"spans": spans}),  # a failed call reports nothing
        e(ev.ToolResultEvent, call_id="c5", tool="signal_stats", output="", data={}),
    ]  # fmt: skip
    tracks = timeline.tracks_from_events(events)
    assert [t.tool for t in tracks] == ["sound_events", "speech_activity"]
    assert tracks[0].spans == [timeline.Span(0.5, 1.0, "Dog"), timeline.Span(1.5, 2.0, "x")]
    assert tracks[1].spans == [timeline.Span(0.1, 0.2, "")]


def test_overlapping_spans_are_stacked() -> None:
    spans = [timeline.Span(0, 2), timeline.Span(0.5, 3), timeline.Span(1, 4), timeline.Span(2.5, 5)]
    assert timeline.subrows(spans) == [0, 1, 2, 0]
    many = [timeline.Span(0, 10)] * 6  # beyond MAX_SUBROWS they share the last row
    assert timeline.subrows(many) == [0, 1, 2, 3, 3, 3]


def test_timeline_figure_has_spans_with_hover_and_click_times() -> None:
    rate = 16_000
    t = np.arange(4 * rate) / rate
    samples = np.where((t > 1) & (t < 2), 0.5 * np.sin(2 * np.pi * 1000 * t), 0.0)
    tracks = [
        timeline.Track("speech_activity", [timeline.Span(1.0, 2.0, "speech")]),
        timeline.Track("my_tool", [timeline.Span(0.0, 0.5, "a"), timeline.Span(0.2, 3.0, "b")]),
    ]
    own = {"speech_activity": "#23702a", "sound_events": "#1f5fa8"}  # the catalogue's
    fig = timeline.timeline_figure(samples, rate, tracks, title="test <b>", colours=own)
    bars = {trace.name: trace for trace in fig.data if trace.type == "bar"}
    assert list(bars) == ["speech_activity", "my_tool"]
    speech = bars["speech_activity"]
    assert speech.marker.color == own["speech_activity"]
    assert list(speech.base) == [1.0] and list(speech.x) == [1.0]
    assert speech.customdata[0][0] == 1.0  # where a click starts playing
    assert "customdata[2]" in speech.hovertemplate and "speech_activity" in speech.hovertemplate
    colours = timeline.tool_colours(tracks, own)
    assert colours["my_tool"] not in own.values()  # a tool without a colour: a free one
    assert bars["my_tool"].marker.color == colours["my_tool"]
    # Overlapping spans of one tool in two sub-rows of its own lane, below the first lane.
    assert list(bars["my_tool"].y) == [-1, -2]
    assert fig.layout.title.text == "test &lt;b&gt;"
    # The waveform follows the sound; the spectrogram is loudest at 1 kHz while the tone sounds.
    wave = next(tr for tr in fig.data if tr.name == "waveform")
    highs = np.array(wave.y)
    times = np.array(wave.x)
    assert highs[(times > 1.2) & (times < 1.8)].min() > 0.5
    assert abs(highs[times > 2.5]).max() < 0.01
    spec = next(tr for tr in fig.data if tr.type == "heatmap")
    z = np.array(spec.z)
    column = int(np.argmin(abs(np.array(spec.x) - 1.5)))
    assert abs(spec.y[int(np.argmax(z[:, column]))] - 1.0) < 0.2


def test_transcript_segments_are_spans_with_their_words() -> None:
    e = Clock()
    words = "the quick brown fox jumps over the lazy dog near the river bank today"
    segments = [
        {"start": 0.0, "end": 2.0, "text": words},
        {"start": 2.5, "end": 3.0, "text": "yes"},
    ]
    events = [
        started(e),
        e(ev.ToolResultEvent, call_id="c1", tool="transcribe", output="",
          data={"segments": segments, "spans": [{"start": 0, "end": 3, "label": "x"}]}),
    ]  # fmt: skip
    (track,) = timeline.tracks_from_events(events)
    assert [(s.start, s.end) for s in track.spans] == [(0.0, 2.0), (2.5, 3.0)]
    assert track.spans[0].text == words and track.spans[0].label.endswith("…")
    fig = timeline.timeline_figure(None, 16_000, [track])
    bar = fig.data[0]
    assert "quick brown fox" in bar.customdata[0][3]


def test_timeline_without_spans_or_audio_and_for_long_audio() -> None:
    fig = timeline.timeline_figure(np.zeros(0, np.float32), 16_000, [])
    assert "No tool reported" in fig.layout.annotations[0].text
    long = np.random.default_rng(0).normal(0, 0.1, 16_000 * 600).astype(np.float32)
    spans = [timeline.Span(i, i + 0.5, f"s{i}") for i in range(0, 600, 3)]
    fig = timeline.timeline_figure(long, 16_000, [timeline.Track("transcribe", spans)])
    wave = next(tr for tr in fig.data if tr.name == "waveform")
    assert len(wave.x) == timeline.WAVE_POINTS  # the figure does not grow with the audio
    assert len(fig.to_json()) < 600_000


def test_tick_step() -> None:
    assert timeline.tick_step(5.0) == 0.5
    assert timeline.tick_step(30.0) == 5
    assert timeline.tick_step(1800.0) == 300


def test_a_stopped_run_is_summarised_as_cancelled() -> None:
    events = compare_run("r1", "react", None)
    view = run_view("r1", "react", events)
    view.info.status = "cancelled"  # as storage records a stopped run
    assert compare_view.stored_summary_row(view)["status"] == "cancelled"
    long = "a very long free-text answer " * 5
    split = CompareSummary.from_rows(
        [compare_view.summary_row(compare_run("r1", "react", long)),
         compare_view.summary_row(compare_run("r2", "evidence", "Rain"))]
    )  # fmt: skip
    assert "…: 1" in compare_view.compare_headline(split)  # long answers are clipped in the votes


def test_compare_pairs_and_the_unavailable_list() -> None:
    from frontend import catalogue as ui

    pairs = ui.contenders(["offline", "gpt"], ["react", "evidence", "refine"])
    assert pairs == [("offline", "react"), ("offline", "evidence"), ("offline", "refine"),
                     ("gpt", "react")]  # fmt: skip
    assert ui.contenders(["offline"], []) == []
    text = ui.unavailable_table(
        {
            "planners": [{"name": "gpt", "label": "GPT-5", "available": False,
                          "reason": "set OPENAI_API_KEY to use it"}],
            "tools": [{"name": "clip", "label": "", "available": True, "reason": None}],
            "presets": [{"name": "closed", "label": "Closed", "available": False,
                         "reason": "gpt: set OPENAI_API_KEY to use it"}],
        }
    )  # fmt: skip
    assert "**Planners**\n\n- **GPT-5**: set OPENAI\\_API\\_KEY to use it" in text
    assert "**Presets**" in text and "**Tools**" not in text
    assert "available" in ui.unavailable_table({"planners": [], "tools": []})


def test_answer_line_shows_confidence_and_best_guess() -> None:
    messages = render.render_run(full_run(Clock()))
    first_line = messages[-1]["content"].split("\n\n")[0]
    assert first_line == "**Answer: Dog barking** · confidence 0.90"
    e = Clock()
    events = [
        started(e),
        e(ev.Answer, text="Rain", choice="Rain", confidence=0.3, guess=True),
        e(ev.RunFinished, calls=0, input_tokens=0, output_tokens=0, cost=0.0, wall_s=0.1),
    ]
    line = render.render_run(events)[-1]["content"].split("\n\n")[0]
    assert line == "**Can't tell; best guess: Rain** · confidence 0.30"
    # an answer in words that says it cannot tell is not called a guess of something
    cannot = [started(e), e(ev.Answer, text="I can't tell: none of the tools measures accent.",
              confidence=0.5, guess=True), events[-1]]  # fmt: skip
    line = render.render_run(cannot)[-1]["content"].split("\n\n")[0]
    assert line.startswith("**I can't tell: none of the tools measures accent.**"), line
    assert "confidence" not in render.render_run(events)[-1]["content"].splitlines()[-1]


def test_rationale_that_repeats_the_last_reasoning_panel_is_left_out() -> None:
    e = Clock()
    said = "Dog is the strongest class (0.91), so the answer is Dog barking."
    events = [
        started(e),
        e(ev.Thought, turn=1, text=f"{said}\n<answer>Dog barking</answer>"),
        e(ev.Answer, text="Dog barking", choice="Dog barking", rationale=said),
        e(ev.RunFinished, calls=0, input_tokens=0, output_tokens=0, cost=0.0, wall_s=0.1),
    ]
    messages = render.render_run(events)
    assert said in messages[0]["content"].replace("\\", "")  # the panel keeps it
    assert "strongest class" not in messages[-1]["content"]  # the answer does not repeat it


def test_degraded_run_says_which_tool_failed() -> None:
    e = Clock()
    events = [
        started(e),
        e(ev.Answer, text="Dog barking", choice="Dog barking"),
        e(
            ev.RunFinished, calls=2, input_tokens=0, output_tokens=0, cost=0.0, wall_s=1.0,
            status="degraded", degraded_tools=["transcribe"],
        ),
    ]  # fmt: skip
    content = render.render_run(events)[-1]["content"]
    assert "**Tools failed:** transcribe" in content
    assert "degraded: transcribe" in content.splitlines()[-1]
