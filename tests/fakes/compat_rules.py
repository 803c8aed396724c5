"""The refusals of the OpenAI-compatible providers (DeepSeek, Kimi, OpenRouter, vLLM), as
users reported them."""

from __future__ import annotations

from typing import Any

from tests.fakes.rules import (
    Body,
    Refusal,
    deepseek_error,
    kimi_error,
    openrouter_error,
    refusal,
    rule,
    vllm_error,
)

REASONING_BACK = "The `reasoning_content` in the thinking mode must be passed back to the API."


def _tool_call_messages(body: Body) -> list[tuple[int, dict[str, Any]]]:
    return [
        (index, message)
        for index, message in enumerate(body.get("messages") or [])
        if isinstance(message, dict)
        and message.get("role") == "assistant"
        and message.get("tool_calls")
    ]


@rule(
    provider="DeepSeek",
    endpoint="chat",
    rule="In thinking mode (the default) every assistant message with tool calls comes back "
    "with its `reasoning_content`",
    we_do="the turn's reasoning goes back in the field it came in; a call the app made for "
    "the model (`caption_first`'s caption) goes as a note with its result instead",
    source="https://github.com/anomalyco/opencode/issues/25356",
)
def deepseek_reasoning_back(body: Body, strict: Any) -> Refusal | None:
    if strict.flavor != "deepseek" or not strict.thinking:
        return None
    for _, message in _tool_call_messages(body):
        if not isinstance(message.get("reasoning_content"), str):
            return refusal("deepseek_reasoning_back", deepseek_error(REASONING_BACK))
    return None


@rule(
    provider="DeepSeek",
    endpoint="chat",
    rule="Thinking mode refuses a forced `tool_choice` (`required` or a named function)",
    we_do="no `tool_choice` is sent to Chat Completions planners; the forced answer offers "
    "no tools",
    source="https://github.com/can1357/oh-my-pi/issues/7315",
)
def deepseek_tool_choice(body: Body, strict: Any) -> Refusal | None:
    choice = body.get("tool_choice")
    if strict.flavor == "deepseek" and strict.thinking and choice not in (None, "auto", "none"):
        return refusal(
            "deepseek_tool_choice",
            deepseek_error("Thinking mode does not support this tool_choice"),
        )
    return None


@rule(
    provider="Kimi",
    endpoint="chat",
    rule="With thinking on (the default for Kimi K2.6) every assistant tool-call message "
    "carries `reasoning_content`",
    we_do="as for DeepSeek: the reasoning goes back with the calls",
    source="https://github.com/bytedance/deer-flow/issues/3043",
)
def kimi_reasoning_back(body: Body, strict: Any) -> Refusal | None:
    if strict.flavor != "kimi" or not strict.thinking or strict.refuse_empty_reasoning:
        return None
    for index, message in _tool_call_messages(body):
        if "reasoning_content" not in message:
            return refusal(
                "kimi_reasoning_back",
                kimi_error(
                    "thinking is enabled but reasoning_content is missing in assistant tool "
                    f"call message at index {index}"
                ),
            )
    return None


@rule(
    provider="Kimi",
    endpoint="chat",
    rule="Kimi K2.6 (one report) refuses an empty `reasoning_content` on a tool-call turn "
    'that had no reasoning, where Moonshot\'s own kimi-cli sends `""`',
    we_do="`\"\"` is sent (DeepSeek's and kimi-cli's form, MoonshotAI/kimi-cli#2498); on a 400 "
    "about `reasoning_content` the turn is asked again once with the other form (the field "
    "left out, or back), remembered for the process",
    source="https://github.com/earendil-works/pi/issues/4251",
)
def kimi_empty_reasoning(body: Body, strict: Any) -> Refusal | None:
    if strict.flavor != "kimi" or not strict.refuse_empty_reasoning:
        return None
    for index, message in _tool_call_messages(body):
        if message.get("reasoning_content") == "":
            # the report gives no verbatim body: Moonshot's error shape, its wording ours
            return refusal(
                "kimi_empty_reasoning",
                kimi_error(
                    "reasoning_content must not be empty in assistant tool call message at "
                    f"index {index}"
                ),
            )
    return None


