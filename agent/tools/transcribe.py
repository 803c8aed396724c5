"""Speech-to-text over an OpenAI-compatible ``/v1/audio/transcriptions`` endpoint
(OpenAI's transcription models, vLLM serving Whisper or Voxtral).

Segment timestamps are requested (``verbose_json``) where the model gives them; set
``response_format = "json"`` in the catalogue for models that only return text.
Audio longer than ``max_audio_s`` (default 600 s, under the 25 MB upload limit) is sent
in windows cut at the quietest moment near each limit (not mid-word), whose segment times
are shifted back to the whole recording. The language is sent when known (the call's
``language`` or the entry's): vLLM's Whisper otherwise assumes English.
"""

from __future__ import annotations

import asyncio
from typing import Any

import openai

from agent.audio import to_wav_bytes
from agent.events import Usage
from agent.openai_client import classify_error, make_client
from agent.remote import ModelConfig
from agent.tools.base import ToolContext, ToolResult
from agent.tools.format import seconds_span
from agent.tools.remote_common import call_remote
from agent.tools.windows import quiet_windows, select


class RemoteTranscribeTool:
    local = False

    def __init__(self, config: ModelConfig, client: openai.AsyncOpenAI | None = None) -> None:
        self.config = config
        self.name = config.name
        self.label = config.label or f"Transcription ({config.model})"
        self.model = config.model
        self.description = config.description or (
            f"Transcribe the speech with {config.model}, with segment timestamps when available."
        )
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "language": {"type": "string", "description": "ISO-639-1 code, if known."},
                "prompt": {"type": "string", "description": "Spelling hints (names, terms)."},
            },
        }
        self.response_format = config.options.get("response_format", "verbose_json")
        self.max_audio_s = float(config.options.get("max_audio_s", 600))
        self.language = config.options.get("language")  # ISO-639-1, when all audio shares it
        self.timeout_s = config.budget_s()
        self.client = client or make_client(config)

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        duration = len(ctx.samples) / ctx.sample_rate
        parts = quiet_windows(ctx.samples, self.max_audio_s, ctx.sample_rate)
        results = await asyncio.gather(*(self._one(ctx, arguments, a, b) for a, b in parts))
        segments = [seg for part in results for seg in part["segments"]]
        text = " ".join(part["text"] for part in results if part["text"]).strip()
        language = next((p["language"] for p in results if p["language"]), None)
        usage = Usage(audio_seconds=round(duration, 3))
        for part in results:
            usage = usage + part["usage"]
        if not text:
            output = "No speech was recognised in this recording."
        else:
            output = f'Transcript ({self.model}{", " + language if language else ""}): "{text}"'
            if segments:
                output += "\nSegments:\n" + "\n".join(
                    f"[{seconds_span(s['start'], s['end'])}] {s['text']}" for s in segments
                )
        return ToolResult(
            output=output,
            model=self.model,
            usage=usage,
            cost=self.config.prices.cost(usage, requests=len(parts)),
            data={
                "text": text,
                "language": language,
                "segments": segments,
                "spans": [
                    {"start": s["start"], "end": s["end"], "label": s["text"][:40]}
                    for s in segments
                ],
            },
        )

    async def _one(
        self, ctx: ToolContext, arguments: dict[str, Any], start: float, end: float
    ) -> dict[str, Any]:
        wav = to_wav_bytes(select(ctx.samples, start, end, ctx.sample_rate))
        request: dict[str, Any] = {
            "model": self.model,
            "file": ("audio.wav", wav, "audio/wav"),
            "response_format": self.response_format,
        }
        if self.response_format == "verbose_json":
            request["timestamp_granularities"] = ["segment"]
        language = arguments.get("language") or self.language
        if language:
            request["language"] = str(language)
        if arguments.get("prompt"):
            request["prompt"] = str(arguments["prompt"])

        async def call():
            return await self.client.audio.transcriptions.create(**request)

        response = await call_remote(call, self.config, classify_error)
        if isinstance(response, str):  # response_format "text"
            return {"text": response.strip(), "segments": [], "language": None, "usage": Usage()}
        segments = [
            {
                "start": round(float(_get(s, "start")) + start, 2),
                "end": round(float(_get(s, "end")) + start, 2),
                "text": str(_get(s, "text")).strip(),
            }
            for s in (getattr(response, "segments", None) or [])
        ]
        usage = Usage()
        raw_usage = getattr(response, "usage", None)
        if raw_usage is not None and getattr(raw_usage, "type", "tokens") == "tokens":
            usage = Usage(
                input_tokens=int(getattr(raw_usage, "input_tokens", 0) or 0),
                output_tokens=int(getattr(raw_usage, "output_tokens", 0) or 0),
            )
        return {
            "text": (response.text or "").strip(),
            "segments": segments,
            "language": language_of(response),
            "usage": usage,
        }


def language_of(response: Any) -> str | None:
    """The spoken language as the model reports it: ``language`` (Whisper's
    ``verbose_json``) or ``languages`` (gpt-transcribe: a list of ``{"code": ...}``, empty
    when it could not tell; several when the speech switches language)."""
    language = getattr(response, "language", None)
    if language:
        return str(language)
    codes = [
        str(_get(item, "code"))
        for item in getattr(response, "languages", None) or []
        if _get(item, "code")
    ]
    return ", ".join(codes) or None


def _get(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)
