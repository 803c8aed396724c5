"""The strict fakes' rules: at least twenty, each from a reported failure, each refusing its
bad example with the provider's own error body and letting the good one through; and the
SDK request-type checks every fake body meets."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import openai
import pytest
from fastapi.testclient import TestClient

from tests.fake_openai import FakeOpenAI
from tests.fakes import compat_rules, gemini_rules, openai_rules  # noqa: F401 - registration
from tests.fakes.gemini_rules import STAND_IN, GeminiProfile
from tests.fakes.profile import Strict
from tests.fakes.rules import RULES, count_by_provider
from tests.fakes.shapes import (
    gemini_errors,
    gemini_file_errors,
    openai_errors,
    transcription_errors,
)

PROVIDERS_DOC = Path(__file__).resolve().parent.parent / "docs" / "providers.md"
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
AUDIO = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
USER = {"role": "user", "parts": [{"text": "Which animal?"}]}


def model_call(**signed: Any) -> dict[str, Any]:
    return {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}, **signed}]}


def answer(count: int = 1) -> dict[str, Any]:
    part = {"functionResponse": {"name": "f", "response": {"output": "x"}}}
    return {"role": "user", "parts": [part] * count}


def file_part(file_id: str) -> dict[str, Any]:
    uri = f"https://generativelanguage.googleapis.com/v1beta/files/{file_id}"
    data = {"fileData": {"fileUri": uri, "mimeType": "audio/wav"}}
    return {"role": "user", "parts": [{"text": "What is it?"}, data]}


def two_calls() -> dict[str, Any]:
    call = {"functionCall": {"name": "f", "args": {}}}
    return {"role": "model", "parts": [call, call]}


ISSUED = b"signature-from-gemini"
# rule id -> (profile, a body it refuses, a body it lets through)
EXAMPLES: dict[str, tuple[Any, dict[str, Any], dict[str, Any]]] = {
    "reasoning_model_temperature": (Strict(reasoning=True), {"temperature": 0.2}, {}),
    "max_tokens_name": (Strict(reasoning=True), {"max_tokens": 5}, {"max_completion_tokens": 5}),
    "stream_unverified": (Strict(refuse_stream=True), {"stream": True}, {}),
    "summary_unverified": (
        Strict(refuse_summary=True),
        {"reasoning": {"summary": "auto"}},
        {"reasoning": {"effort": "low"}},
    ),
    "reasoning_item_required": (
        Strict(reasoning=True),
        {
            "input": [
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "c",
                    "name": "f",
                    "arguments": "",
                }
            ]
        },
        {
            "input": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "c",
                    "name": "f",
                    "arguments": "",
                },
            ]
        },
    ),
    "store_false_item_not_found": (
        Strict(),
        {"store": False, "input": [{"type": "reasoning", "id": "rs_1", "summary": []}]},
        {
            "store": False,
            "input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"}],
        },
    ),
    "call_id_pairing": (
        Strict(),
        {"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]},
        {
            "input": [
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""},
                {"type": "function_call_output", "call_id": "c", "output": "x"},
            ]
        },
    ),
    "strict_function_schema": (
        Strict(),
        {
            "tools": [
                {
                    "type": "function",
                    "name": "f",
                    "parameters": {"type": "object", "properties": {"a": {}}},
                }
            ]
        },
        {
            "tools": [
                {
                    "type": "function",
                    "name": "f",
                    "strict": False,
                    "parameters": {"type": "object", "properties": {"a": {}}},
                }
            ]
        },
    ),
    "empty_tool_calls": (
        Strict(),
        {"messages": [{"role": "assistant", "content": "x", "tool_calls": []}]},
        {"messages": [{"role": "assistant", "content": "x"}]},
    ),
    "tool_message_pairing": (
        Strict(flavor="deepseek"),
        {"messages": [{"role": "tool", "tool_call_id": "c1", "content": "x"}]},
        {
            "messages": [
                {"role": "assistant", "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
            ]
        },
    ),
    "input_audio_format": (
        Strict(audio_formats=("wav",)),
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{**AUDIO, "input_audio": {"data": "", "format": "m4a"}}],
                }
            ]
        },
        {"messages": [{"role": "user", "content": [AUDIO]}]},
    ),
    "transcription_format": (
        Strict(json_only_transcription=True),
        {"model": "gpt-transcribe", "response_format": "verbose_json"},
        {"model": "gpt-transcribe", "response_format": "json"},
    ),
    "deepseek_reasoning_back": (
        Strict(flavor="deepseek", thinking=True),
        {"messages": [{"role": "assistant", "tool_calls": [CALL]}]},
        {"messages": [{"role": "assistant", "tool_calls": [CALL], "reasoning_content": ""}]},
    ),
    "deepseek_tool_choice": (
        Strict(flavor="deepseek", thinking=True),
        {"tool_choice": "required"},
        {"tool_choice": "auto"},
    ),
    "kimi_reasoning_back": (
        Strict(flavor="kimi", thinking=True),
        {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [CALL]},
            ]
        },
        {"messages": [{"role": "assistant", "tool_calls": [CALL], "reasoning_content": "r"}]},
    ),
    "kimi_empty_reasoning": (
        Strict(flavor="kimi", thinking=True, refuse_empty_reasoning=True),
        {"messages": [{"role": "assistant", "tool_calls": [CALL], "reasoning_content": ""}]},
        {"messages": [{"role": "assistant", "tool_calls": [CALL]}]},
    ),
    "kimi_fixed_temperature": (
        Strict(flavor="kimi", fixed_temperature=1.0),
        {"temperature": 0.3},
        {},
    ),
    "openrouter_reasoning_back": (
        Strict(flavor="openrouter", thinking=True),
        {"messages": [{"role": "assistant", "tool_calls": [CALL]}]},
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [CALL],
                    "reasoning_details": [{"type": "reasoning.text", "text": "r"}],
                }
            ]
        },
    ),
    "vllm_auto_tool_choice": (
        Strict(flavor="vllm", tool_parser=False),
        {"tools": [{"type": "function"}]},
        {},
    ),
    "vllm_stream_options": (
        Strict(flavor="vllm"),
        {"stream_options": {"include_usage": True}},
        {"stream": True, "stream_options": {"include_usage": True}},
    ),
    "vllm_system_with_audio": (
        Strict(flavor="vllm", no_system_with_audio=True),
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [AUDIO]}]},
        {"messages": [{"role": "user", "content": [AUDIO]}]},
    ),
    "vllm_audio_limit": (
        Strict(flavor="vllm"),
        {"messages": [{"role": "user", "content": [AUDIO, AUDIO]}]},
        {"messages": [{"role": "user", "content": [AUDIO]}]},
    ),
    "gemini_payload_size": (GeminiProfile(request_bytes=30 * 2**20), {}, {}),
    "gemini_empty_text": (
        GeminiProfile(),
        {"contents": [USER, {"role": "model", "parts": [{"text": ""}]}]},
        {"contents": [USER]},
    ),
    "gemini_response_count": (
        GeminiProfile(),
        {"contents": [USER, two_calls(), answer(1)]},
        {"contents": [USER, two_calls(), answer(2)]},
    ),
    "gemini_call_turn_order": (
        GeminiProfile(),
        {"contents": [model_call(), answer()]},
        {"contents": [USER, model_call(), answer()]},
    ),
    "gemini_missing_signature": (
        GeminiProfile(require_signatures=True),
        {"contents": [USER, model_call(), answer()]},
        {"contents": [USER, model_call(thoughtSignature=STAND_IN), answer()]},
    ),
    "gemini_invalid_signature": (
        GeminiProfile(require_signatures=True, issued={ISSUED}),
        {
            "contents": [
                USER,
                model_call(thoughtSignature=base64.b64encode(STAND_IN.encode()).decode()),
            ]
        },
        {
            "contents": [
                USER,
                model_call(thoughtSignature=base64.urlsafe_b64encode(ISSUED).decode()),
            ]
        },
    ),
    "gemini_file_not_active": (
        GeminiProfile(files={"abc123": "PROCESSING", "def456": "ACTIVE"}),
        {"contents": [file_part("abc123")]},
        {"contents": [file_part("def456")]},
    ),
    "gemini_file_gone": (
        GeminiProfile(files={"def456": "ACTIVE"}),
        {"contents": [file_part("gone789")]},
        {"contents": [file_part("def456")]},
    ),
}


def test_at_least_twenty_rules_from_reports_across_the_providers():
    counts = count_by_provider()
    assert len(RULES) >= 20 and len({r.id for r in RULES}) == len(RULES)
    assert counts["OpenAI"] >= 5 and counts["Gemini"] >= 5 and counts["vLLM"] >= 3
    assert counts["DeepSeek"] + counts["Kimi"] + counts["OpenRouter"] >= 5
    for found in RULES:
        assert re.match(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$", found.source), (
            found
        )
        assert found.rule and found.we_do


@pytest.mark.parametrize("found", RULES, ids=lambda r: r.id)
def test_each_rule_refuses_its_failure_with_the_providers_own_body(found):
    profile, bad, good = EXAMPLES[found.id]
    if found.id == "gemini_payload_size":
        refusal = found.check(bad, profile)
        assert found.check(good, GeminiProfile()) is None
    else:
        refusal = found.check(bad, profile)
        assert found.check(good, profile) is None
    assert refusal is not None and refusal.rule == found.id and refusal.status in (400, 403, 404)
    body = refusal.body
    message = body.get("message") or body["error"]["message"]
    assert message and (body.get("object") == "error" or "error" in body)


def test_every_rule_is_in_the_docs_known_provider_rules():
    text = PROVIDERS_DOC.read_text()
    section = text[text.index("## Known provider rules") :]
    section = section[: section.find("\n## ", 1)]
    for found in RULES:
        assert found.source in section, found.id
    for provider, count in count_by_provider().items():
        assert f"{provider}: {count}" in section


# -- the SDKs' own request types ---------------------------------------------------------------


def test_chat_bodies_meet_the_openai_request_types():
    good = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    assert openai_errors("chat", good) == []
    unknown = {**good, "messages": [{"role": "assistant", "content": "", "reasoning_content": ""}]}
    assert openai_errors("chat", unknown) == [
        "body.messages[0]: unknown parameter 'reasoning_content'"
    ]
    deepseek = Strict(flavor="deepseek").extensions()
    assert openai_errors("chat", unknown, deepseek) == []
    wrong_role = {**good, "messages": [{"role": "robot", "content": "hi"}]}
    assert "robot" in openai_errors("chat", wrong_role)[0]
    assert openai_errors("chat", {"messages": []}) == ["body: missing required parameter 'model'"]


def test_responses_bodies_meet_the_openai_request_types():
    message = {"id": "msg_1", "type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "x", "annotations": []}]}  # fmt: skip
    body = {"model": "m", "input": [message], "store": False}
    assert openai_errors("responses", body) == [
        "body.input[0]: missing required parameter 'status'"
    ]
    body["input"] = [{**message, "status": "completed"}]
    assert openai_errors("responses", body) == []
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}}
    assert openai_errors("responses", {"model": "m", "tools": [tool]}) == [
        "body.tools[0]: missing required parameter 'strict'"
    ]
    effort = {"model": "m", "reasoning": {"effort": "extreme"}}
    assert "extreme" in openai_errors("responses", effort)[0]


def test_gemini_bodies_meet_the_genai_models():
    good = {"contents": [USER], "toolConfig": {"functionCallingConfig": {"mode": "NONE"}},
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}}}  # fmt: skip
    assert gemini_errors(good) == []
    assert gemini_errors({**good, "toolConfig": {"functionCallingConfig": {"mode": "NEVER"}}})
    assert gemini_errors({"contents": [{"role": "user", "parts": [{"txt": "hi"}]}]})
    assert gemini_errors({"contents": [USER], "temperature": 0.2}) == [
        'Unknown name "temperature": Cannot find field.'
    ]
    signed = {"contents": [USER, model_call(thoughtSignature=STAND_IN)]}
    assert gemini_errors(signed) == []  # the literal stand-in is valid base64 (URL-safe)


def test_transcription_forms_meet_the_openai_request_types():
    """A multipart form, as the SDK writes one: ``a[]`` lists, ``a[b]`` objects, strings."""
    ours = [
        ("model", "whisper"),
        ("file", b"RIFF"),
        ("response_format", "verbose_json"),
        ("timestamp_granularities[]", "segment"),
        ("language", "de"),
        ("prompt", "Hi"),
    ]
    assert transcription_errors(ours) == []
    vad = [
        ("model", "m"),
        ("file", b""),
        ("stream", "false"),
        ("temperature", "0.2"),
        ("chunking_strategy[type]", "server_vad"),
        ("chunking_strategy[threshold]", "0.5"),
    ]
    assert transcription_errors(vad) == []
    assert transcription_errors([("model", "m")]) == ["body: missing required parameter 'file'"]
    wrong = [("model", "m"), ("file", b""), ("timestamp_granularities[]", "sentence"),
             ("temperature", "warm"), ("timestamp_granularity", "word")]  # fmt: skip
    assert transcription_errors(wrong) == [
        "body: unknown parameter 'timestamp_granularity'",
        "body.timestamp_granularities[0]: 'sentence' is not one of ['word', 'segment']",
        "body.temperature: expected a number",
    ]
    # an array sent as a plain field (no brackets) is not one
    plain = [("model", "m"), ("file", b""), ("timestamp_granularities", "segment")]
    assert transcription_errors(plain) == ["body.timestamp_granularities: expected an array"]


def test_a_malformed_transcription_is_refused_on_the_wire():
    """The fake OpenAI server checks every transcription form it receives (through the SDK)."""
    server = FakeOpenAI()
    with TestClient(server.app) as http:
        client = openai.OpenAI(
            base_url="http://testserver/v1", api_key="k", http_client=http, max_retries=0
        )
        wav = ("a.wav", b"RIFF....WAVE", "audio/wav")
        ok = client.audio.transcriptions.create(
            model="whisper-1", file=wav, response_format="verbose_json",
            timestamp_granularities=["segment"], language="en",
        )  # fmt: skip
        assert ok.text == "" and server.refused == []
        with pytest.raises(openai.BadRequestError) as refused:
            client.audio.transcriptions.create(
                model="whisper-1", file=wav,
                timestamp_granularities=["sentence"],  # type: ignore[list-item]
            )  # fmt: skip
        assert refused.value.body["param"] == "timestamp_granularities[0]"
        assert "sentence" in refused.value.message
        with pytest.raises(openai.BadRequestError, match="unknown parameter 'diarize'"):
            client.audio.transcriptions.create(
                model="whisper-1", file=wav, extra_body={"diarize": True}
            )
    assert server.refused == ["sdk_shape", "sdk_shape"]


def test_gemini_upload_metadata_meets_the_file_model():
    assert gemini_file_errors({"file": {"mimeType": "audio/wav", "sizeBytes": "44"}}) == []
    assert gemini_file_errors({"file": {"mimeType": "audio/wav", "colour": "red"}}) == [
        "file.colour: Extra inputs are not permitted"
    ]
    assert gemini_file_errors({"file": {}, "ttl": "48h"}) == [
        'Unknown name "ttl": Cannot find field.'
    ]
    assert gemini_file_errors({"file": {"state": "READY"}}) == [
        "file: READY is not a valid FileState"
    ]
