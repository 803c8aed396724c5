"""The server's own limits: slow clients are cut, connections are capped, logs stay small.

uvicorn waits forever for the headers of a new connection, and takes every connection it is
offered until the process runs out of file descriptors (then nothing is served, and each
refused ``accept`` is logged). ``GuardedHTTPProtocol`` (uvicorn's HTTP protocol with more
rules) closes:

- a connection whose request headers are not complete ``header_timeout_s`` after it opened
  (or after its previous response), as nginx's ``client_header_timeout`` does;
- a new connection past ``max_connections`` open ones, or past
  ``max_connections_per_address`` from one address (a trusted proxy is exempt: every visitor
  comes through it), at once and without a response.

Request bodies are timed by ``backend.access.body_limits.BodyLimitMiddleware`` (``BodyPace``): a
body that stops for ``body_timeout_s``, or runs slower than ``min_body_kbps`` on average after its
first ``body_timeout_s``, is answered 408 and the connection closed.

The log is rate-limited by ``backend.access.log_limits`` (``log_lines_per_minute``).
``raise_open_files_limit`` lifts the soft descriptor limit to the hard one at start-up.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import resource
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from backend.access.clients import address_key

log = logging.getLogger("audio_agent.server")


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be more than 0")
    return value


@dataclass(frozen=True)
class ServerLimits:
    header_timeout_s: float = 10.0  # AUDIO_AGENT_HEADER_TIMEOUT_S
    body_timeout_s: float = 30.0  # AUDIO_AGENT_BODY_TIMEOUT_S
    min_body_kbps: float = 8.0  # AUDIO_AGENT_MIN_BODY_KBPS (average, after body_timeout_s)
    max_connections: int = 1000  # AUDIO_AGENT_MAX_CONNECTIONS
    max_connections_per_address: int = 100  # AUDIO_AGENT_MAX_CONNECTIONS_PER_ADDRESS
    log_lines_per_minute: int = 20  # AUDIO_AGENT_LOG_LINES_PER_MINUTE (of one kind)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ServerLimits:
        d = cls()
        return cls(
            header_timeout_s=_number(env, "AUDIO_AGENT_HEADER_TIMEOUT_S", d.header_timeout_s),
            body_timeout_s=_number(env, "AUDIO_AGENT_BODY_TIMEOUT_S", d.body_timeout_s),
            min_body_kbps=_number(env, "AUDIO_AGENT_MIN_BODY_KBPS", d.min_body_kbps),
            max_connections=int(_number(env, "AUDIO_AGENT_MAX_CONNECTIONS", d.max_connections)),
            max_connections_per_address=int(
                _number(
                    env,
                    "AUDIO_AGENT_MAX_CONNECTIONS_PER_ADDRESS",
                    d.max_connections_per_address,
                )
            ),
            log_lines_per_minute=int(
                _number(env, "AUDIO_AGENT_LOG_LINES_PER_MINUTE", d.log_lines_per_minute)
            ),
        )


def _is_trusted(host: str | None, networks: list[Any]) -> bool:
    if not host:
        return False
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(ip in net for net in networks)


def guarded_http_protocol(limits: ServerLimits, trusted_proxies: list[str]) -> type:
    """uvicorn's HTTP protocol class with the header timeout and the connection caps."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    networks = [ipaddress.ip_network(p, strict=False) for p in trusted_proxies]
    open_per_address: dict[str, int] = {}

    class GuardedHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        _refused = False
        _counted: str | None = None
        _header_timer: asyncio.TimerHandle | None = None
        _cycle_seen: Any = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            peer = transport.get_extra_info("peername")
            host = peer[0] if isinstance(peer, tuple) and peer else None
            key = address_key(host)
            exempt = _is_trusted(host, networks)
            if len(self.server_state.connections) >= limits.max_connections or (
                not exempt and open_per_address.get(key, 0) >= limits.max_connections_per_address
            ):
                self._refused = True
                log.warning(
                    "refused a connection from %s: %d open (at most %d, %d per address)",
                    key,
                    len(self.server_state.connections),
                    limits.max_connections,
                    limits.max_connections_per_address,
                )
                transport.abort()
                return
            if not exempt:
                open_per_address[key] = open_per_address.get(key, 0) + 1
                self._counted = key
            super().connection_made(transport)
            self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._refused:
                return
            self._release()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            super().data_received(data)
            if self.transport.get_protocol() is not self:  # upgraded to a websocket
                self._release()
            elif self.cycle is not self._cycle_seen:  # a request's headers are complete
                self._cycle_seen = self.cycle
                self._cancel_header_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self.cycle is None or self.cycle.response_complete:  # waiting for the next
                self._cycle_seen = self.cycle
                self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            self._cancel_header_timer()
            self._header_timer = self.loop.call_later(limits.header_timeout_s, self._header_timeout)

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timeout(self) -> None:
            self._header_timer = None
            if self.transport.is_closing() or self.transport.get_protocol() is not self:
                return
            if self.cycle is not None and not self.cycle.response_complete:
                return  # a request is being served
            log.warning(
                "closed a connection from %s: no complete request headers in %g s",
                self._counted or "a trusted proxy",
                limits.header_timeout_s,
            )
            self.transport.close()

        def _release(self) -> None:
            self._cancel_header_timer()
            if self._counted is not None:
                left = open_per_address.get(self._counted, 1) - 1
                if left > 0:
                    open_per_address[self._counted] = left
                else:
                    open_per_address.pop(self._counted, None)
                self._counted = None

    return GuardedHTTPProtocol


def raise_open_files_limit() -> tuple[int, int]:
    """Soft descriptor limit up to the hard one (the connection cap needs the room)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft, hard


DESCRIPTORS_KEPT = 256  # the app at rest (~30-100), an accept burst (100), files and models


def fit_to_descriptors(limits: ServerLimits) -> ServerLimits:
    """Lift the descriptor limit, and lower the connection cap below it if need be: a server
    out of descriptors serves nobody."""
    soft, _ = raise_open_files_limit()
    room = max(16, soft - DESCRIPTORS_KEPT)
    if limits.max_connections <= room:
        return limits
    log.warning(
        "AUDIO_AGENT_MAX_CONNECTIONS=%d is more than this process may open (%d descriptors); "
        "using %d",
        limits.max_connections,
        soft,
        room,
    )
    return dataclasses.replace(
        limits,
        max_connections=room,
        max_connections_per_address=min(limits.max_connections_per_address, room),
    )


def uvicorn_options(limits: ServerLimits, trusted_proxies: list[str]) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.Config``: the guarded protocol; proxy headers are
    read by the app itself (``backend.access.clients.install_proxy_headers``), from trusted
    proxies only."""
    return {
        "http": guarded_http_protocol(limits, trusted_proxies),
        "proxy_headers": False,
        "timeout_keep_alive": 5,
        "h11_max_incomplete_event_size": 16 * 1024,
    }
