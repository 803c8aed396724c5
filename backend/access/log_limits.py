"""The log stays small whatever visitors do: every line goes through one rate limit.

``RateLimitedLog`` lets through at most ``per_minute`` records of one kind (same logger, same
message template) a minute. What it holds back is told in one line per stretch: "dropped N
log records of <logger> ...", once that kind has been quiet for ``QUIET_S`` or its minute
is over, so a burst always leaves a trace of its size.

``rate_limit_logs`` puts it on every handler the process has (the root's, uvicorn's, any
other logger's) and sends what is written to ``sys.stderr`` and ``sys.stdout`` through
loggers too (``LoggedStream``), for libraries print rather than log: Gradio prints the
traceback of every failed call with ``traceback.print_exc()``, so 100 bad calls wrote
200 KB in 9 s. A printed traceback is one record, of the kind of its code location.
"""

from __future__ import annotations

import atexit
import logging
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

QUIET_S = 5.0  # a held-back kind quiet this long is reported (else at its minute's end)
WINDOW_S = 60.0
MAX_KINDS = 10_000
DROPPED = (
    "dropped %d log record(s) of %s (%s) in the last %.0f s: each came after %d of its kind "
    "within a minute (AUDIO_AGENT_LOG_LINES_PER_MINUTE)"
)


@dataclass
class _Window:
    start: float
    count: int = 1
    held: int = 0
    last_held: float = 0.0
    level: str = ""


class RateLimitedLog(logging.Filter):
    """At most ``per_minute`` records of one kind (logger, and message template or the
    record's ``limit_key``) a minute; what is held back is reported by ``report`` (every
    second, from a thread of its own once something was held) as one line per kind."""

    def __init__(
        self,
        per_minute: int,
        clock: Callable[[], float] = time.monotonic,
        emit: Callable[[str, str, tuple[Any, ...]], None] | None = None,
    ) -> None:
        super().__init__()
        self.per_minute = per_minute
        self.clock = clock
        self.emit = emit or _log_warning
        self._windows: dict[tuple[str, str], _Window] = {}
        self._held: set[tuple[str, str]] = set()
        self._lock = threading.RLock()  # (a signal handler may report: see rate_limit_logs)
        self._reporter: threading.Thread | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, getattr(record, "limit_key", None) or str(record.msg)[:200])
        now = self.clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window.start >= WINDOW_S:
                held = window.held if window is not None else 0
                if len(self._windows) >= MAX_KINDS:
                    self._windows.clear()
                    self._held.clear()
                self._windows[key] = _Window(now)
                self._held.discard(key)
                if held:  # not reported yet: said here instead
                    record.msg = f"{record.msg} (and {held} more like it dropped before this)"
                return True
            window.count += 1
            if window.count <= self.per_minute:
                return True
            window.held += 1
            window.last_held = now
            window.level = record.levelname
            self._held.add(key)
            if self._reporter is None:
                self._reporter = threading.Thread(
                    target=self._report_every_second, name="log-limit", daemon=True
                )
                self._reporter.start()
        return False

    def report(self, everything: bool = False) -> int:
        """Log one line per kind whose held-back records are due (quiet for ``QUIET_S``, or
        their minute is over; ``everything``: all, as the process ends); how many lines."""
        now = self.clock()
        quiet_s, window_s = (0.0, 0.0) if everything else (QUIET_S, WINDOW_S)
        due = []
        with self._lock:
            for key in list(self._held):
                window = self._windows.get(key)
                if window is None or not window.held:
                    self._held.discard(key)
                elif now - window.last_held >= quiet_s or now - window.start >= window_s:
                    due.append((key[0], window.level, window.held, now - window.start))
                    window.held = 0
                    self._held.discard(key)
        for name, level, held, span in due:  # not under the lock: these pass the filter too
            self.emit(name, DROPPED, (held, name, level, span, self.per_minute))
        return len(due)

    def _report_every_second(self) -> None:
        while True:
            time.sleep(1.0)
            try:
                self.report()
            except Exception:  # noqa: BLE001 - reporting must not end the reports
                continue


def _log_warning(name: str, message: str, args: tuple[Any, ...]) -> None:
    logging.getLogger(None if name == "root" else name).warning(message, *args)


# -- what is printed, logged ------------------------------------------------------------------
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+, in \S+')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*)(:|$)")
MAX_BLOCK_LINES = 400
MAX_LINE_CHARS = 8192


