"""Serving beyond one laptop: the Host header check, the open-host warning, the share tunnel.

- ``AUDIO_AGENT_ALLOWED_HOSTS`` (comma-separated host names, ``*`` for any): the Host header
  every request must carry (Starlette's ``TrustedHostMiddleware``; others get 400). Default:
  the loopback names when bound to loopback (a web page elsewhere cannot reach the app through
  DNS rebinding), any host otherwise.
- Bound to anything but loopback without login, every visitor can spend the configured
  provider keys: ``warn_if_open`` says so in the log.
- ``python app.py --share``: Gradio's public share tunnel, which needs outbound internet;
  ``check_share_reachable`` fails fast with a clear message when there is none.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Any

from starlette.middleware.trustedhost import TrustedHostMiddleware

from backend.host.settings import Settings

log = logging.getLogger("audio_agent.hosting")

LOOPBACK_NAMES = ["127.0.0.1", "localhost", "::1", "[::1]"]
SHARE_SERVER_HOST = "api.gradio.app"  # where Gradio asks for a share tunnel
SHARE_CHECK_TIMEOUT_S = 5.0


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(settings: Settings) -> list[str]:
    if settings.allowed_hosts:
        return list(settings.allowed_hosts)
    if is_loopback(settings.host):
        return [*LOOPBACK_NAMES, "testserver"]  # testserver: Starlette's TestClient
    return ["*"]


def open_host_warning(settings: Settings) -> str | None:
    """The warning for a non-loopback bind without login, else None."""
    if is_loopback(settings.host) or settings.users:
        return None
    return (
        f"Serving on {settings.host} without login (AUDIO_AGENT_USERS unset): every visitor "
        "who can reach this address can ask questions with the configured provider keys and "
        "spend on them. Set AUDIO_AGENT_USERS for a private deployment."
    )


def install_host_check(app: Any, settings: Settings) -> None:
    """Warn about an open bind; check the Host header (added last: the outermost layer)."""
    warning = open_host_warning(settings)
    if warning:
        log.warning(warning)
    hosts = allowed_hosts(settings)
    if hosts != ["*"]:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=hosts)


class ShareUnavailable(RuntimeError):
    pass


def check_share_reachable(timeout: float = SHARE_CHECK_TIMEOUT_S) -> None:
    """Raise ShareUnavailable (with what to do instead) unless Gradio's share server answers."""
    try:
        with socket.create_connection((SHARE_SERVER_HOST, 443), timeout=timeout):
            return
    except Exception as exc:  # no route, no DNS, refused, timed out, blocked
        raise ShareUnavailable(
            f"--share needs outbound internet to reach Gradio's share server "
            f"({SHARE_SERVER_HOST}:443), and it could not be reached ({exc}). Run without "
            "--share and serve the app yourself (see docs/hosting.md), or retry with internet."
        ) from exc


SHARE_HOSTS = ["*.gradio.live"]  # the Host header of requests through the share tunnel


def open_share_tunnel(server: Any, settings: Settings) -> None:
    """Once uvicorn listens, open Gradio's share tunnel to it and print the public URL."""
    import secrets
    import time

    from gradio import networking

    while not server.started:
        if getattr(server, "should_exit", False):
            return
        time.sleep(0.1)
    warning = open_host_warning(settings) or (
        None
        if settings.users
        else "The share link is public and there is no login (AUDIO_AGENT_USERS unset): "
        "anyone with the link can ask questions with the configured provider keys."
    )
    if warning:
        log.warning(warning)
    local = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    try:
        url = networking.setup_tunnel(
            local_host=local,
            local_port=settings.port,
            share_token=secrets.token_urlsafe(32),
            share_server_address=None,
            share_server_tls_certificate=None,
        )
    except Exception as exc:  # the app keeps serving locally
        log.error("Could not open the share tunnel (%s); serving locally only.", exc)
        return
    print(f"Public share link (temporary, up to a week): {url}", flush=True)
