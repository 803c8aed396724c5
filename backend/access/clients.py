"""Who is calling, by network address: limits that hold when a visitor drops their cookie.

Every limit per owner can be dodged by sending no cookie (each such request is a new visitor),
so new visitors, uploads and runs are also limited per client address:

- ``client_address(scope)``: the address a request came from, as a limit key. Behind a
  reverse proxy (or a Hugging Face Space) the peer is the proxy; its ``X-Forwarded-For`` is
  read by uvicorn's ``ProxyHeadersMiddleware`` only when the peer is one of
  ``AUDIO_AGENT_TRUSTED_PROXIES`` (``install_proxy_headers``), walking the header from the
  right past trusted proxies, so a client cannot name its own address. IPv6 addresses count
  by their /64 network (one subscriber's allocation).
- ``RateWindow``: how much of something each key did in the last ``window_s`` seconds.
- ``ClientDirectory``: the last address each owner was seen at (the page's events reach the
  service with the owner only).

Everything here lives in one process: several processes behind a load balancer each count
their own share (see docs/hosting.md).
"""

from __future__ import annotations

import ipaddress
import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

UNKNOWN = "unknown"
SCOPE_ADDRESS = "audio_agent.address"
LOOPBACK_PROXIES = ["127.0.0.1", "::1"]
# On a Space the app is reached only through Hugging Face's proxy, from its private network.
SPACE_PROXIES = [*LOOPBACK_PROXIES, "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"]
MAX_KEYS = 100_000  # per window / directory: the oldest keys are forgotten past it


def _env_number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be 0 or more")
    return value


@dataclass(frozen=True)
class ClientLimits:
    """Limits per client address (0 turns one off). ``max_runs`` None: a quarter of the
    server's run capacity (running + queue; 2 at least), the fairness rule of
    ``backend.runs.manager``."""

    new_visitors_per_hour: int = 60  # AUDIO_AGENT_NEW_VISITORS_PER_HOUR
    uploads_per_hour: int = 120  # AUDIO_AGENT_ADDRESS_UPLOADS_PER_HOUR
    upload_mb_per_hour: float = 2000  # AUDIO_AGENT_ADDRESS_UPLOAD_MB_PER_HOUR
    runs_per_minute: int = 60  # AUDIO_AGENT_ADDRESS_RUNS_PER_MINUTE
    max_runs: int | None = None  # AUDIO_AGENT_ADDRESS_MAX_RUNS: running or queued at once

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ClientLimits:
        d = cls()
        max_runs = (env.get("AUDIO_AGENT_ADDRESS_MAX_RUNS") or "").strip()
        return cls(
            new_visitors_per_hour=int(
                _env_number(env, "AUDIO_AGENT_NEW_VISITORS_PER_HOUR", d.new_visitors_per_hour)
            ),
            uploads_per_hour=int(
                _env_number(env, "AUDIO_AGENT_ADDRESS_UPLOADS_PER_HOUR", d.uploads_per_hour)
            ),
            upload_mb_per_hour=_env_number(
                env, "AUDIO_AGENT_ADDRESS_UPLOAD_MB_PER_HOUR", d.upload_mb_per_hour
            ),
            runs_per_minute=int(
                _env_number(env, "AUDIO_AGENT_ADDRESS_RUNS_PER_MINUTE", d.runs_per_minute)
            ),
            max_runs=int(_env_number(env, "AUDIO_AGENT_ADDRESS_MAX_RUNS", 0)) if max_runs else None,
        )


def trusted_proxies_from_env(env: Mapping[str, str]) -> list[str]:
    """``AUDIO_AGENT_TRUSTED_PROXIES`` (comma-separated addresses or networks); default the
    loopback addresses (a reverse proxy on the same machine), and on a Space its private
    network as well."""
    raw = env.get("AUDIO_AGENT_TRUSTED_PROXIES")
    if raw is not None and raw.strip():
        proxies = [p.strip() for p in raw.split(",") if p.strip()]
        if "*" in proxies:
            raise ValueError(
                "AUDIO_AGENT_TRUSTED_PROXIES='*' would let any client name its own address; "
                "list the proxies' addresses or networks instead."
            )
        for proxy in proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(
                    f"AUDIO_AGENT_TRUSTED_PROXIES: {proxy!r} is not an IP address or network."
                ) from None
        return proxies
    return list(SPACE_PROXIES if env.get("SPACE_ID") else LOOPBACK_PROXIES)


def install_proxy_headers(app: Any, trusted: list[str]) -> None:
    """uvicorn's ``X-Forwarded-For``/``-Proto`` handling, for these proxies only."""
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=trusted)


def address_key(host: str | None) -> str:
    """The limit key of an address: the address itself, an IPv6 address's /64 network."""
    if not host:
        return UNKNOWN
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host[:64]
    if ip.version == 6 and ip.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip.ipv4_mapped or ip) if ip.version == 6 else str(ip)


def client_address(scope: Mapping[str, Any]) -> str:
    """The limit key of the client of an ASGI request (after the proxy headers)."""
    client = scope.get("client")
    return address_key(client[0] if client else None)


class RateWindow:
    """The amount each key used in the last ``window_s`` seconds, and how long until a
    limit frees up. Thread-safe; at most ``MAX_KEYS`` keys (the least recent go)."""

    def __init__(self, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s = window_s
        self.clock = clock
        self._events: OrderedDict[str, deque[tuple[float, float]]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, key: str) -> deque[tuple[float, float]]:
        events = self._events.get(key)
        if events is None:
            events = self._events[key] = deque()
            while len(self._events) > MAX_KEYS:
                self._events.popitem(last=False)
        else:
            self._events.move_to_end(key)
        cutoff = self.clock() - self.window_s
        while events and events[0][0] <= cutoff:
            events.popleft()
        return events

    def used(self, key: str) -> float:
        with self._lock:
            return sum(amount for _, amount in self._recent(key))

    def add(self, key: str, amount: float = 1.0) -> None:
        with self._lock:
            self._recent(key).append((self.clock(), amount))

    def wait_s(self, key: str, limit: float, incoming: float = 1.0) -> int | None:
        """Seconds until ``incoming`` more fits under ``limit`` (None: it fits now; a limit
        of 0 is no limit)."""
        if limit <= 0:
            return None
        with self._lock:
            events = self._recent(key)
            used = sum(amount for _, amount in events)
            if used + incoming <= limit:
                return None
            now = self.clock()
            for at, amount in events:  # oldest first: when enough has aged out
                used -= amount
                if used + incoming <= limit:
                    return max(1, math.ceil(at + self.window_s - now))
            return max(1, math.ceil(self.window_s))

    def take(self, key: str, limit: float, incoming: float = 1.0) -> int | None:
        """``wait_s`` and, when it fits, count it at once (one step: no race between two)."""
        if limit <= 0:
            self.add(key, incoming)
            return None
        with self._lock:
            events = self._recent(key)
            if sum(amount for _, amount in events) + incoming <= limit:
                events.append((self.clock(), incoming))
                return None
        return self.wait_s(key, limit, incoming) or 1


class ClientDirectory:
    """The address each owner was last seen at (bounded, least recent forgotten)."""

    def __init__(self) -> None:
        self._addresses: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def saw(self, owner: str, address: str) -> None:
        with self._lock:
            self._addresses[owner] = address
            self._addresses.move_to_end(owner)
            while len(self._addresses) > MAX_KEYS:
                self._addresses.popitem(last=False)

    def address_of(self, owner: str) -> str:
        with self._lock:
            return self._addresses.get(owner, UNKNOWN)


def wait_text(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    return f"{(seconds + 59) // 60} minutes"