class LoggedStream:
    """A text stream (``sys.stderr``, ``sys.stdout``) whose lines go to ``logger`` instead:
    each line a record, all of one kind (what is printed has no template to tell kinds
    apart, and may hold what a visitor sent); a traceback (from its "Traceback (most recent
    call last):" to its exception) one record whose kind is where it happened. What the
    logging itself
    writes (a handler on this very stream) goes straight to the stream. Anything else is
    the stream's (``fileno``, ``isatty``, ``encoding`` ...)."""

    def __init__(self, stream: TextIO, logger: logging.Logger, level: int) -> None:
        self.stream = stream
        self.logger = logger
        self.level = level
        self._local = threading.local()  # per thread: its partial line, its traceback

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def write(self, text: str) -> int:
        local = self._local
        if getattr(local, "busy", False):  # written by a handler while logging a line
            return self.stream.write(text)
        pending = getattr(local, "pending", "") + text
        *lines, pending = pending.split("\n")
        if len(pending) > MAX_LINE_CHARS:
            lines.append(pending)
            pending = ""
        local.pending = pending
        for index, line in enumerate(lines):
            if self._line(line.rsplit("\r", 1)[-1]):  # (a progress bar: its last state)
                # A traceback's exception is written at once: the lines after it in this
                # write are the rest of its message.
                self._end_block(lines[index + 1 :])
                break
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.stream.flush()

    def _line(self, line: str) -> bool:
        """Log a line, or keep it in the traceback it belongs to; True when it is the line
        of the traceback's exception."""
        block: list[str] | None = getattr(self._local, "block", None)
        if block is not None:
            block.append(line)
            # its frames are indented; the first line that is not is its exception's
            ended = line[:1] not in ("", " ", "\t") and not line.startswith("Traceback")
            return ended or len(block) >= MAX_BLOCK_LINES
        if line.startswith("Traceback (most recent call last):"):
            self._local.block = [line]
        elif line.strip():
            self._log(self.level, line, "a line")
        return False

    def _end_block(self, rest: list[str]) -> None:
        block = self._local.block + [line for line in rest if line.strip()]
        self._local.block = None
        self._log(logging.ERROR, "\n".join(block), _traceback_kind(block))

    def _log(self, level: int, text: str, kind: str) -> None:
        self._local.busy = True
        try:
            # the text as it is (no %-formatting); its kind for the rate limit
            self.logger.log(level, "%s", text, extra={"limit_key": kind})
        finally:
            self._local.busy = False


def _traceback_kind(block: list[str]) -> str:
    """Where a traceback happened: its first and last frames and its exception's type (not
    its message: that may hold what a visitor sent)."""
    frames = [m.group(0).strip() for line in block if (m := _FRAME.match(line))]
    raised = next((line for line in block[1:] if line[:1] not in ("", " ", "\t")), "")
    error = m.group(1) if (m := _EXCEPTION.match(raised)) else ""
    return f"Traceback {frames[0] if frames else ''} .. {frames[-1] if frames else ''} {error}"


# -- wiring -----------------------------------------------------------------------------------
def _handlers() -> list[logging.Handler]:
    """Every handler of every logger of the process, and the last resort."""
    loggers: list[Any] = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    handlers = [h for lg in loggers for h in getattr(lg, "handlers", [])]
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    return list(dict.fromkeys(handlers))


def _report_at_exit(limiter: RateLimitedLog) -> None:
    """What is held back when the process ends is reported too: at a normal exit (before
    logging shuts down: atexit runs last first), and at SIGTERM or SIGINT, which uvicorn
    raises again once it has shut down (its handlers give way to these, then)."""
    atexit.register(limiter.report, everything=True)
    if threading.current_thread() is not threading.main_thread():
        return
    for number in (signal.SIGTERM, signal.SIGINT):
        previous = signal.getsignal(number)

        def report_then(signum: int, frame: Any, previous: Any = previous) -> None:
            limiter.report(everything=True)
            if callable(previous):
                previous(signum, frame)
                return
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
            signal.raise_signal(signum)

        signal.signal(number, report_then)


def rate_limit_logs(per_minute: int, *, streams: bool = True) -> RateLimitedLog:
    """Put one ``RateLimitedLog`` on every handler (call after uvicorn configured its
    logging), and with ``streams`` send what is printed to stderr and stdout through the
    loggers "stderr" and "stdout" (and so through it)."""
    limiter = RateLimitedLog(per_minute)
    _report_at_exit(limiter)
    for handler in _handlers():
        if not any(isinstance(f, RateLimitedLog) for f in handler.filters):
            handler.addFilter(limiter)
    if streams:
        if not isinstance(sys.stderr, LoggedStream):
            sys.stderr = LoggedStream(sys.stderr, logging.getLogger("stderr"), logging.WARNING)
        if not isinstance(sys.stdout, LoggedStream):
            sys.stdout = LoggedStream(sys.stdout, logging.getLogger("stdout"), logging.INFO)
    return limiter
