"""Gemini's refusals of a generateContent request, as users reported them.

The checks read the request as the API does (``FakeGemini`` hands them the body with
field names normalised to lowerCamelCase) and a ``GeminiProfile`` of the fake server.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.rules import Body, Refusal, gemini_error, refusal, rule

STAND_IN = "skip_thought_signature_validator"  # the documented stand-in signature
LEARN_MORE = (
    "Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
)


@dataclass
class GeminiProfile:
    require_signatures: bool = False  # Gemini 3 and later
    max_request_bytes: int = 20 * 1024 * 1024
    issued: set[bytes] = field(default_factory=set)  # signatures this server handed out
    request_bytes: int = 0  # the size of the request being checked
    # The Files API's files by id (``files/{id}``) and their state (PROCESSING, ACTIVE,
    # FAILED); None: the server has no Files API (the file rules are not checked).
    files: dict[str, str] | None = None


def _contents(body: Body) -> list[dict[str, Any]]:
    return [c for c in body.get("contents") or [] if isinstance(c, dict)]


def _parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


@rule(
    provider="Gemini",
    endpoint="gemini",
    rule="A request over 20 MB (audio inline) is refused",
    we_do="audio goes through the Files API above `inline_limit_bytes`",
    source="https://github.com/MaKTaiL/gemini-srt-translator/issues/63",
)
def gemini_payload_size(body: Body, profile: GeminiProfile) -> Refusal | None:
    if profile.request_bytes > profile.max_request_bytes:
        return refusal(
            "gemini_payload_size",
            gemini_error(
                f"Request payload size exceeds the limit: {profile.max_request_bytes} bytes."
            ),
        )
    return None


@rule(
    provider="Gemini",
    endpoint="gemini",
    rule="A text part may not be empty",
    we_do="an empty model turn is left out of the history",
    source="https://github.com/microsoft/autogen/issues/5762",
)
def gemini_empty_text(body: Body, profile: GeminiProfile) -> Refusal | None:
    for content in _contents(body):
        parts = _parts(content)
        empty = not parts or any(set(p) <= {"text", "thought"} and not p.get("text") for p in parts)
        if empty:
            return refusal(
                "gemini_empty_text",
                gemini_error(
                    "Unable to submit request because it has an empty text parameter. Add a "
                    f"value to the parameter and try again. {LEARN_MORE}"
                ),
            )
    return None


@rule(
    provider="Gemini",
    endpoint="gemini",
    rule="A turn of function responses answers every call of the model turn just before it",
    we_do="one function response per call, all in one user turn right after the calls",
    source="https://github.com/google-gemini/gemini-cli/issues/16415",
)
def gemini_response_count(body: Body, profile: GeminiProfile) -> Refusal | None:
    contents = _contents(body)
    for index, content in enumerate(contents):
        responses = [p for p in _parts(content) if "functionResponse" in p]
        if not responses:
            continue
        previous = contents[index - 1] if index else {}
        calls = [p for p in _parts(previous) if "functionCall" in p]
        if previous.get("role") != "model" or len(calls) != len(responses):
            return refusal(
                "gemini_response_count",
                gemini_error(
                    "Please ensure that the number of function response parts is equal to the "
                    "number of function call parts of the function call turn."
                ),
            )
    return None


@rule(
    provider="Gemini",
    endpoint="gemini",
    rule="A model turn with function calls comes right after a user turn or a turn of "
    "function responses",
    we_do="the history keeps user and model turns in order; empty model turns are left out",
    source="https://github.com/google-gemini/gemini-cli/issues/11814",
)
def gemini_call_turn_order(body: Body, profile: GeminiProfile) -> Refusal | None:
    contents = _contents(body)
    for index, content in enumerate(contents):
        if content.get("role") != "model" or not any("functionCall" in p for p in _parts(content)):
            continue
        if index == 0 or contents[index - 1].get("role") != "user":
            return refusal(
                "gemini_call_turn_order",
                gemini_error(
                    "Please ensure that function call turn comes immediately after a user turn "
                    "or after a function response turn."
                ),
            )
    return None


def _current_turn(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Everything after the last user turn that has text: the turn being answered."""
    start = max(
        (i for i, c in enumerate(contents)
         if c.get("role") == "user" and any("text" in p for p in _parts(c))),
        default=0,
    )  # fmt: skip
    return contents[start:]


