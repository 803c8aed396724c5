"""The report of a benchmark run, per configuration: accuracy overall and by group, and what
each question cost (the compact agent's Table 1: calls, input and output tokens, cost and
wall time per question, mean and median), guesses, and questions answered without any tool.

Accuracy is over the scored questions, as the official scripts count: MMAU and MMAR count
the items that have a prediction (an item whose audio is missing has none and is left out;
the report says how many), and a failed run's empty prediction is wrong. MMAU-Pro's
overall figure is its script's weighted performance: each category's score (closed:
accuracy; instruction following: success rate; open: mean judge score / 5) weighted by its
number of scored items; open items without a judge are counted under "not scored".
"""

from __future__ import annotations

import csv
import io
import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from backend.benchmarks import config_label
from storage.benchmarks import BenchRunInfo, ResultRow

GROUPS = ("task", "modality", "category", "sub-category", "difficulty")
PER_QUESTION = ("calls", "input_tokens", "output_tokens", "cost", "wall_s")


def _pct(values: Sequence[float]) -> float | None:
    return round(100 * statistics.mean(values), 2) if values else None


def _spread(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0}
    return {"mean": statistics.mean(values), "median": statistics.median(values)}


def trace_link(app_url: str, bench_run_id: str, run_id: str | None) -> str:
    return f"{app_url.rstrip('/')}/?benchmark={bench_run_id}&run={run_id}" if run_id else ""


def _pro_categories(rows: Sequence[ResultRow]) -> dict[str, Any]:
    by_category: dict[str, list[float]] = defaultdict(list)
    not_scored: dict[str, int] = defaultdict(int)
    for row in rows:
        category = str(row.labels.get("category", "?"))
        value = (row.score or {}).get("value")
        if value is None:
            not_scored[category] += 1
        else:
            by_category[category].append(float(value))
    categories = {
        c: {"n": len(v), "score": round(statistics.mean(v), 4)} for c, v in by_category.items()
    }
    scored = sum(len(v) for v in by_category.values())
    weighted = (
        sum(statistics.mean(v) * len(v) for v in by_category.values()) / scored if scored else None
    )
    return {
        "categories": categories,
        "not_scored": dict(not_scored),
        "weighted_performance": round(weighted, 4) if weighted is not None else None,
    }


def config_report(rows: Sequence[ResultRow], benchmark: str) -> dict[str, Any]:
    scored = [r for r in rows if r.score is not None]
    facts = [(r.score or {}).get("facts") or {} for r in scored if r.run_id]
    values = [float(r.score["value"]) for r in scored if r.score and r.score["value"] is not None]
    report: dict[str, Any] = {
        "configuration": rows[0].config if rows else {},
        "label": config_label(rows[0].config) if rows else "",
        "planned": len(rows),
        "answered": len(facts),
        "scored": len(values),
        "not_scored": len(scored) - len(values),
        "accuracy": _pct(values),
        "failed_runs": sum(1 for f in facts if f.get("failed")),
        "guesses": sum(1 for f in facts if f.get("guess")),
        "no_tool_calls": sum(1 for f in facts if not f.get("tool_calls") and not f.get("crashed")),
        # a crashed question's run never finished: nothing to time or count
        "per_question": {
            k: _spread([float(f.get(k) or 0) for f in facts if not f.get("crashed")])
            for k in PER_QUESTION
        },
        "crashed": sum(1 for f in facts if f.get("crashed")),
        "total_cost": sum(float(f.get("cost") or 0) for f in facts),
    }
    exact = [bool(r.score["exact"]) for r in scored if r.score and r.score.get("exact") is not None]
    if benchmark != "mmau-pro" and exact:
        report["exact_choice"] = _pct([float(e) for e in exact])
    if benchmark == "mmau-pro":
        report["mmau_pro"] = _pro_categories(scored)
    due = [r for r in scored if r.labels.get("expect_guess")]
    if due:
        report["guessed_where_due"] = _pct(
            [float(bool(((r.score or {}).get("facts") or {}).get("guess"))) for r in due]
        )
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for group in GROUPS:
        buckets: dict[str, list[ResultRow]] = defaultdict(list)
        for row in scored:
            if group in row.labels:
                buckets[str(row.labels[group])].append(row)
        if len(buckets) < 1:
            continue
        groups[group] = {}
        for name, members in sorted(buckets.items()):
            vals = [
                float(m.score["value"]) for m in members if m.score and m.score["value"] is not None
            ]
            ex = [
                float(bool(m.score["exact"]))
                for m in members
                if m.score and m.score.get("exact") is not None
            ]
            groups[group][name] = {
                "n": len(members),
                "accuracy": _pct(vals),
                "exact_choice": _pct(ex) if ex else None,
            }
    report["groups"] = groups
    return report


