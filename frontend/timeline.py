"""A picture of the audio with the time spans the tools reported, drawn with numpy and PIL.

From top to bottom: the waveform (min/max per pixel column) over one stripe per tool, tinted
where that tool reported a span; a log-magnitude spectrogram (0 to the Nyquist frequency); one
lane per tool with its spans as labelled coloured boxes (overlapping spans of one tool are
stacked in sub-rows); a time axis. The lane titles on the left double as the legend: each
tool has one colour.

Spans come from the ``data["spans"]`` (``start``, ``end``, ``label``) of ``tool_result``
events: sound events, speech activity, transcript segments, silence, notes. Nothing here
knows about Gradio, the service or the database.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from agent import events as ev

BACKGROUND = (255, 255, 255)
PANEL = (247, 248, 250)
INK = (55, 65, 81)
MUTED = (120, 128, 140)
GRID = (226, 229, 234)
WAVE = (75, 85, 99)

# Fixed colours for the tools that ship, so a tool looks the same in every run; others
# take the next free colour of the palette.
TOOL_COLOURS = {
    "sound_events": (31, 119, 180),
    "speech_activity": (44, 160, 44),
    "transcribe": (255, 127, 14),
    "signal_stats": (127, 127, 127),
    "music_analysis": (148, 103, 189),
}
PALETTE = [
    (214, 39, 40),
    (23, 190, 207),
    (188, 189, 34),
    (227, 119, 194),
    (140, 86, 75),
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
]
# viridis at five points, interpolated: low energy dark blue, high energy yellow
_COLORMAP_ANCHORS = np.array(
    [(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37)], dtype=float
)

MAX_SUBROWS = 4
MAX_SPANS_PER_TOOL = 200


@dataclass(frozen=True)
class Span:
    start: float
    end: float
    label: str = ""


@dataclass
class Track:
    """The spans one tool reported in a run (all its calls together)."""

    tool: str
    spans: list[Span] = field(default_factory=list)


def tracks_from_events(events: Sequence[ev.Event]) -> list[Track]:
    """One track per tool that reported spans, in the order the tools first answered."""
    tracks: dict[str, Track] = {}
    for event in events:
        if not isinstance(event, ev.ToolResultEvent) or event.error:
            continue
        raw = event.data.get("spans") if isinstance(event.data, dict) else None
        if not isinstance(raw, list):
            continue
        for item in raw:
            span = _span(item)
            if span is None:
                continue
            track = tracks.setdefault(event.tool, Track(event.tool))
            if span not in track.spans and len(track.spans) < MAX_SPANS_PER_TOOL:
                track.spans.append(span)
    return list(tracks.values())


def _span(item: object) -> Span | None:
    if not isinstance(item, dict):
        return None
    try:
        start, end = float(item["start"]), float(item["end"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (math.isfinite(start) and math.isfinite(end)):
        return None
    start, end = min(start, end), max(start, end)
    return Span(max(start, 0.0), end, str(item.get("label") or "").strip())


def tool_colours(tracks: Sequence[Track]) -> dict[str, tuple[int, int, int]]:
    colours: dict[str, tuple[int, int, int]] = {}
    free = iter(c for c in PALETTE if c not in TOOL_COLOURS.values())
    for track in tracks:
        colours[track.tool] = TOOL_COLOURS.get(track.tool) or next(free, PALETTE[0])
    return colours


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


@dataclass
class Layout:
    """Where everything goes; ``draw_timeline`` and the tests share it."""

    width: int
    duration: float
    tracks: list[Track]
    left: int = 150  # lane titles (the legend)
    right: int = 14
    top: int = 30  # the title line
    wave_h: int = 64
    spec_h: int = 112
    gap: int = 8
    subrow_h: int = 18
    lane_pad: int = 5
    axis_h: int = 24
    rows: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rows = [subrows(t.spans) for t in self.tracks]

    @property
    def plot_w(self) -> int:
        return self.width - self.left - self.right

    def x(self, seconds: float) -> float:
        """The pixel column of a time."""
        if self.duration <= 0:
            return float(self.left)
        fraction = min(max(seconds / self.duration, 0.0), 1.0)
        return self.left + fraction * self.plot_w

    @property
    def wave_top(self) -> int:
        return self.top

    @property
    def spec_top(self) -> int:
        return self.wave_top + self.wave_h + self.gap

    @property
    def lanes_top(self) -> int:
        return self.spec_top + self.spec_h + self.gap

    def lane_h(self, index: int) -> int:
        count = max(self.rows[index], default=0) + 1
        return count * self.subrow_h + 2 * self.lane_pad

    def lane_top(self, index: int) -> int:
        return self.lanes_top + sum(self.lane_h(i) + 2 for i in range(index))

    def span_box(self, track: int, span: int) -> tuple[float, float, float, float]:
        """(x0, y0, x1, y1) of one span's box."""
        s = self.tracks[track].spans[span]
        y0 = self.lane_top(track) + self.lane_pad + self.rows[track][span] * self.subrow_h
        x0, x1 = self.x(s.start), self.x(s.end)
        x1 = max(x1, x0 + 2)  # a very short span stays visible
        return x0, y0 + 1, x1, y0 + self.subrow_h - 2

    @property
    def lanes_h(self) -> int:
        if not self.tracks:
            return 30  # room for "no spans" note
        return sum(self.lane_h(i) + 2 for i in range(len(self.tracks)))

    @property
    def axis_top(self) -> int:
        return self.lanes_top + self.lanes_h

    @property
    def height(self) -> int:
        return self.axis_top + self.axis_h


@cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for name in ("DejaVuSans.ttf", "LiberationSans-Regular.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size=size)


def draw_timeline(
    samples: np.ndarray,
    sample_rate: int,
    tracks: Sequence[Track],
    *,
    width: int = 1100,
    title: str = "",
) -> Image.Image:
    """The waveform, spectrogram and tool spans of one recording, as an RGB image."""
    samples = np.asarray(samples, dtype=np.float32).reshape(-1)
    duration = samples.size / sample_rate if sample_rate > 0 else 0.0
    layout = Layout(width=width, duration=duration, tracks=list(tracks))
    colours = tool_colours(layout.tracks)
    image = Image.new("RGB", (layout.width, layout.height), BACKGROUND)
    draw = ImageDraw.Draw(image)
    small, normal = _font(12), _font(14)

    if title:
        draw.text((layout.left, 8), _fit(draw, title, normal, layout.plot_w), fill=INK, font=normal)
    _draw_waveform(image, layout, samples, colours)
    _draw_spectrogram(image, layout, samples, sample_rate)
    draw = ImageDraw.Draw(image)
    draw.text((8, layout.wave_top + 4), "waveform", fill=MUTED, font=small)
    draw.text((8, layout.spec_top + 4), "spectrogram", fill=MUTED, font=small)
    nyquist = sample_rate / 2000 if sample_rate else 0
    draw.text((layout.left - 6, layout.spec_top), f"{nyquist:g} kHz", fill=MUTED, font=small,
              anchor="ra")  # fmt: skip
    draw.text((layout.left - 6, layout.spec_top + layout.spec_h), "0", fill=MUTED, font=small,
              anchor="rd")  # fmt: skip
    _draw_lanes(draw, layout, colours, small, normal)
    _draw_axis(draw, layout, small)
    return image


def _draw_waveform(
    image: Image.Image,
    layout: Layout,
    samples: np.ndarray,
    colours: dict[str, tuple[int, int, int]],
) -> None:
    top, height, left, plot_w = layout.wave_top, layout.wave_h, layout.left, layout.plot_w
    overlay = Image.new("RGBA", image.size, (0, 0, 0, 0))
    odraw = ImageDraw.Draw(overlay)
    odraw.rectangle([left, top, left + plot_w - 1, top + height - 1], fill=(*PANEL, 255))
    # Behind the waveform, one horizontal stripe per tool, tinted where it reported a span.
    stripes = len(layout.tracks)
    for index, track in enumerate(layout.tracks):
        y0 = top + round(index * height / stripes)
        y1 = top + round((index + 1) * height / stripes) - 1
        for span in track.spans:
            x0, x1 = layout.x(span.start), max(layout.x(span.end), layout.x(span.start) + 1)
            odraw.rectangle([x0, y0, x1, y1], fill=(*colours[track.tool], 60))
    image.paste(Image.alpha_composite(image.convert("RGBA"), overlay).convert("RGB"))
    draw = ImageDraw.Draw(image)
    middle = top + height / 2
    draw.line([left, middle, left + plot_w - 1, middle], fill=GRID)
    if samples.size == 0:
        return
    lows, highs = _column_extremes(samples, plot_w)
    peak = max(float(np.max(np.abs(samples))), 1e-6)
    scale = (height / 2 - 3) / peak
    for column, (low, high) in enumerate(zip(lows, highs, strict=True)):
        x = left + column
        draw.line([x, middle - high * scale, x, middle - low * scale], fill=WAVE)


def _column_extremes(samples: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    starts = (np.arange(columns) * samples.size) // columns
    starts = np.minimum(starts, samples.size - 1)
    return np.minimum.reduceat(samples, starts), np.maximum.reduceat(samples, starts)


def spectrogram_columns(
    samples: np.ndarray, columns: int, n_fft: int = 512, per_column: int = 4
) -> np.ndarray:
    """Log power (dB) of ``columns`` evenly spaced analysis points: shape (n_fft//2+1, columns).

    Each pixel column averages the power of up to ``per_column`` frames around its centre, so
    the cost depends on the picture's width, not on the length of the recording."""
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


def _colormap(values: np.ndarray) -> np.ndarray:
    """Values in 0..1 to RGB (uint8) along the viridis anchors."""
    position = np.clip(values, 0, 1) * (len(_COLORMAP_ANCHORS) - 1)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, len(_COLORMAP_ANCHORS) - 1)
    weight = (position - low)[..., None]
    rgb = _COLORMAP_ANCHORS[low] * (1 - weight) + _COLORMAP_ANCHORS[high] * weight
    return rgb.astype(np.uint8)


def _draw_spectrogram(
    image: Image.Image, layout: Layout, samples: np.ndarray, sample_rate: int
) -> None:
    top, height, left, plot_w = layout.spec_top, layout.spec_h, layout.left, layout.plot_w
    if samples.size == 0 or sample_rate <= 0:
        ImageDraw.Draw(image).rectangle([left, top, left + plot_w - 1, top + height - 1], PANEL)
        return
    db = spectrogram_columns(samples, plot_w)
    ceiling = float(db.max())
    normalised = (db - (ceiling - 80.0)) / 80.0  # an 80 dB range below the loudest bin
    rgb = _colormap(normalised[::-1])  # low frequencies at the bottom
    picture = Image.fromarray(rgb, "RGB").resize((plot_w, height), Image.Resampling.BILINEAR)
    image.paste(picture, (left, top))


def _draw_lanes(
    draw: ImageDraw.ImageDraw,
    layout: Layout,
    colours: dict[str, tuple[int, int, int]],
    small: ImageFont.FreeTypeFont | ImageFont.ImageFont,
    normal: ImageFont.FreeTypeFont | ImageFont.ImageFont,
) -> None:
    if not layout.tracks:
        draw.text(
            (layout.left, layout.lanes_top + 8),
            "No tool reported time spans in this run.",
            fill=MUTED,
            font=normal,
        )
        return
    for index, track in enumerate(layout.tracks):
        top, height = layout.lane_top(index), layout.lane_h(index)
        colour = colours[track.tool]
        draw.rectangle(
            [layout.left, top, layout.left + layout.plot_w - 1, top + height - 1], fill=PANEL
        )
        # the legend: a swatch and the tool's name
        draw.rectangle([8, top + 6, 18, top + 16], fill=colour)
        name = _fit(draw, track.tool, normal, layout.left - 30)
        draw.text((24, top + 4), name, fill=INK, font=normal)
        for span_index, span in enumerate(track.spans):
            x0, y0, x1, y1 = layout.span_box(index, span_index)
            draw.rectangle([x0, y0, x1, y1], fill=colour)
            label = _fit(draw, span.label, small, x1 - x0 - 6)
            if label:
                draw.text((x0 + 3, (y0 + y1) / 2), label, fill=_text_on(colour), font=small,
                          anchor="lm")  # fmt: skip


def _draw_axis(
    draw: ImageDraw.ImageDraw,
    layout: Layout,
    font: ImageFont.FreeTypeFont | ImageFont.ImageFont,
) -> None:
    top = layout.axis_top + 2
    draw.line([layout.left, top, layout.left + layout.plot_w, top], fill=MUTED)
    if layout.duration <= 0:
        return
    step = tick_step(layout.duration)
    ticks = np.arange(0, layout.duration + 1e-9, step)
    for tick in ticks:
        x = layout.x(float(tick))
        draw.line([x, top, x, top + 4], fill=MUTED)
        anchor = "ra" if x > layout.left + layout.plot_w - 20 else "ma"
        draw.text((x, top + 6), _seconds(float(tick), step), fill=MUTED, font=font, anchor=anchor)


def tick_step(duration: float, target: int = 10) -> float:
    """A round tick interval giving about ``target`` ticks."""
    for step in (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600):
        if duration / step <= target:
            return float(step)
    return 600.0 * math.ceil(duration / 600.0 / target)


def _seconds(value: float, step: float) -> str:
    if step >= 60 and value >= 60:
        return f"{int(value // 60)}:{int(value % 60):02d}"
    return f"{value:.1f} s" if step < 1 else f"{value:.0f} s"


def _fit(
    draw: ImageDraw.ImageDraw,
    text: str,
    font: ImageFont.FreeTypeFont | ImageFont.ImageFont,
    width: float,
) -> str:
    """The text, cut with an ellipsis to fit ``width`` pixels ("" if not even one letter fits)."""
    text = " ".join(text.split())
    if not text or width <= 8:
        return ""
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "…", font=font) > width:
        text = text[:-1]
    return text.rstrip() + "…" if text else ""


def _text_on(colour: tuple[int, int, int]) -> tuple[int, int, int]:
    r, g, b = colour
    return (20, 20, 20) if 0.299 * r + 0.587 * g + 0.114 * b > 150 else (255, 255, 255)