@rule(
    provider="Kimi",
    endpoint="chat",
    rule="Kimi K2.6 takes only its own temperature (1 with thinking)",
    we_do="`supports_temperature = false`: none is sent",
    source="https://github.com/countbot-ai/CountBot/issues/61",
)
def kimi_fixed_temperature(body: Body, strict: Any) -> Refusal | None:
    fixed = strict.fixed_temperature
    if (
        strict.flavor == "kimi"
        and fixed is not None
        and body.get("temperature") not in (None, fixed)
    ):
        return refusal(
            "kimi_fixed_temperature",
            kimi_error(f"invalid temperature: only {fixed:g} is allowed for this model"),
        )
    return None


@rule(
    provider="OpenRouter",
    endpoint="chat",
    rule="A reasoning model's tool-call turns come back with their `reasoning_details`; "
    "OpenRouter passes the provider's refusal on, wrapped",
    we_do="`reasoning_details` go back as they came (stream pieces joined per block); the "
    "provider's message is read out of the wrapper",
    source="https://github.com/endolith/open-interpreter/issues/215",
)
def openrouter_reasoning_back(body: Body, strict: Any) -> Refusal | None:
    if strict.flavor != "openrouter" or not strict.thinking:
        return None
    for _, message in _tool_call_messages(body):
        if not message.get("reasoning_details") and not message.get("reasoning"):
            upstream = deepseek_error(REASONING_BACK)[1]
            return refusal("openrouter_reasoning_back", openrouter_error(upstream, "DeepSeek"))
    return None


@rule(
    provider="vLLM",
    endpoint="chat",
    rule='Tools with `tool_choice` "auto" need a server started with '
    "`--enable-auto-tool-choice --tool-call-parser`",
    we_do="`local_llm` uses the `<tool_call>` text protocol (`function_calling = false`), "
    "which needs neither",
    source="https://github.com/langchain4j/langchain4j/issues/3475",
)
def vllm_auto_tool_choice(body: Body, strict: Any) -> Refusal | None:
    wants_auto = body.get("tool_choice") in (None, "auto")
    if strict.flavor == "vllm" and not strict.tool_parser and body.get("tools") and wants_auto:
        return refusal(
            "vllm_auto_tool_choice",
            vllm_error(
                '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                "to be set"
            ),
        )
    return None


@rule(
    provider="vLLM",
    endpoint="chat",
    rule="`stream_options` only with `stream: true`",
    we_do="`stream_options.include_usage` only on streamed calls (the non-streamed fallback "
    "has none)",
    source="https://github.com/BerriAI/litellm/issues/29431",
)
def vllm_stream_options(body: Body, strict: Any) -> Refusal | None:
    if strict.flavor == "vllm" and "stream_options" in body and not body.get("stream"):
        return refusal(
            "vllm_stream_options",
            vllm_error("Stream options can only be defined when `stream=True`."),
        )
    return None


def _audio_parts(body: Body) -> int:
    count = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") in ("input_audio", "audio_url"):
                count += 1
    return count


@rule(
    provider="vLLM",
    endpoint="chat",
    rule="Voxtral (mistral-common before tokenizer v13) refuses a system prompt next to audio",
    we_do="`system_prompt_with_audio = false`: the instructions go into the user turn",
    source="https://github.com/mistralai/mistral-common/pull/305",
)
def vllm_system_with_audio(body: Body, strict: Any) -> Refusal | None:
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    has_system = any(m.get("role") == "system" for m in messages)
    if strict.no_system_with_audio and has_system and _audio_parts(body):
        return refusal(
            "vllm_system_with_audio", vllm_error("System prompt is not supported with audio.")
        )
    return None


@rule(
    provider="vLLM",
    endpoint="chat",
    rule="At most `--limit-mm-per-prompt` audios per request (1 by default)",
    we_do="one audio per request: long audio is split into windows, each its own request",
    source="https://github.com/OpenBMB/MiniCPM-V/issues/850",
)
def vllm_audio_limit(body: Body, strict: Any) -> Refusal | None:
    if strict.flavor == "vllm" and _audio_parts(body) > strict.audios_per_request:
        return refusal(
            "vllm_audio_limit",
            vllm_error(
                f"At most {strict.audios_per_request} audio(s) may be provided in one request."
            ),
        )
    return None
