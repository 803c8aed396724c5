"""Google's Gemini API (``google-genai``): the Gemini planner and the Gemini audio tool."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent.providers.base import Provider, register_provider
from agent.remote import ModelConfig, RemoteError

if TYPE_CHECKING:
    from agent.planners.base import Planner
    from agent.tools.base import Tool


class GeminiProvider(Provider):
    name = "gemini"
    requires = (("google.genai", "google-genai"),)
    interfaces = ("gemini_audio", "audio_chat")  # every tool entry gets the Gemini adapter
    price_id = "google"

    def planner(self, settings: Mapping[str, Any], config: ModelConfig) -> Planner:
        from agent.planners.gemini import GeminiPlanner

        return GeminiPlanner(config)

    def tool(self, settings: Mapping[str, Any], config: ModelConfig) -> Tool:
        from agent.tools.gemini_audio import GeminiAudioTool

        return GeminiAudioTool(config)

    def classify_error(self, exc: BaseException, config: ModelConfig) -> RemoteError:
        from agent.gemini_client import classify_error

        return classify_error(exc, config)

    async def listed_models(self, config: ModelConfig) -> dict[str, str | None]:
        from agent.gemini_client import make_client

        client = make_client(config)
        found: dict[str, str | None] = {}
        pager = await client.aio.models.list()
        async for model in pager:
            found[(model.name or "").removeprefix("models/")] = None
        return found

    async def warm_up(self) -> None:
        """Only when ``google-genai`` is in use (the registry imported it for a configured
        entry): about 0.2 s on its first call."""
        if "google.genai" not in sys.modules:
            return
        from google import genai
        from google.genai import types

        from agent.planners.gemini import GeminiPlanner
        from agent.sdk_warm_up import WARM_UP_URL, http_lib, two_turns

        transport = {"transport": http_lib.MockTransport(_reply)}
        options = types.HttpOptions(
            base_url=WARM_UP_URL, async_client_args=transport, client_args=transport
        )
        client = genai.Client(vertexai=False, api_key="warm-up", http_options=options)
        entry = {"name": "warm-up", "provider": "gemini", "model": "warm-up"}
        await two_turns(GeminiPlanner(ModelConfig.from_entry(entry, {}), client=client))


def _reply(request: Any) -> Any:
    from agent.sdk_warm_up import http_lib, sse

    if request.url.path.endswith(":streamGenerateContent"):
        return sse([_GEMINI], done="")
    return http_lib.Response(200, json=_GEMINI)


# -- Gemini: text and a function call, with usage ------------------------------------------

_GEMINI = {
    "candidates": [{"content": {"role": "model", "parts": [
        {"text": "warm"}, {"functionCall": {"name": "f", "args": {}}}]}, "finishReason": "STOP"}],
    "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2,
                      "cachedContentTokenCount": 0, "thoughtsTokenCount": 0},
    "modelVersion": "warm-up",
}  # fmt: skip


register_provider(GeminiProvider())
