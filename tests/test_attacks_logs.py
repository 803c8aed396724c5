"""Gradio's tracebacks and the log's rate limit (issue 30, attack 8): 100 bad Gradio calls
added 200 KB to the log in 9 s, since Gradio prints each failed call's traceback to stderr
(``traceback.print_exc()``) instead of logging it.
"""

from __future__ import annotations

import io
import logging
import re
import time
import traceback

import httpx

from backend.access.log_limits import LoggedStream, RateLimitedLog
from tests.test_processes import Server


def test_a_hundred_bad_gradio_calls_leave_a_few_tracebacks_and_one_dropped_line(tmp_path):
    log_path = tmp_path / "server.log"
    server = Server(tmp_path / "data", log_path, AUDIO_AGENT_LOG_LINES_PER_MINUTE="5")
    try:
        with httpx.Client(base_url=server.base, timeout=30) as http:
            named = http.get("/gradio_api/info").json()["named_endpoints"]
            endpoint = next(name for name, api in named.items() if api["parameters"])
            before = log_path.stat().st_size
            for _ in range(100):  # each without its inputs: Gradio prints a traceback
                assert http.post(f"/gradio_api/run{endpoint}", json={"data": []}).status_code == 500
        deadline = time.monotonic() + 90
        while "dropped" not in log_path.read_bytes()[before:].decode() and (
            time.monotonic() < deadline
        ):
            time.sleep(0.5)
    finally:
        server.stop()
    grown = log_path.read_bytes()[before:].decode()
    tracebacks = grown.count("Traceback (most recent call last)")
    dropped = [int(n) for n in re.findall(r"dropped (\d+) log record", grown)]
    assert dropped, grown[-3000:]
    assert 1 <= tracebacks <= 10, grown[-3000:]  # 5 a minute (two minutes on a slow machine)
    assert tracebacks + sum(dropped) == 100
    assert len(grown) < 30_000, len(grown)  # it was 130-200 KB


def test_printed_tracebacks_are_one_record_each_and_go_through_the_limit():
    now = [0.0]
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    limiter = RateLimitedLog(3, clock=lambda: now[0])
    handler.addFilter(limiter)
    logger = logging.getLogger("tests.printed")
    logger.addHandler(handler)
    logger.propagate = False
    stream = LoggedStream(io.StringIO(), logger, logging.WARNING)
    try:
        for n in range(50):
            try:
                raise ValueError(f"bad value {n}\nsent by a visitor")
            except ValueError:
                traceback.print_exc(file=stream)  # as Gradio does, to sys.stderr
            now[0] += 0.1
        stream.write("a plain line\n")
        assert limiter.report() == 0  # the kind is not quiet yet
        now[0] += 10
        assert limiter.report() == 1
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert text.count("Traceback (most recent call last)") == 3
    assert "sent by a visitor" in text  # the exception's whole message is in its record
    assert "a plain line" in text
    assert "dropped 47 log record(s) of tests.printed (ERROR)" in text
