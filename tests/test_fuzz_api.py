"""Property-based fuzzing of the HTTP API from its own OpenAPI schema (schemathesis).

Every operation gets generated requests (valid and invalid bodies, path ids, query values)
over real HTTP on a loopback server; none may answer 5xx or take longer than its timeout.
The examples are bounded so the whole run stays well under a minute.
"""

from __future__ import annotations

import io
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile as sf

schemathesis = pytest.importorskip("schemathesis")  # requirements-dev.txt
from hypothesis import HealthCheck, settings  # noqa: E402

from app import create_app  # noqa: E402
from backend.host.settings import Settings  # noqa: E402
from tests.servers import serve  # noqa: E402
from tests.test_api import scripted_registry  # noqa: E402

REQUEST_TIMEOUT_S = 20  # a hang shows as a timeout, which fails the test


# The app is built when the module is imported so that its schema is a plain (not lazy)
# schemathesis schema: `schemathesis.pytest.from_fixture` reads a private pytest attribute
# (`Function._nodeid`) that pytest 9.2 removed, so the lazy form fails on a fresh install.
_DATA_DIR = tempfile.TemporaryDirectory(prefix="audio-agent-fuzz-")
_REGISTRY, _ = scripted_registry()
_APP = create_app(
    Settings(data_dir=Path(_DATA_DIR.name), warm_up=False), registry=_REGISTRY, ui=False
)
schema = schemathesis.openapi.from_dict(_APP.openapi())


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[str, dict[str, str]]]:
    with serve(_APP) as base:
        # Something to find: a conversation with a recording, so ids are not all unknown.
        buffer = io.BytesIO()
        sf.write(buffer, np.zeros(16_000), 16_000, format="WAV")
        with httpx.Client(base_url=base, timeout=30) as http:
            conv = http.post("/api/conversations", json={"title": "fuzz"}).json()["id"]
            audio = http.post("/api/audio", files={"file": ("s.wav", buffer.getvalue())})
            cookie = "; ".join(f"{k}={v}" for k, v in http.cookies.items())  # their owner
        yield base, {"conversation_id": conv, "audio_id": audio.json()["id"], "cookie": cookie}
    _APP.state.service.close()


@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same examples every run: a failure reproduces
)
def test_no_server_errors_and_no_hangs(case, live):  # type: ignore[no-untyped-def]
    base, known = live
    if case.path_parameters:
        # Half the time aim at ids that exist, so the handlers behind the 404 run too.
        for key in case.path_parameters:
            if key in known and zlib.crc32(repr(case.body).encode()) % 2:
                case.path_parameters[key] = known[key]
    headers = {"Cookie": known["cookie"]}  # as the owner of those ids
    response = case.call(base_url=base, timeout=REQUEST_TIMEOUT_S, headers=headers)
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:500]}"
    )
