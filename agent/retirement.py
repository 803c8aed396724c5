"""A model's announced end: the shutdown date and the successor its provider names
(catalogue ``shutdown``, ``successor``, ``successor_source``), said the same way by the
catalogue (API and UI) and the doctor."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any


def shutdown_of(settings: Mapping[str, Any]) -> date | None:
    raw = settings.get("shutdown")
    if not raw:
        return None
    try:
        return raw if isinstance(raw, date) else date.fromisoformat(str(raw))
    except ValueError:
        return None


def notice(settings: Mapping[str, Any], today: date | None = None, when: str = "") -> str | None:
    """ "shuts down 2027-01-20 (48 days left); move to gpt-audio-1.5", or None. ``when``:
    a shutdown date the provider gave elsewhere (its model list), used when the catalogue
    names none."""
    ends = shutdown_of(settings) or shutdown_of({"shutdown": when})
    if ends is None:
        return None
    left = (ends - (today or date.today())).days
    successor = settings.get("successor")
    move = f"; move to {successor}" if successor else "; pick its replacement"
    if left < 0:
        return f"shut down on {ends.isoformat()}{move}"
    return f"shuts down {ends.isoformat()} ({left} days left){move}"
