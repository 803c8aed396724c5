"""An interactive timeline of a run: the audio with the time spans its tools reported, as a
Plotly figure (shown with ``gr.Plot``).

From top to bottom, on one time axis: the waveform (min/max envelope), a log-magnitude
spectrogram (0 to the Nyquist frequency), and one lane per tool with its spans as coloured
bars (overlapping spans of one tool are stacked in sub-rows; transcript segments are one bar
each, with their words). Hovering a bar shows the tool, the span's label, its times and its
text; clicking anywhere plays the recording from that time (``frontend/page.js`` connects the
plot's click to the audio player: each point carries its start time as ``customdata[0]``, or
its x). Drag to zoom in on a stretch of a long recording; double-click to see all of it.

Spans come from the ``data["spans"]`` (``start``, ``end``, ``label``) of ``tool_result``
events, and transcript segments from ``data["segments"]`` (``start``, ``end``, ``text``).
Nothing here knows about Gradio, the service or the database.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from agent import events as ev

INK = "#1f2937"
MUTED = "#4b5563"
GRID = "#e5e7eb"
WAVE = "#374151"

# A tool's own colour comes from the catalogue (its ``colour``), so it looks the same in
# every run; a tool without one takes the next free colour of the palette. All carry white
# text at 4.5:1 or more (WCAG AA).
PALETTE = ["#b3261e", "#00677f", "#6b5d00", "#9c2a7a", "#7a4a3a", "#3f51b5", "#2e7d32"]

MAX_SUBROWS = 4
MAX_SPANS_PER_TOOL = 200
WAVE_POINTS = 1200  # envelope points: the figure's size does not grow with the recording
SPEC_COLUMNS = 300
SPEC_BANDS = 64
LANE_PX = 30  # height of one sub-row of spans


@dataclass(frozen=True)
class Span:
    start: float
    end: float
    label: str = ""
    text: str = ""  # the words of a transcript segment (the label is their beginning)


@dataclass
class Track:
    """The spans one tool reported in a run (all its calls together)."""

    tool: str
    spans: list[Span] = field(default_factory=list)


def tracks_from_events(events: Sequence[ev.Event]) -> list[Track]:
    """One track per tool that reported spans, in the order the tools first answered.

    A tool that reports transcript ``segments`` gets one span per segment with its words."""
    tracks: dict[str, Track] = {}
    for event in events:
        if not isinstance(event, ev.ToolResultEvent) or event.error:
            continue
        data = event.data if isinstance(event.data, dict) else {}
        segments = data.get("segments")
        if isinstance(segments, list) and segments:
            found = [_span(s, words=True) for s in segments]
        else:
            raw = data.get("spans")
            found = [_span(s) for s in raw] if isinstance(raw, list) else []
        for span in found:
            if span is None:
                continue
            track = tracks.setdefault(event.tool, Track(event.tool))
            if span not in track.spans and len(track.spans) < MAX_SPANS_PER_TOOL:
                track.spans.append(span)
    return list(tracks.values())


def _span(item: object, *, words: bool = False) -> Span | None:
    if not isinstance(item, dict):
        return None
    try:
        start, end = float(item["start"]), float(item["end"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (math.isfinite(start) and math.isfinite(end)):
        return None
    start, end = min(start, end), max(start, end)
    if words:
        text = " ".join(str(item.get("text") or "").split())
        return Span(max(start, 0.0), end, _clip(text, 40), text)
    return Span(max(start, 0.0), end, str(item.get("label") or "").strip())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def tool_colours(tracks: Sequence[Track], known: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each track's colour: its tool's own (``known``, from the catalogue), else the next
    palette colour no tool owns."""
    known = known or {}
    colours: dict[str, str] = {}
    free = iter(c for c in PALETTE if c not in known.values())
    for track in tracks:
        colours[track.tool] = known.get(track.tool) or next(free, PALETTE[0])
    return colours


def catalogue_colours(catalogue: Mapping[str, Any]) -> dict[str, str]:
    """The tools' own colours as the catalogue gives them (tool name -> "#rrggbb")."""
    return {t["name"]: t["colour"] for t in catalogue.get("tools", []) if t.get("colour")}


def subrows(spans: Sequence[Span]) -> list[int]:
    """Greedy interval packing: the sub-row of each span, so that spans in a row don't overlap
    (at most MAX_SUBROWS rows; further overlaps share the last one)."""
    ends: list[float] = []
    rows = [0] * len(spans)
    for index in sorted(range(len(spans)), key=lambda i: (spans[i].start, i)):
        span = spans[index]
        row = next((r for r, end in enumerate(ends) if end <= span.start), None)
        if row is None:
            if len(ends) < MAX_SUBROWS:
                ends.append(span.end)
                row = len(ends) - 1
            else:
                row = MAX_SUBROWS - 1
        ends[row] = max(ends[row], span.end)
        rows[index] = row
    return rows


