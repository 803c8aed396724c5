"""Shared fixtures. Any real network call inside a test fails the test.

Sockets may connect only to loopback: the tests' own local servers (the app, fake
provider endpoints) are fine, anything else raises.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("DO_NOT_TRACK", "1")
# The machine counts as offline: tools that need a network (web search) are listed as
# unavailable without a name lookup (agent.network); tests that want them say "on".
os.environ.setdefault("AUDIO_AGENT_NETWORK", "off")
# Keys from the developer's shell must not switch on real providers inside tests.
for _var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "DEEPSEEK_API_KEY",
             "MOONSHOT_API_KEY", "OPENROUTER_API_KEY", "TAVILY_API_KEY"):  # fmt: skip
    os.environ.pop(_var, None)

FIXTURES = Path(__file__).parent / "fixtures"


class NetworkBlocked(RuntimeError):
    pass


# Every blocked attempt is remembered, so a test fails even when the code under test
# catches the exception (an SDK turning it into a connection error, say).
BLOCKED: list[str] = []


def _block(what: str) -> NetworkBlocked:
    BLOCKED.append(what)
    return NetworkBlocked(f"test tried to reach the network: {what}")


def _is_loopback(address: object) -> bool:
    if isinstance(address, str | bytes):
        return True  # a unix socket path
    if not (isinstance(address, tuple) and address):
        return False
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_loopback(address):
        raise _block(repr(address))
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _is_loopback(address):
        raise _block(repr(address))
    return _real_connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    if host not in (None, "localhost", "127.0.0.1", "::1", "0.0.0.0") and not str(host).startswith(
        "127."
    ):
        raise _block(f"name lookup of {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


@pytest.fixture(autouse=True, scope="session")
def _block_network() -> None:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = _guarded_getaddrinfo  # type: ignore[assignment]


@pytest.fixture(autouse=True)
def _no_network_attempts():
    BLOCKED.clear()
    yield
    attempts = list(BLOCKED)
    BLOCKED.clear()
    assert not attempts, f"the test tried to reach the network: {attempts}"


@pytest.fixture
def tone_wav(tmp_path: Path) -> Path:
    """A 1 s 440 Hz tone at 16 kHz: real audio for loop tests that need a file."""
    t = np.arange(16_000) / 16_000
    path = tmp_path / "tone.wav"
    sf.write(path, 0.3 * np.sin(2 * np.pi * 440 * t), 16_000)
    return path
