"""The tabs over the composer: the chat (with the examples of the first screen), compare
mode's columns, and the trace of an answer (its recording, timeline and table of calls)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from frontend import compare_view
from frontend.catalogue import Catalogue
from frontend.examples import EXAMPLES
from frontend.trace_html import trace_table

FORMATS = "wav, mp3, ogg, flac, m4a, webm"
COMPARE_SLOTS = 4
PLACEHOLDER = (
    "### Ask about a recording\n"
    f"Attach one ({FORMATS}) or record with the microphone, then type a question. "
    "Or try an example:"
)


@dataclass
class ComparePanel:
    planners: gr.Dropdown
    strategies: gr.Dropdown
    note: gr.Markdown
    summary: gr.Markdown
    rows: list[gr.Row]
    headings: list[gr.Markdown]
    chats: list[gr.Chatbot]
    plots: list[gr.Plot]

    def outputs(self) -> list[gr.components.Component]:
        return [*self.rows, *self.headings, *self.chats, *self.plots, self.summary]


@dataclass
class TracePanel:
    run_select: gr.Dropdown
    player: gr.HTML
    timeline: gr.Plot
    totals: gr.Markdown
    table: gr.HTML

    def outputs(self) -> list[gr.components.Component]:
        return [self.player, self.timeline, self.totals, self.table]


def build_compare(catalogue: Catalogue) -> ComparePanel:
    with gr.Row(equal_height=True, elem_id="compare-pickers"):
        planners = gr.Dropdown(
            choices=[
                (compare_view.short_label(p["label"] or p["name"]), p["name"])
                for p in catalogue.available_planners
            ],
            value=[catalogue.default_planner] if catalogue.default_planner else [],
            multiselect=True,
            label="Planners to compare",
            elem_id="compare-planners",
        )
        strategies = gr.Dropdown(
            choices=[(name, name) for name in catalogue.strategy_names],
            value=catalogue.default_compare_strategies,
            multiselect=True,
            label="Strategies to compare",
            elem_id="compare-strategies",
        )
    note = gr.Markdown(
        catalogue.compare_note(planners.value, catalogue.default_compare_strategies),  # type: ignore[arg-type]
        elem_id="compare-note",
    )
    summary = gr.Markdown("", elem_id="compare-summary")  # the result first, the columns under it
    rows, headings, chats, plots = [], [], [], []
    for row_index in range(COMPARE_SLOTS // 2):
        with gr.Row(
            equal_height=False, visible=row_index == 0, elem_classes=["compare-row"]
        ) as row:
            rows.append(row)
            for column in range(2):
                index = row_index * 2 + column + 1
                with gr.Column(min_width=260):
                    headings.append(
                        gr.Markdown(
                            "",
                            visible=False,
                            elem_id=f"compare-heading-{index}",
                            elem_classes=["compare-heading"],
                        )
                    )
                    chats.append(
                        gr.Chatbot(
                            label=f"Run {index}",
                            show_label=False,
                            height=440,
                            visible=False,
                            elem_id=f"compare-run-{index}",
                            elem_classes=["compare-column"],
                            layout="panel",
                            feedback_options=None,
                            buttons=["copy"],
                        )
                    )
                    plots.append(
                        gr.Plot(
                            value=None,
                            visible=False,
                            show_label=False,
                            label=f"Timeline of run {index}",
                            elem_id=f"compare-timeline-{index}",
                            elem_classes=["timeline-plot"],
                        )
                    )
    return ComparePanel(planners, strategies, note, summary, rows, headings, chats, plots)


def build_trace() -> TracePanel:
    run_select = gr.Dropdown(choices=[], value=None, label="Run", elem_id="run-select")
    player = gr.HTML("", elem_id="trace-player")
    timeline = gr.Plot(
        value=None,
        show_label=False,
        elem_id="timeline",
        elem_classes=["timeline-plot"],
        label="Timeline: waveform, spectrogram and the time spans the tools reported",
    )
    gr.Markdown(
        "Hover a span for what the tool said; click to play the recording from there; drag "
        "to zoom in (double-click shows all). A line follows the recording as it plays.",
        elem_id="timeline-help",
    )
    totals = gr.Markdown("", elem_id="trace-totals")
    table = gr.HTML(trace_table([]), elem_id="trace-table")
    return TracePanel(run_select, player, timeline, totals, table)


def build_tabs(
    catalogue: Catalogue, more_tabs: Callable[[gr.Tabs], None] | None = None
) -> tuple[gr.Tabs, list[gr.Tab], gr.Chatbot, gr.Button, ComparePanel, TracePanel]:
    """The tabs over the composer; ``more_tabs`` builds further ones inside them (the
    Benchmarks tab: frontend/benchmarks_tab.py)."""
    with gr.Tabs(selected="chat", elem_id="main-tabs") as tabs:
        with gr.Tab("Chat", id="chat", elem_id="chat-tab") as chat_tab:
            chatbot = gr.Chatbot(
                label="Conversation",
                show_label=False,
                elem_id="chat",
                placeholder=PLACEHOLDER,
                examples=[e.card() for e in EXAMPLES],
                feedback_options=None,
                buttons=["copy", "copy_all"],
                autoscroll=True,
            )
            full_btn = gr.Button("Show all traces", size="sm", elem_id="show-traces", visible=False)
        with gr.Tab("Compare", id="compare", elem_id="compare-tab") as compare_tab:
            compare = build_compare(catalogue)
        with gr.Tab("Trace", id="trace", elem_id="trace-tab") as trace_tab:
            trace = build_trace()
        if more_tabs is not None:
            more_tabs(tabs)
    return tabs, [chat_tab, compare_tab, trace_tab], chatbot, full_btn, compare, trace