@rule(
    provider="Gemini",
    endpoint="gemini",
    rule="Gemini 3+: the first function call of each model turn in the current turn carries "
    "its thought signature",
    we_do="the model's turn goes back unchanged; a turn rebuilt without it carries the "
    "documented stand-in",
    source="https://github.com/BigPizzaV3/CodexPlusPlus/issues/367",
)
def gemini_missing_signature(body: Body, profile: GeminiProfile) -> Refusal | None:
    if not profile.require_signatures:
        return None
    for content in _current_turn(_contents(body)):
        calls = [p for p in _parts(content) if "functionCall" in p]
        if calls and "thoughtSignature" not in calls[0]:
            name = calls[0]["functionCall"].get("name")
            return refusal(
                "gemini_missing_signature",
                gemini_error(
                    "Function call is missing a thought_signature in functionCall parts. This "
                    "is required for tools to work correctly, and missing thought_signature "
                    f"may lead to degraded model performance. Additional data, function call "
                    f"`default_api:{name}` , position 1. Please refer to "
                    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
                ),
            )
    return None


def _decoded(signature: str) -> bytes | None:
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            return decode(signature + "=" * (-len(signature) % 4))
        except (binascii.Error, ValueError):
            continue
    return None


@rule(
    provider="Gemini",
    endpoint="gemini",
    rule="Gemini 3+: a thought signature is one Gemini issued, or the literal string "
    "`skip_thought_signature_validator`",
    we_do="the stand-in goes out as that literal string (the SDK base64-encodes bytes, so "
    "the bytes set are the string's decoding)",
    source="https://github.com/langchain-ai/langchain-google/issues/1570",
)
def gemini_invalid_signature(body: Body, profile: GeminiProfile) -> Refusal | None:
    if not profile.require_signatures:
        return None
    for content in _contents(body):
        for part in _parts(content):
            signature = part.get("thoughtSignature")
            if signature is None or signature == STAND_IN:
                continue
            if _decoded(str(signature)) not in profile.issued:
                return refusal(
                    "gemini_invalid_signature",
                    gemini_error(
                        f"Unable to submit request because Thought signature is not valid.. "
                        f"{LEARN_MORE}"
                    ),
                )
    return None


_FILE_ID = re.compile(r"(?:^|/)files/([a-z0-9-]+)$")


def _file_ids(body: Body) -> list[str]:
    """The Files API ids the request's ``fileData`` parts name (``.../files/{id}``; a
    YouTube or ``gs://`` URI names none)."""
    ids = []
    for content in _contents(body):
        for part in _parts(content):
            data = part.get("fileData")
            uri = str(data.get("fileUri") or "") if isinstance(data, dict) else ""
            if found := _FILE_ID.search(uri):
                ids.append(found.group(1))
    return ids


@rule(
    provider="Gemini",
    endpoint="gemini",
    rule="A file from the Files API is used only once it is ACTIVE (an upload of audio or "
    "video is PROCESSING at first; 400 `FAILED_PRECONDITION`)",
    we_do="after an upload the file is polled every `file_poll_s` until it is ACTIVE (FAILED "
    "or still processing at the timeout: a clear error, the file deleted) and only then asked "
    "about",
    source="https://github.com/home-assistant/core/issues/140182",
)
def gemini_file_not_active(body: Body, profile: GeminiProfile) -> Refusal | None:
    for file_id in _file_ids(body):
        state = (profile.files or {}).get(file_id)
        if state is not None and state != "ACTIVE":
            return refusal(
                "gemini_file_not_active",
                gemini_error(
                    f"The File {file_id} is not in an ACTIVE state and usage is not allowed.",
                    name="FAILED_PRECONDITION",
                ),
            )
    return None


@rule(
    provider="Gemini",
    endpoint="gemini",
    rule="A file that was deleted, or has expired (48 hours after its upload), cannot be used "
    "(403, worded as a permission error)",
    we_do="each question about the audio uploads its own range and deletes the file after "
    "the answer; no later request refers to it",
    source="https://github.com/langgenius/dify-plugin-daemon/issues/192",
)
def gemini_file_gone(body: Body, profile: GeminiProfile) -> Refusal | None:
    if profile.files is None:
        return None
    for file_id in _file_ids(body):
        if file_id not in profile.files:
            return refusal(
                "gemini_file_gone",
                gemini_error(
                    f"You do not have permission to access the File {file_id} or it may not exist.",
                    status=403,
                ),
            )
    return None
