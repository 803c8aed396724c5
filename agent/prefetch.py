"""Speculative work at a question's start, kept out of the planner's way.

When a question arrives, the loop decodes its recordings and starts the cheap local analyses
that most questions need (tools marked ``prefetch``), so that a planner asking for them later
finds them done. That work is speculative: it must never delay the planner's first token.

A planner on this machine (an LLM server on a loopback address: llama.cpp, Ollama, vLLM on the
same host) processes its prompt on the same cores at the start of every turn, and a prefetched
pitch track on two cores delayed its first token by 0.7 s. So for such a planner the
prefetched analyses wait until its first turn has ended or a tool call starts (the server then
idles while tools run); only decoding starts at once, which every tool needs first. A remote
planner, or the offline rule planner, which asks for its tools at once, lets them start at
once.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

T = TypeVar("T")


def shares_this_machine(planner: Any) -> bool:
    """True for an LLM planner whose server is on a loopback address (its prompt processing
    runs on this machine's cores)."""
    if not getattr(planner, "is_llm", False):
        return False
    config = getattr(planner, "config", None)
    url = config.url() if config is not None and hasattr(config, "url") else None
    host = urlsplit(url).hostname if url else None
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name other than localhost: another machine
        return False


class Prefetch:
    """Prefetched calls of one run, by cache key, started behind ``gate``."""

    def __init__(self, planner: Any) -> None:
        self.gate = asyncio.Event()
        self.waits_for_planner = shares_this_machine(planner)
        if not self.waits_for_planner:
            self.gate.set()
        self.calls: dict[str, asyncio.Future[Any]] = {}

    def open(self) -> None:
        """The planner's first turn is over (or a tool call starts): speculative work runs."""
        self.gate.set()

    def start(self, key: str, fetch: Callable[[], Awaitable[T]]) -> None:
        async def after_gate() -> T:
            await self.gate.wait()
            return await fetch()

        self.calls[key] = asyncio.ensure_future(after_gate())

    def claim(self, key: str) -> asyncio.Future[Any] | None:
        """The prefetched call under ``key`` (running or done), now the run's own."""
        future = self.calls.pop(key, None)
        if future is not None:
            self.open()  # it is asked for: it is no longer speculative
        return future

    def __contains__(self, key: str) -> bool:
        return key in self.calls

    def cancel(self) -> None:
        """Cancel prefetched calls nobody asked for."""
        for future in self.calls.values():
            future.cancel()
        self.calls.clear()
