"""What ``/v1/chat/completions`` does with OpenAI's request parameters beyond the messages.

An answer here is the outcome of a whole run: a planner reasons over several turns and calls
audio tools, and the answer is a choice or a short text. A parameter that would change what
comes back, and that the run cannot honour, is refused (400 in OpenAI's shape, ``param``
naming it), never silently dropped:

- ``tools`` / ``functions`` (a non-empty list), ``tool_choice`` / ``function_call`` (anything
  but ``"none"``): the client's own functions are never called; the agent's tools are its own.
- ``response_format`` other than ``{"type": "text"}``: no JSON mode or schema; the answer is
  text (the run's structured details are in the ``audio_agent`` field).
- ``max_tokens`` / ``max_completion_tokens``: refused, not honoured by cutting the answer.
  The tokens of a run are spent by several planner turns and tool models, which no count on
  the final text bounds; a cut answer (a choice's name half written) would be worse than
  none. The daily spend cap (``AUDIO_AGENT_DAILY_USD``) bounds cost instead.
- ``modalities`` with anything but ``"text"``, ``audio`` (spoken output): no audio answers.
- ``logprobs`` true, ``top_logprobs``: there are no token probabilities of an answer.
- ``n`` other than 1: ``backend.http.openai_messages``.

A parameter given as ``null`` counts as not given (some clients send every field). Sampling
parameters (``temperature``, ``top_p``, ``seed``, penalties, ``stop``, ``user``, ``metadata``,
``store``, ``parallel_tool_calls`` ...) are accepted and not used: they tune one model's
sampling, and the planners keep their own settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backend.http.openai_messages import ChatError

NO_TOOLS = (
    "This model does not call the client's functions: it answers with its own audio tools. "
    "Leave out '{param}'."
)


def check_parameters(fields: Mapping[str, Any]) -> None:
    """Raise ``ChatError`` (with ``param``) for the first parameter that is refused."""
    for param in ("tools", "functions"):
        if fields.get(param):
            raise ChatError(NO_TOOLS.format(param=param), param)
    for param in ("tool_choice", "function_call"):
        choice = fields.get(param)
        if choice is not None and choice != "none":
            raise ChatError(NO_TOOLS.format(param=param) + " ('none' is accepted.)", param)
    response_format = fields.get("response_format")
    if response_format is not None and response_format != {"type": "text"}:
        raise ChatError(
            "This model answers in text only: no JSON mode or schema. Leave out "
            "'response_format' (the run's details come in the 'audio_agent' field).",
            "response_format",
        )
    for param in ("max_tokens", "max_completion_tokens"):
        if fields.get(param) is not None:
            raise ChatError(
                f"'{param}' is not supported: an answer is the outcome of a whole run (several "
                "planner turns and audio tools), whose tokens no limit on the answer text "
                "bounds, and a cut answer would mislead. Leave it out; the answer is a choice "
                "or a short text.",
                param,
            )
    modalities = fields.get("modalities")
    if modalities is not None and modalities != ["text"]:
        raise ChatError("This model answers in text only.", "modalities")
    if fields.get("audio") is not None:
        raise ChatError("This model answers in text only: no spoken answer.", "audio")
    if fields.get("logprobs") or fields.get("top_logprobs") is not None:
        param = "logprobs" if fields.get("logprobs") else "top_logprobs"
        raise ChatError("There are no token probabilities of an answer here.", param)
