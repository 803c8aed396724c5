"""The pure rendering functions: events in, chat messages and trace rows out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent import events as ev
from backend.service import MessageView, RunView
from frontend import render
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
    assert pending["metadata"]["title"] == "🔧 sound_events · yamnet-w8a8"
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
    assert reasoning["metadata"]["title"] == "💭 Reasoning"
    assert reasoning["metadata"]["status"] == "pending"
    assert reasoning["content"] == "It is about sounds."

    events.append(e(ev.Thought, turn=1, text="It is about sounds."))
    [reasoning] = panels(render.render_run(events))
    assert reasoning["metadata"]["status"] == "done"
    assert reasoning["metadata"]["duration"] == 1.5  # from run_started (0.5 s) to the thought (2 s)

    events.append(e(ev.PlannerDelta, turn=2, text="Next."))
    titles = [m["metadata"]["title"] for m in panels(render.render_run(events))]
    assert titles == ["💭 Reasoning", "💭 Reasoning"]


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
    assert failed["metadata"]["title"] == "🔧 transcribe"
    assert failed["metadata"]["status"] == "done"
    assert "failed" in failed["metadata"]["log"]
    assert "**Error:**" in failed["content"]
    assert "no model" in failed["content"]
    assert "none (defaults)" in failed["content"]
    assert cached["metadata"]["log"] == "cached"
    assert "cache" in cached["content"]

    rows = render.trace_rows(events)
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
        "💭 Reasoning",
        "🔧 sound_events · yamnet-w8a8",
        "💭 Reasoning",
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
    assert [m["metadata"]["title"] for m in render.render_run(events)] == ["💭 Reasoning"]
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
    messages = render.render_conversation(views, {"a" * 64: "dog.wav (5.0 s)"})
    assert messages[0] == render.render_user(user.text, CHOICES, "dog.wav (5.0 s)")
    assert messages[1:] == render.render_run(run)  # the stored reply is not shown twice
    assert "- Dog barking" in messages[0]["content"]
    assert "dog.wav" in messages[0]["content"]


def test_trace_totals() -> None:
    totals = render.trace_totals(full_run(Clock()))
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
    assert check["metadata"]["title"] == "⚖️ Cross-check of tools: a, b"
    assert check["metadata"]["log"] == "disagree"
    assert "Is it a dog?" in check["content"] and "Trust a." in check["content"]
    assert document["metadata"]["title"] == "📝 Working document · iteration 1"
    assert document["content"] == "A dog barks twice."
