"""A run as OpenAI's chat API shapes it: reasoning and content, chunks, completions, errors.

The planner's reasoning, each tool call and its result, comparisons and strategy steps are
``reasoning_content`` (the field Open WebUI and LibreChat show as "thinking"); the answer is
``content``: the chosen option's exact text when the question had choices, else the answer.
A streamed run and an unstreamed one carry the same texts (``TraceText`` makes both).
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from agent import events as ev
from backend.http.client_runs import RunOutcome

TOOL_OUTPUT_CHARS = 800  # of a tool's output in the reasoning text; the trace has all of it
EXTENSION = "audio_agent"  # the extension field: the run's answer details and trace link


class TraceText:
    """Turns a run's events into (reasoning, content) text, event by event."""

    def __init__(self) -> None:
        self._streamed_turns: set[int] = set()
        self.reasoning: list[str] = []
        self.content: list[str] = []

    def add(self, event: ev.Event) -> tuple[str, str]:
        """The reasoning and content this event adds (either may be empty)."""
        reasoning, content = self._texts(event)
        self.reasoning.append(reasoning)
        self.content.append(content)
        return reasoning, content

    def _texts(self, event: ev.Event) -> tuple[str, str]:
        match event.type:
            case "run_started":
                return f"{event.planner_label or event.planner} · {event.strategy}\n", ""
            case "queued":
                return f"Queued: {event.ahead} ahead.\n", ""
            case "planner_delta":
                self._streamed_turns.add(event.turn)
                return event.text, ""
            case "thought":  # a strategy's own step is not streamed as deltas
                if event.turn in self._streamed_turns:
                    return "\n", ""
                return (f"{event.text.strip()}\n" if event.text.strip() else ""), ""
            case "tool_call":
                arguments = json.dumps(event.arguments, ensure_ascii=False)
                return (
                    f"\n→ {event.tool} {arguments if event.arguments else ''}".rstrip() + "\n",
                    "",
                )
            case "tool_result":
                return _tool_result(event), ""
            case "verification":
                return f"Compared {', '.join(event.compared)}: {event.resolution}\n", ""
            case "document":
                note = f": {event.note}" if event.note else ""
                return f"[working document, version {event.iteration}{note}]\n", ""
            case "answer":
                return _answer_note(event), event.choice or event.text
            case "run_finished":
                if event.degraded_tools:
                    failed = ", ".join(event.degraded_tools)
                    return f"Degraded: {failed} failed or timed out.\n", ""
                return "", ""
            case "run_failed":
                return f"\nThe run failed ({event.kind}): {event.message}\n", ""
            case _:
                assert_never(event.type)


def _tool_result(event: ev.ToolResultEvent) -> str:
    cached = ", cached" if event.cached else ""
    head = f"← {event.tool} ({event.duration_s:.2f} s{cached})"
    if event.error:
        return f"{head}: ERROR {event.error}\n"
    output = event.output.strip()
    if len(output) > TOOL_OUTPUT_CHARS:
        output = output[:TOOL_OUTPUT_CHARS].rstrip() + " …"
    return f"{head}: {output}\n"


def _answer_note(event: ev.Answer) -> str:
    notes = []
    if event.confidence is not None:
        notes.append(f"confidence {event.confidence:.2f}")
    if event.guess:
        notes.append("a best guess: the evidence could not decide")
    if event.forced:
        notes.append("answered when the tool budget was spent")
    return f"\nAnswer: {event.choice or event.text}" + (f" ({'; '.join(notes)})" if notes else "")


def completion_id(run_id: str) -> str:
    return f"chatcmpl-{run_id}"


def usage(outcome: RunOutcome) -> dict[str, Any]:
    """OpenAI's usage object with the run's cost in US dollars (``cost``, as OpenRouter);
    of the prompt tokens, those the models' providers read from their prompt caches."""
    finished = outcome.finished
    prompt = finished.input_tokens if finished else 0
    completion = finished.output_tokens if finished else 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": finished.cache_read_tokens if finished else 0},
        "cost": finished.cost if finished else 0.0,
    }


def chunk(
    run_id: str,
    model: str,
    created: int,
    delta: dict[str, Any],
    finish_reason: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
    return {
        "id": completion_id(run_id),
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": choices,
        "run_id": run_id,
        **extra,
    }


def completion(
    outcome: RunOutcome, model: str, created: int, text: TraceText, base_url: str
) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": "".join(text.content),
        "reasoning_content": "".join(text.reasoning),
    }
    return {
        "id": completion_id(outcome.run_id),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": usage(outcome),
        "run_id": outcome.run_id,
        EXTENSION: outcome.summary(base_url),
    }


def error_body(
    message: str, kind: str, *, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def error_kind(status: int) -> tuple[str, str | None]:
    """OpenAI's error ``type`` and ``code`` for an HTTP status."""
    if status == 429:
        return "requests", "rate_limit_exceeded"
    if status == 401:
        return "authentication_error", "invalid_api_key"
    if status == 404:
        return "invalid_request_error", "not_found"
    if status >= 500:
        return "server_error", None
    return "invalid_request_error", None


def failure_status(outcome: RunOutcome) -> int:
    """The HTTP status of a run that ended without an answer: 429 when the owner's daily
    spend ran out during it (a limit, as for a question refused before it starts), else 500."""
    failed = outcome.failed
    return 429 if failed is not None and failed.kind == "spend_limit" else 500


def failure_body(outcome: RunOutcome, base_url: str) -> dict[str, Any]:
    """A run that ended without an answer (failed, stopped, interrupted) as an API error."""
    failed = outcome.failed
    message = failed.message if failed else "The run ended without an answer."
    if failure_status(outcome) == 429:
        body = error_body(message, "requests", code="spend_limit")
    else:
        body = error_body(message, "server_error", code=f"run_{outcome.status}")
    body["run_id"] = outcome.run_id
    body[EXTENSION] = outcome.summary(base_url)
    return body
