"""Server-sent events of a streamed response, parsed per the spec by httpx-sse: one parser
for every test that reads the API's or Gradio's event streams."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
from httpx_sse import EventSource


def sse_frames(response: httpx.Response) -> Iterator[dict[str, str]]:
    """Each event as ``{"event", "data"}`` (and ``"id"`` when the server sent one), as it
    arrives; a response that is not ``text/event-stream`` raises ``httpx_sse.SSEError``."""
    for sse in EventSource(response).iter_sse():
        frame = {"event": sse.event, "data": sse.data}
        if sse.id:
            frame["id"] = sse.id
        yield frame


def read_sse(response: httpx.Response) -> list[dict[str, str]]:
    """Every event of the stream, read to its end."""
    return list(sse_frames(response))
