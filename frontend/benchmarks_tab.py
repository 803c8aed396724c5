"""The Benchmarks tab: benchmark runs, attributions and ablations stored by ``python -m bench``.

Pick a benchmark run: its configurations (accuracy, cost, time), the analysis' own figure
(Shapley values of the tools, or the ablation over seeds with the text-only baselines) and
accuracy against cost with the Pareto front. Click a configuration's point (or pick it from
the list) to see its questions; click a question to open its trace, drawn as the chat draws
any run. A report's link (``/?benchmark=ID&run=RUN``) opens here on that trace.

A viewer sees their own benchmark runs and those of the CLI's default owner (``local``).
Plotly's clicks reach Python through the small HTML element under the figures, whose script
hooks ``plotly_click`` and triggers its own click event with the configuration's key.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import plotly.graph_objects as go

from backend.access.auth import owner_from_request
from backend.benchmarks import BenchmarkView, BenchRunInfo, ConfigSummary, ResultRow, summarise
from backend.benchmarks.analysis import analysis_of, cost_points
from backend.service import AgentService
from frontend import answer_text, render, trace_calls

TAB_ID = "benchmarks"
QUESTION_COLUMNS = ["question", "answer", "prediction", "score", "guess", "tool calls", "s"]
CLICK_JS = """
const hook = () => document.querySelectorAll(".bench-plot .js-plotly-plot").forEach((plot) => {
  if (plot.dataset.benchClicks || typeof plot.on !== "function") return;
  plot.dataset.benchClicks = "1";
  plot.on("plotly_click", (data) => {
    const point = data && data.points && data.points[0];
    const key = point && (Array.isArray(point.customdata) ? point.customdata[0] : point.customdata);
    if (key) trigger("click", { config: String(key) });
  });
});
new MutationObserver(hook).observe(document.body, { childList: true, subtree: true });
setInterval(hook, 1000);  // a figure drawn again without a change of the page's elements
hook();
"""
EMPTY = (
    "No benchmark runs yet. Make one with `python -m bench run --questions FILE` (or "
    "`python -m bench analyse ...`) against this app's data folder; see docs/bench.md."
)
INK = "#1f2937"
BAR = "#1f5fa8"
FRONT = "#b3261e"


def _choice(info: BenchRunInfo) -> tuple[str, str]:
    state = "" if info.finished_at else " (unfinished)"
    return (f"{info.name} · {info.kind} · {info.created_at:%Y-%m-%d %H:%M}{state}", info.id)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def summary_markdown(info: BenchRunInfo, configs: list[ConfigSummary]) -> str:
    lines = [
        f"**{answer_text.md_escape(info.name)}** · `{info.benchmark}` · {len(configs)} "
        f"configuration(s) · {sum(c.done for c in configs)} of {info.total} runs done",
        "",
        "| configuration | done | accuracy | $ / question | calls | s / question |",
        "|---|---|---|---|---|---|",
    ]
    for c in configs[:40]:
        lines.append(
            f"| {answer_text.md_escape(c.label)} | {c.done}/{c.planned} | {_pct(c.accuracy)} "
            f"| {c.mean_cost:.5f} | {c.mean_calls:.1f} | {c.mean_wall_s:.2f} |"
        )
    if len(configs) > 40:
        lines.append(f"| … {len(configs) - 40} more: pick one in the list below | | | | | |")
    return "\n".join(lines)


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(
        title={"text": title, "font": {"size": 14}},
        xaxis_title=x,
        yaxis_title=y,
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        height=380,
        font={"color": INK},
        showlegend=True,
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def pareto_figure(configs: list[ConfigSummary]) -> go.Figure:
    """Accuracy against cost (or time), one clickable point per configuration."""
    points = cost_points(configs)
    xs = [p[0] for p in points["points"]]
    ys = [p[1] for p in points["points"]]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="markers",
            name="configuration",
            text=points["labels"],
            customdata=[[k] for k in points["keys"]],
            marker={"size": 11, "color": BAR},
            hovertemplate="%{text}<br>%{y:.1f} %<br>%{x:.4g}<extra>click: its questions</extra>",
        )
    )
    front = points["front"]
    fig.add_trace(
        go.Scatter(
            x=[xs[i] for i in front],
            y=[ys[i] for i in front],
            mode="lines+markers",
            name="Pareto front",
            line={"color": FRONT},
            marker={"color": FRONT, "size": 7},
            customdata=[[points["keys"][i]] for i in front],
            text=[points["labels"][i] for i in front],
            hovertemplate="%{text}<br>%{y:.1f} %<extra>Pareto front</extra>",
        )
    )
    return _layout(fig, "Accuracy against cost", points["axis"], "accuracy (%)")


def analysis_figure(info: BenchRunInfo, rows: list[ResultRow], configs: list[ConfigSummary]):
    """The analysis' own figure: Shapley values, the ablation, or accuracy per group."""
    result = analysis_of(info, rows)
    if info.kind == "attribution" and result.get("complete"):
        items = sorted(result["shapley"].items(), key=lambda kv: kv[1]["value"])
        fig = go.Figure(
            go.Bar(
                x=[100 * v["value"] for _, v in items],
                y=[k for k, _ in items],
                orientation="h",
                error_x={"type": "data", "array": [196 * v["se"] for _, v in items]},
                marker={"color": BAR},
                name="Shapley value",
                hovertemplate="%{y}: %{x:.2f} points<extra>95 % interval</extra>",
            )
        )
        return _layout(fig, "Shapley value of each tool", "accuracy points", "")
    if info.kind == "ablation" and result.get("configurations"):
        first_key = {}
        for c in configs:
            group = (c.config["planner"], c.config["strategy"], not c.config.get("tools"))
            first_key.setdefault(group, c.key)
        tooled = [
            r for r in result["configurations"] if not r["text_only"] and r["mean"] is not None
        ]
        labels = [f"{r['planner']} · {r['strategy']}" for r in tooled]
        fig = go.Figure(
            go.Bar(
                x=labels,
                y=[r["mean"] for r in tooled],
                name="mean over seeds",
                error_y={"type": "data", "array": [r["sd"] for r in tooled]},
                customdata=[[first_key.get((r["planner"], r["strategy"], False))] for r in tooled],
                marker={"color": BAR},
            )
        )
        for r in result["configurations"]:
            if r["text_only"] and r["mean"] is not None:
                fig.add_hline(
                    y=r["mean"],
                    line_dash="dash",
                    line_color=INK,
                    annotation_text=f"{r['planner']}: text only",
                )
        return _layout(fig, "Ablation: mean ± sd over seeds", "", "accuracy (%)")
    fig = go.Figure(
        go.Bar(
            x=[c.label for c in configs],
            y=[100 * (c.accuracy or 0) for c in configs],
            customdata=[[c.key] for c in configs],
            marker={"color": BAR},
            name="accuracy",
        )
    )
    return _layout(fig, "Accuracy per configuration", "", "accuracy (%)")


