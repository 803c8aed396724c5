"""``python -m agent doctor`` against the strict fakes with fake keys: for every planner a
real two-turn exchange through the adapter a run uses (a tool call, its result sent back
with whatever reasoning or signature the provider requires, an answer), for every audio
tool one call on a one-second clip; per entry: reachable, listed, the exchange or the
provider's own error, the price, the shutdown date. Without network: "cannot reach".
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from agent import doctor
from agent.registry import Registry
from tests import fake_gemini as fg
from tests.fake_openai import Reply, ResponsesReply, Strict
from tests.provider_kit import GEMINI_KEY, KEY, KEY_ENV, gemini_fake, openai_fake
from tests.servers import free_port, serve

MODELS = {
    "reasoner": Strict(reasoning=True),
    "m": Strict(),
    "ds": Strict(flavor="deepseek", thinking=True),
    "qwen-no-parser": Strict(flavor="vllm", tool_parser=False),
}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)


def catalogue(tmp_path: Path, openai_url: str, gemini_url: str, ears_url: str = "") -> Path:
    path = tmp_path / "models.toml"
    path.write_text(
        f"""
[[planner]]
name = "sol"
provider = "openai"
api = "responses"
model = "reasoner"
base_url = "{openai_url}"
key_env = "{KEY_ENV}"
supports_temperature = false

[[planner]]
name = "old"
provider = "openai_compatible"
model = "m"
base_url = "{openai_url}"
key_env = "{KEY_ENV}"

[[planner]]
name = "thinker"
provider = "openai_compatible"
model = "ds"
base_url = "{openai_url}"
key_env = "{KEY_ENV}"
thinking = true

[[planner]]
name = "gone"
provider = "openai_compatible"
model = "gpt-9-imaginary"
base_url = "{openai_url}"
key_env = "{KEY_ENV}"

[[planner]]
name = "gem"
provider = "gemini"
model = "gemini-3.8-flash"
base_url = "{gemini_url}"
key_env = "GEMINI_API_KEY"

[[tool]]
name = "ears"
provider = "openai_compatible"
interface = "audio_chat"
model = "m"
base_url = "{ears_url or openai_url}"
key_env = "{KEY_ENV}"

