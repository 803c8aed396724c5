"""Small text formatting shared by the tools' readable outputs."""

from __future__ import annotations


def seconds_span(start: float, end: float) -> str:
    return f"{start:.2f}–{end:.2f} s"


def span_list(spans: list[tuple[float, float]], limit: int = 12) -> str:
    shown = ", ".join(seconds_span(a, b) for a, b in spans[:limit])
    more = len(spans) - limit
    return shown + (f" and {more} more" if more > 0 else "")