def question_rows(rows: list[ResultRow], config_key: str | None) -> list[ResultRow]:
    return [r for r in rows if r.config_key == config_key]


def question_table(rows: list[ResultRow]) -> list[list[Any]]:
    table = []
    for row in rows:
        score = row.score or {}
        facts = score.get("facts") or {}
        value = score.get("value")
        mark = (
            "not scored"
            if row.score and value is None
            else ""
            if value is None
            else ("right" if value == 1 else "wrong" if value == 0 else f"{value:.2f}")
        )
        table.append(
            [
                row.item_id,
                row.labels.get("answer", ""),
                facts.get("prediction", ""),
                mark,
                "yes" if facts.get("guess") else "",
                facts.get("tool_calls", ""),
                round(float(facts.get("wall_s") or 0), 2),
            ]
        )
    return table


class BenchmarksTab:
    """The handlers; ``c`` holds the components once built."""

    def __init__(self, service: AgentService) -> None:
        self.view = BenchmarkView(service)
        self.c: dict[str, Any] = {}

    def listing(self, selected: str | None = None, request: gr.Request = None) -> dict[Any, Any]:
        runs = self.view.visible(owner_from_request(request))
        note = "" if runs else EMPTY
        value = selected if selected in {r.id for r in runs} else None
        return {
            self.c["pick"]: gr.update(choices=[_choice(r) for r in runs], value=value),
            self.c["note"]: note,
        }

    def open(self, bench_id: str | None, request: gr.Request) -> dict[Any, Any]:
        c = self.c
        owner = owner_from_request(request)
        info = self.view.get(bench_id, owner) if bench_id else None
        if info is None:
            return {
                c["summary"]: "",
                c["pareto"]: None,
                c["analysis"]: None,
                c["config"]: gr.update(choices=[], value=None),
                c["questions"]: [],
                c["shown"]: [],
                c["trace"]: [],
                c["totals"]: "",
            }
        rows = self.view.records.results(info.id)
        configs = summarise(rows)
        return {
            c["summary"]: summary_markdown(info, configs),
            c["pareto"]: pareto_figure(configs),
            c["analysis"]: analysis_figure(info, rows, configs),
            c["config"]: gr.update(choices=[(s.label, s.key) for s in configs], value=None),
            c["questions"]: [],
            c["shown"]: [],
            c["trace"]: [],
            c["totals"]: "",
        }

    def questions(self, bench_id: str | None, config_key: str | None, request: gr.Request):
        owner = owner_from_request(request)
        rows = question_rows(self.view.rows(bench_id, owner), config_key) if bench_id else []
        return question_table(rows), [r.run_id for r in rows]

    def clicked(self, bench_id: str | None, request: gr.Request, evt: gr.EventData):
        key = (getattr(evt, "_data", None) or {}).get("config")
        table, shown = self.questions(bench_id, key, request)
        return gr.update(value=key), table, shown

    def trace(
        self, bench_id: str | None, shown: list[str | None], request: gr.Request, evt: gr.SelectData
    ):
        index = evt.index[0] if isinstance(evt.index, list | tuple) else evt.index
        run_id = shown[index] if isinstance(index, int) and index < len(shown) else None
        return self.show_trace(bench_id, run_id, request)

    def show_trace(self, bench_id: str | None, run_id: str | None, request: gr.Request):
        if not bench_id or not run_id:
            return [], "This question has no stored run."
        events = self.view.trace(bench_id, run_id, owner_from_request(request))
        if not events:
            return [], "This trace is not available."
        return render.render_run(events), trace_calls.trace_totals(events)

    def link_tab(self, request: gr.Request) -> dict[Any, Any]:
        """``/?benchmark=ID&run=RUN``, first step: this tab, its list of benchmark runs."""
        bench_id, _ = _link(request)
        if not bench_id:
            return {self.c["note"]: gr.update()}
        return {**self.listing(None, request), self.c["tabs"]: gr.Tabs(selected=TAB_ID)}

    def link_open(self, request: gr.Request) -> dict[Any, Any]:
        """Second step (the tab is on the page now): the benchmark run, the run's
        configuration and questions, and its trace."""
        bench_id, run_id = _link(request)
        if not bench_id:
            return {self.c["note"]: gr.update()}
        c = self.c
        update = {c["pick"]: gr.update(value=bench_id), **self.open(bench_id, request)}
        row = self.view.records.row_for_run(bench_id, run_id) if run_id else None
        if row is not None and self.view.get(bench_id, owner_from_request(request)):
            table, shown = self.questions(bench_id, row.config_key, request)
            chat, totals = self.show_trace(bench_id, run_id, request)
            update[c["config"]]["value"] = row.config_key  # beside its choices, from open()
            update.update({c["questions"]: table,
                           c["shown"]: shown, c["trace"]: chat, c["totals"]: totals})  # fmt: skip
        return update


