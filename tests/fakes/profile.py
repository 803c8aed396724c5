"""What one model behind an OpenAI-compatible fake is: which provider's rules and error
bodies apply to it, and what it accepts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Strict:
    """A model as the fake serves it; the rules in ``openai_rules``/``compat_rules`` read it."""

    # Whose wire protocol and error bodies: openai | deepseek | kimi | openrouter | vllm
    flavor: str = "openai"
    # OpenAI reasoning model: only the default temperature, max_completion_tokens, reasoning
    # items next to function calls (https://platform.openai.com/docs/guides/reasoning)
    reasoning: bool = False
    # Thinking model (DeepSeek, Kimi K2, OpenRouter's DeepSeek, Qwen3 on vLLM): returns its
    # reasoning beside the message and needs it back next to its own tool calls
    thinking: bool = False
    reasoning_key: str = "reasoning_content"  # the field the reasoning arrives in
    # Voxtral (mistral-common before tokenizer v13) rejects a system prompt with audio.
    no_system_with_audio: bool = False
    audio_formats: tuple[str, ...] = ("wav", "mp3")  # input_audio formats it takes
    audios_per_request: int = 1  # vLLM's --limit-mm-per-prompt default for audio
    refuse_stream: bool = False  # organisation not verified to stream this model
    refuse_summary: bool = False  # organisation not verified for reasoning summaries
    # Some OpenAI-compatible servers repeat the whole function name in every tool-call
    # chunk (OpenAI sends it once); a client must not concatenate them.
    repeat_names: bool = False
    tool_parser: bool = True  # vLLM served with --enable-auto-tool-choice --tool-call-parser
    fixed_temperature: float | None = None  # Kimi K2.6: "only 1 is allowed for this model"
    # A Kimi K2.6 deployment that refuses an empty reasoning_content on a tool-call turn
    # (and takes the turn without the field): https://github.com/earendil-works/pi/issues/4251
    refuse_empty_reasoning: bool = False
    json_only_transcription: bool = False  # gpt-transcribe: json or text, no verbose_json
    usage_in_stream: bool = True  # False: a local server that never sends token counts
    # vLLM-Omni (Qwen2.5-Omni, Qwen3-Omni): a request without ``modalities`` runs every stage,
    # the talker too (vllm-omni's serving_chat: the output modalities default to every
    # stage's; per request since https://github.com/vllm-project/vllm-omni/pull/298), and
    # the answer has a second choice with the speech (``message.audio``, base64 wav, the
    # same ``index``: https://github.com/vllm-project/vllm-omni/issues/540);
    # ``modalities = ["text"]`` stops after the thinker.
    omni: bool = False

    def extensions(self) -> dict[str, frozenset[str]]:
        """Keys this provider adds to the ``openai`` SDK's request types (see ``shapes``)."""
        assistant = "ChatCompletionAssistantMessageParam"
        if self.flavor in ("deepseek", "kimi"):
            return {assistant: frozenset({"reasoning_content"})}
        if self.flavor == "openrouter":
            return {assistant: frozenset({"reasoning", "reasoning_details"})}
        if self.flavor == "vllm":
            return {assistant: frozenset({"reasoning", "reasoning_content"})}
        return {}
