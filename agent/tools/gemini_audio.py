"""Audio understanding with Gemini through the ``google-genai`` SDK.

The selected range is sent as 16 kHz wav: inline (``Part.from_bytes``) while the request
stays under the inline limit (20 MB by default, ``inline_limit_bytes`` in the catalogue),
else uploaded with the Files API, referenced by its URI and deleted afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from typing import Any

from google import genai
from google.genai import types

from agent.audio import to_wav_bytes
from agent.events import Usage
from agent.gemini_client import classify_error, make_client
from agent.remote import ModelConfig, RemoteError
from agent.tools.base import ToolContext, ToolError, ToolResult
from agent.tools.remote_common import (
    DEFAULT_AUDIO_PROMPT,
    call_remote,
    question_description,
    question_parameters,
    range_note,
)
from agent.tools.windows import select, time_range

DEFAULT_INLINE_LIMIT = 20 * 1024 * 1024
REQUEST_OVERHEAD_BYTES = 4096  # JSON framing, system instruction, options


class GeminiAudioTool:
    local = False

    def __init__(self, config: ModelConfig, client: genai.Client | None = None) -> None:
        self.config = config
        self.name = config.name
        self.label = config.label or config.model
        self.model = config.model
        self.description = config.description or question_description(config.model, "Gemini")
        self.parameters: dict[str, Any] = question_parameters()
        options = config.options
        self.system_prompt = options.get("system_prompt", DEFAULT_AUDIO_PROMPT)
        self.inline_limit = int(options.get("inline_limit_bytes", DEFAULT_INLINE_LIMIT))
        self.poll_s = float(options.get("file_poll_s", 1.0))
        self.timeout_s = config.budget_s()  # one call with all its retries
        self._client = client

    @property
    def client(self) -> genai.Client:
        if self._client is None:
            self._client = make_client(self.config)
        return self._client

    async def __call__(self, ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        question = str(arguments.get("question") or "").strip()
        if not question:
            raise ToolError("Give a question to ask about the audio.")
        duration = len(ctx.samples) / ctx.sample_rate
        start, end = time_range(arguments, duration)
        wav = await asyncio.to_thread(to_wav_bytes, select(ctx.samples, start, end))
        text = question + range_note(start, end, duration)
        try:
            client = self.client
        except RemoteError as exc:
            raise ToolError(str(exc)) from exc
        base64_size = (len(wav) + 2) // 3 * 4
        request_size = base64_size + len(text.encode()) + len(self.system_prompt.encode())
        uploaded: types.File | None = None
        try:
            if request_size + REQUEST_OVERHEAD_BYTES < self.inline_limit:
                audio = types.Part.from_bytes(data=wav, mime_type="audio/wav")
            else:
                uploaded = await self._retrying(lambda: self._upload(client, wav))
                audio = types.Part.from_uri(
                    file_uri=uploaded.uri or "", mime_type=uploaded.mime_type or "audio/wav"
                )
            response = await self._retrying(
                lambda: client.aio.models.generate_content(
                    model=self.model,
                    contents=[types.Content(role="user", parts=[types.Part(text=text), audio])],
                    config=self._request_config(),
                )
            )
        finally:
            if uploaded is not None and uploaded.name:
                await self._delete(client, uploaded.name)
        answer = _answer_text(response)
        if not answer:
            raise ToolError(f"{self.model} returned no answer{_why_empty(response)}.")
        usage = Usage(audio_seconds=round(end - start, 3))
        audio_tokens = 0
        if response.usage_metadata is not None:
            meta = response.usage_metadata
            usage.input_tokens = meta.prompt_token_count or 0
            usage.output_tokens = (meta.candidates_token_count or 0) + (
                meta.thoughts_token_count or 0
            )
            usage.cache_read_tokens = meta.cached_content_token_count or 0
            audio_tokens = sum(
                d.token_count or 0
                for d in meta.prompt_tokens_details or []
                if d.modality == types.MediaModality.AUDIO
            )
        return ToolResult(
            output=answer,
            model=self.model,
            usage=usage,
            cost=self.config.prices.cost(usage, audio_tokens=audio_tokens),
            data={
                "answer": answer,
                "uploaded": uploaded is not None,
                "start": round(start, 3),
                "end": round(end, 3),
            },
        )

    def _request_config(self) -> types.GenerateContentConfig:
        fields: dict[str, Any] = {
            "automatic_function_calling": types.AutomaticFunctionCallingConfig(disable=True),
        }
        if self.system_prompt:
            fields["system_instruction"] = self.system_prompt
        for option in ("temperature", "max_output_tokens"):
            if option in self.config.options:
                fields[option] = self.config.options[option]
        if "thinking_budget" in self.config.options:
            fields["thinking_config"] = types.ThinkingConfig(
                thinking_budget=int(self.config.options["thinking_budget"])
            )
        return types.GenerateContentConfig(**fields)

    async def _retrying(self, call):  # type: ignore[no-untyped-def]
        return await call_remote(call, self.config, classify_error)

    async def _upload(self, client: genai.Client, wav: bytes) -> types.File:
        """Upload with the Files API and wait until the file is ACTIVE."""
        file = await client.aio.files.upload(
            file=io.BytesIO(wav), config=types.UploadFileConfig(mime_type="audio/wav")
        )
        deadline = time.monotonic() + self.config.timeout_s
        while file.state == types.FileState.PROCESSING:
            if time.monotonic() > deadline:
                await self._delete(client, file.name or "")
                raise RemoteError(
                    f"The uploaded audio was still being processed after "
                    f"{self.config.timeout_s:.0f} s.",
                    kind="timeout",
                )
            await asyncio.sleep(self.poll_s)
            file = await client.aio.files.get(name=file.name or "")
        if file.state == types.FileState.FAILED:
            await self._delete(client, file.name or "")
            reason = file.error.message if file.error and file.error.message else "unknown"
            raise RemoteError(f"Gemini could not process the uploaded audio ({reason}).")
        if not file.uri:
            raise RemoteError("The Files API returned no URI for the uploaded audio.")
        return file

    async def _delete(self, client: genai.Client, name: str) -> None:
        """Best effort: an undeleted upload expires on its own after 48 hours."""
        if not name:
            return
        # cleanup must not hide the answer or the real error
        with contextlib.suppress(Exception):
            await client.aio.files.delete(name=name)


def _answer_text(response: types.GenerateContentResponse) -> str:
    if not response.candidates:
        return ""
    content = response.candidates[0].content
    return "".join(
        p.text for p in (content.parts if content else None) or [] if p.text and not p.thought
    ).strip()


def _why_empty(response: types.GenerateContentResponse) -> str:
    feedback = response.prompt_feedback
    if feedback is not None and feedback.block_reason:
        return f" (the prompt was blocked: {getattr(feedback.block_reason, 'value', '')})"
    if response.candidates and response.candidates[0].finish_reason:
        reason = response.candidates[0].finish_reason
        return f" (finish reason {getattr(reason, 'value', reason)})"
    return ""