def build_report(
    info: BenchRunInfo, rows: Sequence[ResultRow], *, app_url: str = ""
) -> dict[str, Any]:
    by_config: dict[str, list[ResultRow]] = defaultdict(list)
    for row in rows:
        by_config[row.config_key].append(row)
    return {
        "bench_run": info.id,
        "name": info.name,
        "benchmark": info.benchmark,
        "questions": info.questions_path,
        "missing_audio": len(info.config.get("missing_audio", [])),
        "finished": info.finished_at is not None,
        "link": f"{app_url.rstrip('/')}/?benchmark={info.id}" if app_url else "",
        "configurations": [config_report(r, info.benchmark) for r in by_config.values()],
    }


def _cell(value: Any, suffix: str = "") -> str:
    return "–" if value is None else f"{value}{suffix}"


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# {report['name']}", ""]
    lines.append(
        f"Benchmark `{report['benchmark']}`, questions `{report['questions']}`"
        + (
            f"; {report['missing_audio']} items without audio left out"
            if report["missing_audio"]
            else ""
        )
        + ("" if report["finished"] else " (**unfinished**: run the same command to continue)")
        + "."
    )
    if report["link"]:
        lines.append(f"In the app: {report['link']}")
    lines += [
        "",
        "| configuration | answered | accuracy | exact choice | guesses | no tool call "
        "| failed | calls (mean / median) | tokens in / out (mean) | cost $ (mean / median) "
        "| wall s (mean / median) |",
        "|" + "---|" * 11,
    ]
    for c in report["configurations"]:
        per = c["per_question"]
        lines.append(
            f"| {c['label']} | {c['answered']}/{c['planned']} | {_cell(c['accuracy'], ' %')} "
            f"| {_cell(c.get('exact_choice'), ' %')} | {c['guesses']} | {c['no_tool_calls']} "
            f"| {c['failed_runs']} | {per['calls']['mean']:.2f} / {per['calls']['median']:.1f} "
            f"| {per['input_tokens']['mean']:.0f} / {per['output_tokens']['mean']:.0f} "
            f"| {per['cost']['mean']:.5f} / {per['cost']['median']:.5f} "
            f"| {per['wall_s']['mean']:.2f} / {per['wall_s']['median']:.2f} |"
        )
    for c in report["configurations"]:
        lines += ["", f"## {c['label']}", ""]
        if "mmau_pro" in c:
            pro = c["mmau_pro"]
            lines.append(f"Weighted performance (MMAU-Pro): {_cell(pro['weighted_performance'])}")
            for name, cat in sorted(pro["categories"].items()):
                lines.append(f"- {name}: {cat['score']:.4f} over {cat['n']}")
            for name, count in sorted(pro["not_scored"].items()):
                lines.append(f"- {name}: {count} not scored")
        if c.get("guessed_where_due") is not None:
            lines.append(f"Answered as a guess where one is due: {c['guessed_where_due']} %")
        for group, buckets in c["groups"].items():
            lines += ["", f"| {group} | n | accuracy | exact choice |", "|---|---|---|---|"]
            for name, b in buckets.items():
                lines.append(
                    f"| {name} | {b['n']} | {_cell(b['accuracy'], ' %')} "
                    f"| {_cell(b['exact_choice'], ' %')} |"
                )
    return "\n".join(lines) + "\n"


def questions_csv(rows: Sequence[ResultRow], bench_run_id: str, app_url: str) -> str:
    """One line per (question, configuration), with the link that opens its trace."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "item_id",
            "configuration",
            "answer",
            "prediction",
            "value",
            "token_rule",
            "exact",
            "guess",
            "tool_calls",
            "calls",
            "cost",
            "wall_s",
            "status",
            "trace",
        ]
    )
    for row in rows:
        score = row.score or {}
        facts = score.get("facts") or {}
        writer.writerow(
            [
                row.item_id,
                config_label(row.config),
                row.labels.get("answer", ""),
                facts.get("prediction", ""),
                score.get("value"),
                score.get("token"),
                score.get("exact"),
                facts.get("guess"),
                facts.get("tool_calls"),
                facts.get("calls"),
                facts.get("cost"),
                facts.get("wall_s"),
                row.run_status or "",
                trace_link(app_url, bench_run_id, row.run_id),
            ]
        )
    return out.getvalue()
