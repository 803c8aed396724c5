"""Credentials never reach the database, logs, traces or exports.

Keys (from the environment) and a ``user:password@`` in a base URL: the URL is stripped before
any SDK sees it, the pair goes out as ``Authorization: Basic``, and every error text about the
model is redacted. Checked end to end: a real app on SQLite with an OpenAI-compatible planner
at a local fake server whose error bodies echo the secrets back (as some servers do), then the
database files, the captured logs (every logger at DEBUG), the SSE stream and the export are
searched for every form of every secret.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import httpx
import pytest

from agent.planners.base import ChatMessage, PlannerError, TextDelta
from agent.planners.gemini import GeminiPlanner
from agent.registry import Registry
from agent.remote import ModelConfig, RetryPolicy, strip_credentials, url_credentials
from app import create_app
from backend.host.settings import Settings
from tests import fake_gemini as fg
from tests.fake_openai import FakeOpenAI, Reply
from tests.servers import serve

KEY_ENV = "CRED_TEST_OPENAI_KEY"
KEY = "sk-test-CREDKEY-0123456789abcdef"
USER = "proxy-user"
PASSWORD = "pw-S3CRET/+:@x"  # characters that must be percent-encoded in a URL
ENCODED_PASSWORD = "pw-S3CRET%2F%2B%3A%40x"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
SECRETS = [KEY, PASSWORD, ENCODED_PASSWORD, "S3CRET", BASIC, "CREDKEY"]

CATALOGUE = """
[[planner]]
name = "remote_gpt"
provider = "openai_compatible"
label = "Remote GPT behind a proxy"
model = "gpt-fake"
base_url = "{url}"
key_env = "{key_env}"
max_retries = 0

