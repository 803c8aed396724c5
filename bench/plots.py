"""PNG plots of an analysis (matplotlib, drawn off-screen): Shapley values of the tools with
their 95 % intervals, the ablation's accuracy per planner and strategy over seeds with each
planner's text-only baseline, and accuracy against cost with the Pareto front."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from storage.benchmarks import BenchRunInfo, ResultRow

Z95 = 1.96
DPI = 110
BAR = "#1f5fa8"
BASELINE = "#111827"
FRONT = "#b3261e"


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise SystemExit("Plots need matplotlib: pip install -r requirements-bench.txt") from exc
    return plt


def shapley_png(path: Path, result: dict[str, Any], title: str) -> Path:
    plt = _pyplot()
    items = sorted(result["shapley"].items(), key=lambda kv: kv[1]["value"])
    names = [k for k, _ in items]
    values = [100 * v["value"] for _, v in items]
    errors = [100 * Z95 * v["se"] for _, v in items]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(names) + 1.6), dpi=DPI)
    ax.barh(names, values, xerr=errors, color=BAR, ecolor=BASELINE, capsize=3)
    ax.axvline(0, color=BASELINE, linewidth=0.8)
    ax.set_xlabel("Shapley value (accuracy points), 95 % interval")
    ax.set_title(title, fontsize=10)
    note = (
        f"v(no tools) = {100 * result['v_empty']:.1f} %, v(all) = {100 * result['v_full']:.1f}"
        f" %; {result['subsets_run']} tool subsets run"
    )
    fig.text(0.01, 0.01, note, fontsize=8, color="#4b5563")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path)
    plt.close(fig)
    return path


def ablation_png(path: Path, result: dict[str, Any], title: str) -> Path:
    plt = _pyplot()
    rows = [r for r in result["configurations"] if r["mean"] is not None]
    tooled = [r for r in rows if not r["text_only"]]
    baselines = {r["planner"]: r for r in rows if r["text_only"]}
    labels = [f"{r['planner']}\n{r['strategy']}" for r in tooled]
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(tooled) + 1.5), 4.2), dpi=DPI)
    positions = range(len(tooled))
    ax.bar(
        positions,
        [r["mean"] for r in tooled],
        yerr=[r["sd"] for r in tooled],
        color=BAR,
        ecolor=BASELINE,
        capsize=4,
    )
    for i, r in enumerate(tooled):
        ax.text(i, r["mean"] + r["sd"] + 1, f"{r['mean']:.1f}", ha="center", fontsize=8)
        base = baselines.get(r["planner"])
        if base is not None:
            ax.hlines(
                base["mean"],
                i - 0.4,
                i + 0.4,
                colors=BASELINE,
                linestyles="--",
                label="text only (no tools)" if i == 0 else None,
            )
    ax.set_xticks(list(positions), labels, fontsize=8)
    ax.set_ylabel(f"accuracy (%), mean ± sd over {tooled[0]['seeds'] if tooled else 0} seeds")
    ax.set_ylim(0, 105)
    ax.set_title(title, fontsize=10)
    if baselines:
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def pareto_png(path: Path, pareto: dict[str, Any], title: str) -> Path:
    plt = _pyplot()
    points = pareto["points"]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=DPI)
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    ax.scatter(xs, ys, color=BAR, zorder=3)
    front = pareto["front"]
    ax.plot(
        [xs[i] for i in front],
        [ys[i] for i in front],
        color=FRONT,
        marker="o",
        zorder=4,
        label="Pareto front",
    )
    for i in front:
        ax.annotate(
            pareto["labels"][i],
            (xs[i], ys[i]),
            fontsize=7,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ax.set_xlabel(pareto["axis"])
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def write_all(
    out: Path, info: BenchRunInfo, rows: Sequence[ResultRow], result: dict[str, Any]
) -> list[Path]:
    """Every plot that applies to this analysis, into ``out``."""
    written = []
    if result.get("kind") == "attribution" and result.get("complete"):
        written.append(shapley_png(out / "shapley.png", result, info.name))
    if result.get("kind") == "ablation" and result.get("configurations"):
        written.append(ablation_png(out / "ablation.png", result, info.name))
    if len(result.get("pareto", {}).get("points", [])) > 1:
        written.append(pareto_png(out / "pareto.png", result["pareto"], info.name))
    return written
