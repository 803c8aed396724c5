"""``python app.py`` listens before the app is built (``backend.host.boot``): a start page and
503s meanwhile, then the app with its own lifespan; and the local tools' warm-up state in
``/api/health`` (``agent.warm_state``)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
from fastapi import FastAPI

from agent import warm_state
from backend.host.boot import Booting
from tests.servers import serve

DEADLINE_S = 120.0


def small_app(events: list[str]) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        events.append("startup")
        yield
        events.append("shutdown")

    app = FastAPI(lifespan=lifespan)

    @app.get("/api/health")
    def health() -> dict[str, Any]:
        return {"status": "ok"}

    @app.get("/")
    def page() -> dict[str, str]:
        return {"page": "the app's"}

    return app


def wait_until(check: Any) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("not within the deadline")


def test_the_server_answers_while_the_app_is_built_then_hands_over() -> None:
    release, events = threading.Event(), []

    def build() -> FastAPI:
        assert release.wait(DEADLINE_S)
        return small_app(events)

    booting = Booting(build)
    with serve(booting) as base:
        page = httpx.get(base + "/", headers={"Accept": "text/html,*/*"})
        assert page.status_code == 503
        assert "starting" in page.text and "/api/health" in page.text
        assert page.headers["retry-after"] == "1"
        assert "default-src 'none'" in page.headers["content-security-policy"]
        health = httpx.get(base + "/api/health")
        assert health.status_code == 503 and health.json()["status"] == "starting"
        assert httpx.get(base + "/c/abc", headers={"Accept": "text/html"}).status_code == 503
        assert events == []
        release.set()
        wait_until(lambda: httpx.get(base + "/api/health").status_code == 200)
        assert events == ["startup"]  # the app's lifespan ran before it answered
        assert httpx.get(base + "/").json() == {"page": "the app's"}
        assert booting.ready_after_s is not None
    assert events == ["startup", "shutdown"]


def test_a_build_that_fails_is_said_and_stops_the_server() -> None:
    stopped = threading.Event()

    def build() -> FastAPI:
        raise RuntimeError("no database here")

    booting = Booting(build, on_failure=stopped.set)
    with serve(booting):
        assert stopped.wait(DEADLINE_S)
    assert isinstance(booting.failed, RuntimeError)


def test_a_tool_shows_the_least_ready_of_its_models() -> None:
    state = warm_state.WarmState()
    assert state.snapshot()["started"] is False
    state.begin()
    state.set("whisper_asr", warm_state.READY)
    state.set("vad", warm_state.WARMING)
    state.set("music", warm_state.FAILED, "no model file")
    state.set("signal", warm_state.READY)
    now = state.snapshot()
    assert now["tools"]["transcribe"] == "warming up"  # whisper ready, its VAD not yet
    assert now["tools"]["speech_activity"] == "warming up"
    assert now["tools"]["music_analysis"] == "failed"
    assert now["reasons"] == {"music": "no model file"}
    assert now["tools"]["signal_stats"] == "ready"
    assert now["tools"]["sound_events"] == "waiting"
    assert now["done"] is False
    state.finish()
    assert state.snapshot()["done"] is True