def spectrogram_columns(
    samples: np.ndarray, columns: int, n_fft: int = 512, per_column: int = 4
) -> np.ndarray:
    """Log power (dB) of ``columns`` evenly spaced analysis points: shape (n_fft//2+1, columns).

    Each column averages the power of up to ``per_column`` frames around its centre, so the
    cost depends on the number of columns, not on the length of the recording."""
    n = samples.size
    padded = np.pad(samples, (n_fft // 2, n_fft // 2))
    span = n / columns
    frames = max(1, min(per_column, int(span // n_fft)))
    offsets = (np.arange(frames) + 0.5) / frames - 0.5  # within a column, in columns
    centres = ((np.arange(columns)[:, None] + 0.5 + offsets[None, :]) * span).astype(int)
    centres = np.clip(centres, 0, max(n - 1, 0)).reshape(-1)
    index = centres[:, None] + np.arange(n_fft)[None, :]  # padded: frame centred on the sample
    window = np.hanning(n_fft).astype(np.float32)
    spectrum = np.abs(np.fft.rfft(padded[index] * window, axis=1)) ** 2
    power = spectrum.reshape(columns, frames, -1).mean(axis=1)
    return (10 * np.log10(power + 1e-10)).T


def envelope(samples: np.ndarray, sample_rate: int, points: int = WAVE_POINTS) -> tuple:
    """(times, lows, highs): the min and max of ``points`` equal stretches of the samples."""
    points = max(1, min(points, samples.size))
    starts = (np.arange(points) * samples.size) // points
    lows = np.minimum.reduceat(samples, starts)
    highs = np.maximum.reduceat(samples, starts)
    ends = np.append(starts[1:], samples.size)
    times = (starts + ends) / 2 / sample_rate
    return times, lows, highs


def tick_step(duration: float, target: int = 10) -> float:
    """A round tick interval giving about ``target`` ticks."""
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600):
        if duration / step <= target:
            return float(step)
    return 600.0 * math.ceil(duration / 600.0 / target)


def _hover_text(text: str, width: int = 60, br: bool = False) -> str:
    """Words wrapped into lines of about ``width`` characters (``<br>`` between them, and
    before them with ``br``; "" without words)."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    wrapped = "<br>".join(_escape(line) for line in lines)
    return f"<br>{wrapped}" if br and wrapped else wrapped


def _escape(text: str) -> str:
    """Plotly renders hover and bar text as a small HTML subset: show it literally."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def lane_rows(tracks: Sequence[Track]) -> tuple[list[list[float]], list[float], int]:
    """The y of every span (lanes top to bottom), each lane's centre, and the rows in all."""
    ys: list[list[float]] = []
    centres: list[float] = []
    row = 0
    for track in tracks:
        packed = subrows(track.spans)
        count = max(packed, default=0) + 1
        ys.append([-(row + r) for r in packed])
        centres.append(-(row + (count - 1) / 2))
        row += count
    return ys, centres, row


def timeline_figure(
    samples: np.ndarray | None,
    sample_rate: int,
    tracks: Sequence[Track],
    *,
    title: str = "",
    compact: bool = False,
    colours: Mapping[str, str] | None = None,
) -> go.Figure:
    """The waveform, spectrogram and tool spans of one recording (``compact``: for a narrow
    compare column: fewer ticks, narrower margins; ``colours``: the tools' own, by name)."""
    samples = np.asarray(samples if samples is not None else [], dtype=np.float32).reshape(-1)
    duration = samples.size / sample_rate if sample_rate > 0 and samples.size else 0.0
    duration = max([duration, *(s.end for t in tracks for s in t.spans)])
    colours = tool_colours(tracks, colours)
    ys, centres, rows = lane_rows(tracks)
    lanes_px = max(rows, 1) * LANE_PX + 20
    wave_px, spec_px = (70, 100) if samples.size else (0, 0)
    heights = [h for h in (wave_px, spec_px) if h] + [lanes_px]
    fig = make_subplots(
        rows=len(heights),
        cols=1,
        shared_xaxes=True,
        row_heights=[h / sum(heights) for h in heights],
        vertical_spacing=0.03,
    )
    lane_row = len(heights)
    if samples.size:
        _add_waveform(fig, samples, sample_rate)
        _add_spectrogram(fig, samples, sample_rate)
    for index, track in enumerate(tracks):
        spans = track.spans
        fig.add_trace(
            go.Bar(
                orientation="h",
                base=[s.start for s in spans],
                x=[max(s.end - s.start, duration / 400 or 0.01) for s in spans],
                y=ys[index],
                width=0.8,
                marker={"color": colours[track.tool], "line": {"width": 0}},
                text=[_escape(s.label) for s in spans],
                textposition="inside",
                insidetextanchor="start",
                textfont={"color": "#ffffff", "size": 12},
                constraintext="inside",
                customdata=[
                    [s.start, s.end, _escape(s.label) or "(no label)", _hover_text(s.text, br=True)]
                    for s in spans
                ],
                hovertemplate=(
                    "<b>%{customdata[2]}</b><br>%{customdata[0]:.2f}–%{customdata[1]:.2f} s"
                    "%{customdata[3]}<extra>" + _escape(track.tool) + "</extra>"
                ),
                name=track.tool,
                showlegend=False,
            ),
            row=lane_row,
            col=1,
        )
    if not tracks:
        fig.add_annotation(
            text="No tool reported time spans in this run.",
            xref="x domain",
            yref="y domain",
            x=0,
            y=0.5,
            showarrow=False,
            font={"color": MUTED, "size": 13},
            xanchor="left",
            row=lane_row,
            col=1,
        )
    fig.update_yaxes(
        tickvals=centres,
        ticktext=[_escape(t.tool) for t in tracks],
        range=[-(max(rows, 1) - 0.5), 0.5],
        showgrid=False,
        zeroline=False,
        row=lane_row,
        col=1,
    )
    step = tick_step(duration, target=5 if compact else 10) if duration else 1.0
    fig.update_xaxes(
        range=[0, duration or 1.0], dtick=step, ticksuffix=" s", showgrid=True,
        gridcolor=GRID, zeroline=False, color=MUTED,
    )  # fmt: skip
    axis_title = "time" if compact else "time (drag to zoom, double-click to see it all)"
    fig.update_xaxes(title_text=axis_title, row=lane_row)
    fig.update_yaxes(fixedrange=True, color=MUTED)  # zoom in time only
    fig.update_layout(
        template="none",
        height=sum(heights) + 110,
        margin={"l": 100 if compact else 120, "r": 12, "t": 40, "b": 50},
        title={"text": _escape(title), "x": 0, "xanchor": "left", "font": {"size": 14}},
        font={"family": "system-ui, sans-serif", "size": 12, "color": INK},
        hovermode="closest",
        dragmode="zoom",
        barmode="overlay",
        paper_bgcolor="#ffffff",
        plot_bgcolor="#f9fafb",
        showlegend=False,
    )
    return fig


def _add_waveform(fig: go.Figure, samples: np.ndarray, sample_rate: int) -> None:
    times, lows, highs = envelope(samples, sample_rate)
    peak = max(float(np.max(np.abs(samples))), 1e-6)
    t = np.round(times, 3).tolist()
    fig.add_trace(
        go.Scatter(x=t, y=np.round(lows / peak, 3).tolist(), mode="lines",
                   line={"width": 0.5, "color": WAVE}, hoverinfo="skip", showlegend=False),
        row=1, col=1,
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=t, y=np.round(highs / peak, 3).tolist(), mode="lines", fill="tonexty",
            line={"width": 0.5, "color": WAVE}, fillcolor=WAVE, showlegend=False,
            name="waveform", hovertemplate="%{x:.2f} s<extra>waveform</extra>",
        ),
        row=1, col=1,
    )  # fmt: skip
    fig.update_yaxes(
        range=[-1.05, 1.05], showticklabels=False, showgrid=False, zeroline=False,
        title_text="waveform", row=1, col=1,
    )  # fmt: skip


def _add_spectrogram(fig: go.Figure, samples: np.ndarray, sample_rate: int) -> None:
    columns = max(1, min(SPEC_COLUMNS, samples.size // 256))
    db = spectrogram_columns(samples, columns)
    bins = db.shape[0] - 1  # drop the Nyquist bin: an even number of bands
    bands = db[:bins].reshape(SPEC_BANDS, bins // SPEC_BANDS, -1).mean(axis=1)
    ceiling = float(bands.max())
    bands = np.clip(bands, ceiling - 80.0, ceiling)  # an 80 dB range below the loudest
    duration = samples.size / sample_rate
    times = ((np.arange(columns) + 0.5) * duration / columns).round(3).tolist()
    nyquist_khz = sample_rate / 2000
    freqs = ((np.arange(SPEC_BANDS) + 0.5) * nyquist_khz / SPEC_BANDS).round(2).tolist()
    fig.add_trace(
        go.Heatmap(
            z=np.round(bands, 1).tolist(), x=times, y=freqs, colorscale="Viridis",
            showscale=False, name="spectrogram",
            hovertemplate="%{x:.2f} s · %{y:.1f} kHz · %{z:.0f} dB<extra>spectrogram</extra>",
        ),
        row=2, col=1,
    )  # fmt: skip
    fig.update_yaxes(
        title_text="kHz", range=[0, nyquist_khz], showgrid=False, zeroline=False, row=2, col=1
    )
