"""What the provider tests share: the strict fakes on a local port, catalogue entries that
point at them, and a run through the real loop."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent.audio import AudioStore
from agent.remote import ModelConfig
from agent.run import RunRequest, run_question
from agent.tools.base import ToolContext
from tests import fake_gemini as fg
from tests.fake_openai import FakeOpenAI, Strict
from tests.servers import serve

KEY = "sk-test-PROVIDERS-0123456789"
KEY_ENV = "FAKE_OPENAI_KEY"
GEMINI_KEY = "AIzaFAKE-providers-0123456789"


def entry(url: str, name: str = "p", **options: Any) -> ModelConfig:
    """An OpenAI-compatible catalogue entry served by the fake at ``url``."""
    return ModelConfig.from_entry(
        {
            "name": name,
            "provider": options.pop("provider", "openai_compatible"),
            "model": options.pop("model", "m"),
            "base_url": url,
            "key_env": KEY_ENV,
            "max_retries": options.pop("max_retries", 2),
            "timeout_s": options.pop("timeout_s", 20),
            **options,
        }
    )


def gemini_entry(url: str, **options: Any) -> ModelConfig:
    return ModelConfig.from_entry(
        {"name": "gemini", "provider": "gemini", "model": options.pop("model", "gemini-3.8-flash"),
         "base_url": url, "key_env": "GEMINI_API_KEY", "max_retries": 1, "timeout_s": 20,
         **options}
    )  # fmt: skip


@contextlib.contextmanager
def openai_fake(
    models: dict[str, Strict], *, key: str | None = KEY, **kwargs: Any
) -> Iterator[tuple[FakeOpenAI, str]]:
    """The OpenAI-compatible fake with these models, requiring ``key`` (None: any, as a
    self-hosted server); yields (server, its /v1 URL)."""
    server = FakeOpenAI(key=key, models=models, **kwargs)
    with serve(server.app) as base:
        yield server, f"{base}/v1"


@contextlib.contextmanager
def gemini_fake(**kwargs: Any) -> Iterator[tuple[fg.FakeGemini, str]]:
    server = fg.FakeGemini(require_signatures=True, **kwargs)
    with serve(server.app) as url:
        yield server, url


def tool_ctx(store: AudioStore, path: Path) -> ToolContext:
    audio = store.add_file(path)
    return ToolContext(audio, store.samples(audio))


async def run(planner: Any, tools: list[Any], store: AudioStore, audio: Any, **kwargs: Any) -> list:
    """Every event of one question answered through the real loop."""
    request = RunRequest(kwargs.pop("question", "What is it?"), [audio], planner, tools, **kwargs)
    return [event async for event in run_question(request, store=store)]
