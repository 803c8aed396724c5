"""The users of a private deployment (``AUDIO_AGENT_USERS``): a file read again when it changes.

``AUDIO_AGENT_USERS`` names a file of ``user:password-or-hash`` lines, or holds such pairs
inline. ``Users.get`` looks at the file (its size, time and inode) at most once a
``USERS_CHECK_S`` and reads it again when it changed, so adding a user or changing a password
needs no restart; a changed file that does not parse is logged and the users before it stay.
Entries below OWASP strength (plain text, weak hash parameters) are logged at each reading.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from backend.access.passwords import warm_up, weakness

log = logging.getLogger("audio_agent.auth")

USERS_CHECK_S = 1.0  # the users file is looked at (stat) at most this often


def parse_users(value: str) -> dict[str, str]:
    """``AUDIO_AGENT_USERS``: a path to a file of ``user:password-or-hash`` lines, or such
    pairs inline, separated by newlines or commas. Blank lines and ``#`` comments skipped."""
    path = Path(value).expanduser()
    text = path.read_text() if path.is_file() else value.replace(",", "\n")
    users: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, spec = line.partition(":")
        if not sep or not name.strip() or not spec:
            raise ValueError(
                f"AUDIO_AGENT_USERS line {number}: expected 'user:password' or 'user:<hash>'."
            )
        users[name.strip()] = spec.strip()
    if not users:
        raise ValueError("AUDIO_AGENT_USERS names no users.")
    return users


class Users:
    """The users of ``AUDIO_AGENT_USERS``. A users file is read again when it changes (its
    size, time or inode), at most once a ``USERS_CHECK_S``; a changed file that does not
    parse is logged and the users before it are kept."""

    def __init__(self, value: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.value = value
        self.path = Path(value).expanduser() if Path(value).expanduser().is_file() else None
        self.clock = clock
        self._users = parse_users(value)
        self._stamp = self._file_stamp()
        self._checked = clock()
        self._lock = threading.Lock()
        self._warn_weak()
        warm_up()  # the hash unknown names are checked against: made now, not at a login

    def _file_stamp(self) -> tuple[int, int, int] | None:
        if self.path is None:
            return None
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _warn_weak(self) -> None:
        for name, spec in self._users.items():
            problem = weakness(spec)
            if problem:
                log.warning(
                    "AUDIO_AGENT_USERS: user %r has %s; make a hash with "
                    "'python -m backend.access.auth hash %s'.",
                    name,
                    problem,
                    name,
                )

    def _refresh(self) -> None:
        if self.path is None or self.clock() - self._checked < USERS_CHECK_S:
            return
        with self._lock:
            self._checked = self.clock()
            stamp = self._file_stamp()
            if stamp is None or stamp == self._stamp:
                return
            try:
                users = parse_users(str(self.path))
            except (OSError, ValueError) as exc:
                log.error("AUDIO_AGENT_USERS changed but cannot be read (%s); keeping the "
                          "users as they were.", exc)  # fmt: skip
                return
            self._users, self._stamp = users, stamp
            log.info("AUDIO_AGENT_USERS read again: %d user(s).", len(users))
            self._warn_weak()

    def get(self, name: str) -> str | None:
        self._refresh()
        return self._users.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None
