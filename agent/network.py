"""Is there a network to reach a service on? Asked before offering a tool that needs one.

The answer is a name lookup of the service's host, made at most once per
``NETWORK_TTL_S`` per host and never waited on longer than ``LOOKUP_TIMEOUT_S``: on a
machine without network the lookup fails at once, so the catalogue says why the tool is
unavailable instead of offering a tool whose every call fails. ``AUDIO_AGENT_NETWORK=off``
declares the machine offline (no lookup at all; the tests set it), ``on`` skips the lookup.
"""

from __future__ import annotations

import concurrent.futures
import os
import socket
import threading
import time
from collections.abc import Mapping

NETWORK_VAR = "AUDIO_AGENT_NETWORK"
LOOKUP_TIMEOUT_S = 2.0
NETWORK_TTL_S = 300.0

_lock = threading.Lock()
_answers: dict[str, tuple[float, str | None]] = {}  # host -> (when, reason or None)
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="netcheck")


def offline_reason(host: str, env: Mapping[str, str] | None = None) -> str | None:
    """Why ``host`` cannot be reached from here, or None when it can (as far as a name
    lookup tells)."""
    setting = ((env or {}).get(NETWORK_VAR) or os.environ.get(NETWORK_VAR) or "").lower()
    if setting in ("off", "0", "false", "no"):
        return f"no network ({NETWORK_VAR}={setting})"
    if setting in ("on", "1", "true", "yes"):
        return None
    with _lock:
        known = _answers.get(host)
        if known is not None and time.monotonic() - known[0] < NETWORK_TTL_S:
            return known[1]
    future = _pool.submit(socket.getaddrinfo, host, 443)
    try:
        future.result(timeout=LOOKUP_TIMEOUT_S)
        reason = None
    except concurrent.futures.TimeoutError:
        reason = f"no network: looking up {host} took longer than {LOOKUP_TIMEOUT_S:g} s"
    except OSError as exc:
        reason = f"no network: cannot look up {host} ({exc.strerror or exc})"
    with _lock:
        _answers[host] = (time.monotonic(), reason)
    return reason
