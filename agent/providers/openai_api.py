"""OpenAI and OpenAI-compatible servers (vLLM, Ollama, DeepSeek, OpenRouter, Moonshot, ...):
planners over Chat Completions or the Responses API, audio tools over chat with audio parts
or ``/v1/audio/transcriptions``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent.providers.base import Provider, register_provider
from agent.remote import ModelConfig, RemoteError

if TYPE_CHECKING:
    from agent.planners.base import Planner
    from agent.tools.base import Tool


class OpenAIProvider(Provider):
    interfaces = ("audio_chat", "transcription")

    def __init__(self, name: str, *, price_id: str | None, responses: bool) -> None:
        super().__init__(name)
        self.price_id = price_id
        self.responses = responses  # its warm-up: the Responses API, else Chat Completions

    def planner(self, settings: Mapping[str, Any], config: ModelConfig) -> Planner:
        if settings.get("api") == "responses":
            from agent.planners.openai_responses import OpenAIResponsesPlanner

            return OpenAIResponsesPlanner(config)
        from agent.planners.openai_compat import OpenAICompatPlanner

        return OpenAICompatPlanner(config)

    def tool(self, settings: Mapping[str, Any], config: ModelConfig) -> Tool:
        if self.interface_of(settings) == "transcription":
            from agent.tools.transcribe import RemoteTranscribeTool

            return RemoteTranscribeTool(config)
        from agent.tools.openai_audio import OpenAIAudioChatTool

        return OpenAIAudioChatTool(config)

    def classify_error(self, exc: BaseException, config: ModelConfig) -> RemoteError:
        from agent.openai_client import classify_error

        return classify_error(exc, config)

    async def listed_models(self, config: ModelConfig) -> dict[str, str | None]:
        """``GET /v1/models``, with OpenAI's ``shutdown_date`` where it gives one."""
        from agent.openai_client import make_client

        client = make_client(config)
        found: dict[str, str | None] = {}
        page = await client.models.list()
        async for model in page:
            extra = getattr(model, "model_extra", None) or {}
            shutdown = getattr(model, "shutdown_date", None) or extra.get("shutdown_date")
            found[model.id] = str(shutdown) if shutdown else None
        return found

    async def warm_up(self) -> None:
        from agent.providers.openai_warm_up import CHAT_ENTRY, RESPONSES_ENTRY, round_trips

        await round_trips(RESPONSES_ENTRY if self.responses else CHAT_ENTRY)


# OpenAI itself (priced by model id); any server that speaks its API (priced by base URL)
register_provider(OpenAIProvider("openai", price_id="openai", responses=True))
register_provider(OpenAIProvider("openai_compatible", price_id=None, responses=False))