[[tool]]
name = "nokey"
provider = "openai"
interface = "transcription"
model = "gpt-transcribe"
key_env = "UNSET_KEY_FOR_DOCTOR"
"""
    )
    return path


def planner_script(body: dict[str, Any]) -> Reply:
    """What the fake chat models answer, whichever check asks first (they run at once)."""
    messages = body["messages"]
    if any("input_audio" in json.dumps(m) for m in messages):
        return Reply(text="A tone.")
    if messages[-1]["role"] == "tool":
        return Reply(text=f"The code is {doctor.CHECK_CODE}.")
    thinks = MODELS[body["model"]].thinking  # OpenAI's own models send no reasoning here
    reasoning = "The user wants the tool called." if thinks else ""
    return Reply(reasoning=reasoning, tool_calls=[("lookup_code", "{}")])


async def test_every_planner_makes_a_tool_round_trip_and_every_audio_tool_one_call(tmp_path):
    """The doctor made one text turn ("Reply with OK"): a planner whose second turn the
    provider refuses (DeepSeek without its reasoning_content) passed as working."""
    with (
        openai_fake(MODELS, shutdown={"m": "2027-01-20"}) as (server, url),
        gemini_fake(models=["gemini-3.8-flash"]) as (gserver, gurl),
    ):
        server.chat_fn = planner_script
        server.responses.extend(
            [ResponsesReply(summary="Calling it.", calls=[("lookup_code", "{}")]),
             ResponsesReply(text="4711")]
        )  # fmt: skip
        gserver.queue(
            fg.turn(fg.call("lookup_code", {}, call_id="c1", signature=b"sig-1")),
            fg.turn(fg.text("4711")),
        )
        checks = {
            c.name: c
            for c in await doctor.run_checks(Registry(catalogue(tmp_path, url, gurl)), timeout_s=5)
        }
    for name in ("sol", "thinker", "gem"):
        assert checks[name].status == "works", checks[name]
        assert checks[name].exchange == "tool round trip ok" and checks[name].reachable
    assert checks["old"].status == "shuts_down" and checks["old"].shutdown_date == "2027-01-20"
    assert checks["old"].exchange == "tool round trip ok" and checks["old"].offered is True
    assert checks["gone"].status == "not_offered" and checks["gone"].offered is False
    assert checks["ears"].exchange == "1 s clip ok"
    assert checks["nokey"].status == "skipped" and "UNSET_KEY_FOR_DOCTOR" in checks["nokey"].detail
    assert checks["sol"].price.startswith("$") or checks["sol"].price == "unknown"
    assert checks["gem"].price == "$0.75/$3.75 per MTok"  # genai-prices, today's price
    # the second turns carried what each provider requires
    thinker = [b for b in server.chat_bodies() if b["model"] == "ds"]
    assert thinker[-1]["messages"][2]["reasoning_content"] == "The user wants the tool called."
    sent_back = gserver.generate_requests[-1].json["contents"][1]["parts"][0]
    assert sent_back["functionCall"]["name"] == "lookup_code" and "thoughtSignature" in sent_back
    assert server.refused == [] and gserver.refused == []
    table = doctor.table(list(checks.values()))
    assert "tool round trip ok" in table and "shuts down 2027-01-20" in table


async def test_a_refused_round_trip_is_the_providers_own_sentence(tmp_path):
    """A vLLM server started without a tool parser: the error names the flags to add."""
    path = tmp_path / "models.toml"
    with openai_fake(MODELS) as (server, url):
        path.write_text(
            f'[[planner]]\nname = "qwen"\nprovider = "openai_compatible"\n'
            f'model = "qwen-no-parser"\nbase_url = "{url}"\nkey_env = "{KEY_ENV}"\n'
        )
        [check] = await doctor.run_checks(Registry(path), timeout_s=5)
    assert check.status == "error" and check.exchange == "failed"
    assert "--enable-auto-tool-choice and --tool-call-parser" in check.detail
    assert server.refused == ["vllm_auto_tool_choice"]


async def test_a_planner_that_never_calls_the_tool_is_reported(tmp_path):
    path = tmp_path / "models.toml"
    with openai_fake(MODELS) as (server, url):
        server.chat_fn = lambda body: Reply(text="4711")
        path.write_text(
            f'[[planner]]\nname = "shy"\nprovider = "openai_compatible"\nmodel = "m"\n'
            f'base_url = "{url}"\nkey_env = "{KEY_ENV}"\n'
        )
        [check] = await doctor.run_checks(Registry(path), timeout_s=5)
    assert check.status == "error" and "without calling the tool" in check.detail


async def test_a_bad_key_and_an_unreachable_server(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-wrong-0123456789")
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-whatever-0123456789")
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with openai_fake(MODELS) as (server, url):
        path = catalogue(tmp_path, url, dead.removesuffix("/v1"), ears_url=dead)
        checks = {c.name: c for c in await doctor.run_checks(Registry(path), timeout_s=3)}
    assert checks["old"].status == "error" and "put a valid key" in checks["old"].detail
    assert checks["ears"].status == "cannot_reach" and checks["gem"].status == "cannot_reach"
    assert checks["ears"].reachable is False and checks["ears"].exchange == doctor.NOT_TRIED
    assert server.chat_bodies() == []  # a rejected key stops at the model list


def test_without_network_every_entry_says_cannot_reach(monkeypatch, capsys):
    """The shipped catalogue against the real hosts on a machine without network: name
    lookups fail (as they do offline), so nothing ever leaves the machine."""

    def offline(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known (no network)")

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    for var in ("OPENAI_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY", "OPENROUTER_API_KEY",
                "MOONSHOT_API_KEY", "TAVILY_API_KEY"):  # fmt: skip
        monkeypatch.setenv(var, "sk-not-a-real-key-0123456789")
    status = doctor.main(as_json=True, timeout_s=3)
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)}
    assert status == 1
    for name in ("gpt", "deepseek", "gemini", "kimi", "openrouter", "gpt_audio", "gemini_audio"):
        assert checks[name]["status"] == "cannot_reach", checks[name]
        assert checks[name]["reachable"] is False and checks[name]["exchange"] == "not tried"
    assert checks["whisper"]["status"] == "skipped"
    assert (
        checks["web_search"]["status"] == "skipped"
        and "no network" in checks["web_search"]["detail"]
    )
    assert checks["kimi"]["price"].startswith("$")  # known from genai-prices, offline too


async def test_the_catalogue_check_over_http_and_the_check_models_list(tmp_path):
    """GET /api/catalogue?check=1 and the UI's "Check models" list use the same checks."""
    import httpx

    from app import create_app
    from backend.host.settings import Settings
    from frontend.catalogue import checks_markdown

    with openai_fake(MODELS) as (server, url), gemini_fake(models=["gemini-3.8-flash"]) as (
        gserver, gurl,
    ):  # fmt: skip
        server.chat_fn = planner_script
        server.responses.extend(
            [ResponsesReply(calls=[("lookup_code", "{}")]), ResponsesReply(text="4711")]
        )
        gserver.queue(
            fg.turn(fg.call("lookup_code", {}, call_id="c1", signature=b"s")),
            fg.turn(fg.text("4711")),
        )
        registry = Registry(catalogue(tmp_path, url, gurl))
        app = create_app(
            Settings(data_dir=tmp_path / "data", warm_up=False), registry=registry, ui=False
        )
        with serve(app) as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                plain = (await client.get("/api/catalogue")).json()
                checked = (await client.get("/api/catalogue", params={"check": 1})).json()
    assert "checks" not in plain and all("check" not in p for p in plain["planners"])
    by_name = {p["name"]: p for p in checked["planners"]}
    assert by_name["sol"]["check"]["status"] == "works"
    assert by_name["sol"]["check"]["exchange"] == "tool round trip ok"
    assert by_name["gone"]["check"]["status"] == "not_offered"
    text = checks_markdown(
        [doctor.Check("gpt", "planner", "gpt-6.1-sol", "shuts_down", "10 days left", "2026-12-11")]
    )
    assert "shuts down on 2026-12-11" in text and "**gpt**" in text and "10 days left" in text