def _link(request: gr.Request) -> tuple[str | None, str | None]:
    params = getattr(request, "query_params", {}) or {}
    return params.get("benchmark"), params.get("run")


def add_tab(service: AgentService, demo: gr.Blocks, tabs: gr.Tabs) -> BenchmarksTab:
    """The Benchmarks tab, built inside ``tabs`` (call it within that ``with`` block)."""
    tab = BenchmarksTab(service)
    with gr.Tab("Benchmarks", id=TAB_ID, elem_id="benchmarks-tab") as page:
        note = gr.Markdown("", elem_id="bench-note")
        with gr.Row(equal_height=True):
            pick = gr.Dropdown(
                choices=[], value=None, label="Benchmark run", scale=4, elem_id="bench-pick"
            )
            refresh = gr.Button("Refresh", size="sm", scale=0, min_width=80)
        summary = gr.Markdown("", elem_id="bench-summary")
        with gr.Row(equal_height=False):
            analysis = gr.Plot(
                None,
                show_label=False,
                label="Analysis",
                elem_id="bench-analysis",
                elem_classes=["bench-plot"],
            )
            pareto = gr.Plot(
                None,
                show_label=False,
                label="Accuracy against cost",
                elem_id="bench-pareto",
                elem_classes=["bench-plot"],
            )
        clicks = gr.HTML(
            "<p>Click a configuration's point or bar to see its questions; click a question "
            "to open its trace.</p>",
            js_on_load=CLICK_JS,
            elem_id="bench-clicks",
        )
        config = gr.Dropdown(choices=[], value=None, label="Configuration", elem_id="bench-config")
        questions = gr.Dataframe(
            value=[],
            headers=QUESTION_COLUMNS,
            interactive=False,
            wrap=True,
            elem_id="bench-questions",
        )
        shown = gr.State([])
        totals = gr.Markdown("", elem_id="bench-trace-totals")
        trace = gr.Chatbot(
            label="Trace",
            height=480,
            elem_id="bench-trace",
            feedback_options=None,
            buttons=["copy"],
            layout="panel",
        )
    tab.c = {
        "pick": pick,
        "note": note,
        "summary": summary,
        "analysis": analysis,
        "pareto": pareto,
        "config": config,
        "questions": questions,
        "shown": shown,
        "trace": trace,
        "totals": totals,
        "tabs": tabs,
    }
    opened = [summary, pareto, analysis, config, questions, shown, trace, totals]
    page.select(tab.listing, outputs=[pick, note])
    refresh.click(tab.listing, inputs=pick, outputs=[pick, note])
    pick.input(tab.open, inputs=pick, outputs=opened)
    config.input(tab.questions, inputs=[pick, config], outputs=[questions, shown])
    clicks.click(tab.clicked, inputs=pick, outputs=[config, questions, shown])
    questions.select(tab.trace, inputs=[pick, shown], outputs=[trace, totals])
    demo.load(tab.link_tab, outputs=[pick, note, tabs]).then(
        tab.link_open, outputs=[pick, note, *opened]
    )
    return tab
