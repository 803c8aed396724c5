"""Audio chat over any OpenAI-compatible endpoint with ``input_audio`` parts.

One adapter for OpenAI's audio models and for vLLM serving Qwen2.5-Omni, Voxtral, Audio
Flamingo 3 or Qwen3-Omni: a base_url and a model per configured tool. Audio longer than
the tool's ``max_audio_s`` is split into windows, each asked separately with its time range
stated; nothing is silently truncated. The entry says what the model accepts:
``system_prompt_with_audio = false`` (Voxtral before tokenizer v13 rejects a system message
next to audio) puts the instructions into the user turn; ``audio_formats``,
``supports_temperature`` and ``max_tokens_param`` likewise.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import openai

from agent.audio import to_wav_bytes
from agent.events import Usage
from agent.openai_client import cached_tokens, classify_error, make_client
from agent.remote import ModelConfig
from agent.tools.base import ToolContext, ToolError, ToolResult
from agent.tools.remote_common import (
    DEFAULT_AUDIO_PROMPT,
    call_remote,
    question_description,
    question_parameters,
    range_note,
)
from agent.tools.windows import select, time_range, windows


class OpenAIAudioChatTool:
    local = False

    def __init__(self, config: ModelConfig, client: openai.AsyncOpenAI | None = None) -> None:
        self.config = config
        self.name = config.name
        self.label = config.label or config.model
        self.model = config.model
        self.description = config.description or question_description(config.model)
        self.parameters: dict[str, Any] = question_parameters()
        self.max_audio_s = float(config.options.get("max_audio_s", 0) or 0) or None
        self.system_prompt = config.options.get("system_prompt", DEFAULT_AUDIO_PROMPT)
        self.timeout_s = config.budget_s()  # one call with all its retries
        self.client = client or make_client(config)

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        question = str(arguments.get("question") or "").strip()
        if not question:
            raise ToolError("Give a question to ask about the audio.")
        duration = len(ctx.samples) / ctx.sample_rate
        start, end = time_range(arguments, duration)
        parts = [(start + a, start + b) for a, b in windows(end - start, self.max_audio_s)]
        answers = await asyncio.gather(
            *(self._ask(ctx, question, a, b, duration) for a, b in parts)
        )
        usage = Usage()
        for _, part_usage, _ in answers:
            usage = usage + part_usage
        audio_tokens = sum(tokens for _, _, tokens in answers)
        if len(parts) == 1:
            output = answers[0][0]
        else:
            output = (
                f"The audio was split into {len(parts)} windows of at most "
                f"{self.max_audio_s:.0f} s; answers per window:\n"
                + "\n".join(
                    f"[{a:.1f}–{b:.1f} s] {text}"
                    for (a, b), (text, _, _) in zip(parts, answers, strict=True)
                )
            )
        return ToolResult(
            output=output,
            model=self.model,
            usage=usage,
            cost=self.config.prices.cost(usage, audio_tokens=audio_tokens, requests=len(parts)),
            data={
                "answers": [
                    {"start": a, "end": b, "text": text}
                    for (a, b), (text, _, _) in zip(parts, answers, strict=True)
                ],
                "windows": len(parts),
                "spans": [
                    {"start": a, "end": b, "label": f"window {i + 1}"}
                    for i, (a, b) in enumerate(parts)
                ]
                if len(parts) > 1
                else [],
            },
        )

    async def _ask(
        self, ctx: ToolContext, question: str, start: float, end: float, duration: float
    ) -> tuple[str, Usage, int]:
        if "wav" not in self.config.audio_formats:
            raise ToolError(
                f"'{self.name}' accepts only {', '.join(self.config.audio_formats)} audio; "
                'this app sends wav. Add "wav" to audio_formats if the server takes it.'
            )
        audio = base64.b64encode(to_wav_bytes(select(ctx.samples, start, end))).decode()
        text = question + range_note(start, end, duration)
        messages: list[dict[str, Any]] = []
        if self.system_prompt and self.config.system_prompt_with_audio:
            messages.append({"role": "system", "content": self.system_prompt})
        elif self.system_prompt:
            text = f"{self.system_prompt}\n\n{text}"
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": text},
                    {"type": "input_audio", "input_audio": {"data": audio, "format": "wav"}},
                ],
            }
        )
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        options = self.config.options
        if "modalities" in options:
            request["modalities"] = options["modalities"]
        if "max_tokens" in options:
            request[self.config.max_tokens_param] = options["max_tokens"]
        if "temperature" in options and self.config.supports_temperature:
            request["temperature"] = options["temperature"]

        async def call():
            return await self.client.chat.completions.create(**request)

        response = await call_remote(call, self.config, classify_error)
        if not response.choices:
            raise ToolError(f"{self.model} returned no answer.")
        answer = (response.choices[0].message.content or "").strip()
        usage = Usage(audio_seconds=round(end - start, 3))
        audio_tokens = 0
        if response.usage:
            usage.input_tokens = response.usage.prompt_tokens or 0
            usage.output_tokens = response.usage.completion_tokens or 0
            usage.cache_read_tokens = cached_tokens(response.usage)
            details = getattr(response.usage, "prompt_tokens_details", None)
            audio_tokens = int(getattr(details, "audio_tokens", 0) or 0) if details else 0
        return answer or "(empty answer)", usage, audio_tokens