async def test_shared_checks_run_once_per_ttl_for_every_visitor(monkeypatch) -> None:
    """The UI button and ?check=1 make real paid calls with the server's keys: concurrent and
    repeated requests within the ttl share one round of checks."""
    rounds: list[int] = []

    async def counted(registry, *, timeout_s):  # noqa: ANN001, ARG001
        rounds.append(1)
        await asyncio.sleep(0.05)
        return [doctor.Check(name="gpt", kind="planner", model="m", status="works")]

    monkeypatch.setattr(doctor, "run_checks", counted)
    shared = doctor.SharedChecks(ttl_s=60)
    results = await asyncio.gather(*(shared.get(None) for _ in range(5)))  # type: ignore[arg-type]
    assert len(rounds) == 1 and all(r[0].name == "gpt" for r in results)
    await shared.get(None)  # type: ignore[arg-type]
    assert len(rounds) == 1
    expired = doctor.SharedChecks(ttl_s=0)
    await expired.get(None)  # type: ignore[arg-type]
    await expired.get(None)  # type: ignore[arg-type]
    assert len(rounds) == 3


def test_the_check_row_says_what_was_checked() -> None:
    check = doctor.Check(
        "deepseek", "planner", "deepseek-flash", "works", reachable=True, offered=True,
        exchange="tool round trip ok", price="$0.15/$0.6 per MTok",
    )  # fmt: skip
    row = check.row()
    assert "works" in row and "yes" in row and "tool round trip ok" in row and "$0.15" in row
