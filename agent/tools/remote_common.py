"""What the remote audio tools share: the question interface and calls whose failures
become one clear ToolError (the SDKs have already retried what is worth retrying)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agent.remote import ModelConfig, RemoteError
from agent.tools.base import ToolError

T = TypeVar("T")

DEFAULT_AUDIO_PROMPT = (
    "Listen to the audio and answer the question precisely. Say when you are unsure."
)


def question_parameters() -> dict[str, Any]:
    """JSON schema of an audio-language-model tool: a question, optionally about a range."""
    return {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "What to ask about the audio."},
            "start": {"type": "number", "minimum": 0, "description": "Optional start (s)."},
            "end": {"type": "number", "minimum": 0, "description": "Optional end (s)."},
        },
        "required": ["question"],
    }


def question_description(model: str, family: str = "") -> str:
    who = f"{model} ({family})" if family else model
    return (
        f"Ask the audio-language model {who} a free-form question about the recording (what "
        "is heard, said, sung, felt; who speaks; what happens when). Optionally only about "
        "the range start..end seconds."
    )


async def call_remote(
    call: Callable[[], Awaitable[T]],
    config: ModelConfig,
    classify: Callable[[BaseException, ModelConfig], RemoteError],
) -> T:
    """Run a remote call (the SDK retries 429/5xx per the entry); a failure is a ToolError."""
    try:
        return await call()
    except ToolError:
        raise
    except Exception as exc:  # classified into one sentence naming the entry
        raise ToolError(str(classify(exc, config))) from exc


def range_note(start: float, end: float, duration: float) -> str:
    """Tells a model which part of the recording it hears (empty for the whole recording)."""
    if start <= 0 and end >= duration:
        return ""
    return (
        f"\n\n(This audio is the part from {start:.1f} s to {end:.1f} s of a "
        f"{duration:.1f} s recording.)"
    )