[[tool]]
name = "signal_stats"
provider = "local"
"""


def test_url_credentials_are_split_off() -> None:
    url = f"https://{USER}:{ENCODED_PASSWORD}@models.example:8443/v1?x=1"
    assert strip_credentials(url) == "https://models.example:8443/v1?x=1"
    assert url_credentials(url) == (USER, PASSWORD)
    assert strip_credentials("https://[::1]:8000/v1") == "https://[::1]:8000/v1"
    assert strip_credentials("https://u@[::1]:8000/v1") == "https://[::1]:8000/v1"
    assert url_credentials("https://host/v1/a@b") == (None, None)  # '@' in the path only
    assert strip_credentials("https://host/v1/a@b") == "https://host/v1/a@b"
    assert strip_credentials(None) is None
    cfg = ModelConfig(name="x", provider="openai_compatible", base_url=url, key_env=KEY_ENV,
                      env={KEY_ENV: KEY})  # fmt: skip
    assert cfg.url() == "https://models.example:8443/v1?x=1"
    assert cfg.auth_headers() == {"Authorization": f"Basic {BASIC}"}
    assert {KEY, PASSWORD, ENCODED_PASSWORD, BASIC} <= set(cfg.secrets())
    plain = ModelConfig(name="y", provider="openai_compatible", base_url="http://h/v1")
    assert plain.auth_headers() == {} and plain.url() == "http://h/v1"


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_no_credential_reaches_db_logs_stream_or_export(
    tmp_path: Path, tone_wav: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, the SDKs' and httpx's included
    fake = FakeOpenAI()
    with serve(fake.app) as fake_base:
        host = fake_base.removeprefix("http://")
        catalogue = tmp_path / "models.toml"
        catalogue.write_text(
            CATALOGUE.format(url=f"http://{USER}:{ENCODED_PASSWORD}@{host}/v1", key_env=KEY_ENV)
        )
        registry = Registry(catalogue, env={KEY_ENV: KEY})
        settings = Settings(data_dir=tmp_path / "data", warm_up=False)
        app = create_app(settings, registry=registry, ui=False)
        # first an answer, then a server that echoes the credentials in its error message
        fake.chat.append(Reply(text="A steady tone. <answer>Tone</answer>"))
        echo = f"bad request from {USER}:{PASSWORD} with key {KEY} (Authorization: Basic {BASIC})"
        fake.chat.append(Reply(status=400, error=echo))
        streams = []
        with serve(app) as base, httpx.Client(base_url=base, timeout=60) as http:
            conv = http.post("/api/conversations", json={}).json()["id"]
            with open(tone_wav, "rb") as fh:
                audio_id = http.post("/api/audio", files={"file": ("t.wav", fh)}).json()["id"]
            for question in ("What is it?", "And now?"):
                body = {"question": question, "audio_id": audio_id, "planner": "remote_gpt",
                        "tools": ["signal_stats"]}  # fmt: skip
                with http.stream("POST", f"/api/conversations/{conv}/ask", json=body) as resp:
                    assert resp.status_code == 200
                    streams.append("\n".join(resp.iter_lines()))
            export = http.get(f"/api/conversations/{conv}/export").text
            detail = http.get(f"/api/conversations/{conv}").json()
            catalogue_json = http.get("/api/catalogue").text
        app.state.service.store.close()

    # the requests went to the stripped URL with the pair as a Basic header
    assert len(fake.requests) == 2
    assert fake.requests[0].headers["authorization"] == f"Basic {BASIC}"
    statuses = [run["status"] for m in detail["messages"] for run in m.get("runs", [])]
    assert statuses == ["ok", "failed"]
    failed = detail["messages"][-1]["runs"][0]
    assert "bad request" in failed["error"] and "[redacted]" in failed["error"]

    db_bytes = b"".join(p.read_bytes() for p in (tmp_path / "data").glob("audio_agent.sqlite3*"))
    assert b"bad request" in db_bytes  # the error is stored ...
    for secret in SECRETS:  # ... without any secret
        assert secret.encode() not in db_bytes, secret
    assert _leaks(export) == [] and "bad request" in export
    assert _leaks(streams[1]) == [] and "bad request" in streams[1]
    assert _leaks(catalogue_json) == []
    logs = "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)
    assert f"{host}/v1/chat/completions" in logs  # the HTTP client's request log was captured
    assert _leaks(logs) == []


async def test_gemini_gets_the_url_pair_as_a_basic_header_and_redacts_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    server = fg.FakeGemini()
    with serve(server.app) as url:
        host = url.removeprefix("http://")
        cfg = ModelConfig(
            name="gemini",
            provider="gemini",
            model="gemini-2.5-flash",
            key_env="GEMINI_API_KEY",
            base_url=f"http://{USER}:{ENCODED_PASSWORD}@{host}",
            timeout_s=10,
            retry=RetryPolicy(attempts=1, base_delay_s=0.01),
        )
        server.queue(
            fg.turn(fg.text("<answer>Dog</answer>"), meta=fg.usage(10, 2)),
            fg.error(500, f"upstream saw {USER}:{PASSWORD} and {BASIC}"),
        )
        planner = GeminiPlanner(cfg)
        messages = [ChatMessage("user", "What animal?")]
        chunks = [c async for c in planner.stream_turn(messages, [])]
        assert any(isinstance(c, TextDelta) for c in chunks)
        with pytest.raises(PlannerError) as info:
            [c async for c in planner.stream_turn(messages, [])]
    sent = server.generate_requests[0].headers
    assert sent["authorization"] == f"Basic {BASIC}" and sent["x-goog-api-key"] == KEY
    assert "upstream saw" in str(info.value) and _leaks(str(info.value)) == []


def test_database_password_is_not_in_start_up_errors_or_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tests.servers import free_port

    caplog.set_level(logging.DEBUG)
    url = f"postgresql+psycopg://app:{ENCODED_PASSWORD}@127.0.0.1:{free_port()}/audio"
    settings = Settings(data_dir=tmp_path / "data", db_url=url, warm_up=False)
    with pytest.raises(Exception) as info:  # nothing listens there
        create_app(settings, registry=Registry(), ui=False)
    text = "".join(
        str(e) + repr(e) for e in (info.value, info.value.__cause__, info.value.__context__)
    )
    assert "127.0.0.1" in text and _leaks(text) == []
    assert _leaks("\n".join(f"{r.getMessage()} {r.args!r}" for r in caplog.records)) == []
