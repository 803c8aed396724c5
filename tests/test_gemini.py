"""The Gemini planner and audio tool through the official SDK against a local fake server."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import httpx
import numpy as np
import pytest

from agent import events as ev
from agent.audio import AudioStore, to_wav_bytes
from agent.gemini_client import classify_error
from agent.planners.base import (
    ChatMessage,
    PlannerError,
    TextDelta,
    ToolCallRequest,
    ToolSpec,
    TurnEnd,
)
from agent.planners.gemini import GeminiPlanner
from agent.remote import ModelConfig, Prices, RetryPolicy
from agent.run import RunRequest, run_question
from agent.testing import ScriptedTool
from agent.tools.base import ToolContext, ToolError
from agent.tools.gemini_audio import GeminiAudioTool
from tests import fake_gemini as fg
from tests.servers import serve

KEY = "AIzaFAKE-test-key-0123456789"
SIGNATURE = bytes(range(256))[::7] + b"\xfb\xff\xfe"  # base64 of it has '+' and '/'
MODEL = "gemini-2.5-flash"


@pytest.fixture
def fake():
    server = fg.FakeGemini()
    with serve(server.app) as url:
        server.url = url
        yield server


@pytest.fixture(autouse=True)
def gemini_key(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)


def config(url: str, **options) -> ModelConfig:
    return ModelConfig(
        name="gemini",
        provider="gemini",
        model=MODEL,
        key_env="GEMINI_API_KEY",
        base_url=url,
        timeout_s=10,
        retry=RetryPolicy(attempts=3, base_delay_s=0.01),
        prices=Prices(input_per_mtok=1.0, output_per_mtok=4.0, audio_input_per_mtok=7.0),
        options=options,
    )


SPEC = ToolSpec(
    "sound_events",
    "Name the sounds in the recording.",
    {
        "type": "object",
        "properties": {
            "top_k": {"type": "integer", "minimum": 1},
            "audio_id": {"type": "string", "enum": ["audio1"]},
        },
    },
)


def history(question: str = "What animal is heard?") -> list[ChatMessage]:
    return [
        ChatMessage("system", "You answer questions about audio."),
        ChatMessage("user", question),
    ]


async def turn_chunks(planner: GeminiPlanner, messages, tools=(SPEC,)) -> list:
    return [chunk async for chunk in planner.stream_turn(messages, list(tools))]


def sig_of(part: dict) -> bytes:
    return base64.urlsafe_b64decode(part["thoughtSignature"])


# -- planner ---------------------------------------------------------------------------------


async def test_planner_streams_text_and_a_function_call(fake):
    fake.queue(
        fg.turn(
            fg.text("Let me "),
            fg.text("listen."),
            fg.call("sound_events", {"top_k": 3}, signature=SIGNATURE),
            meta=fg.usage(120, 20, thoughts=5),
        )
    )
    planner = GeminiPlanner(config(fake.url, temperature=0.2))
    assert planner.is_llm and planner.name == "gemini" and planner.model == MODEL
    chunks = await turn_chunks(planner, history())
    texts = [c.text for c in chunks if isinstance(c, TextDelta)]
    assert texts == ["Let me ", "listen."]
    assert all(c.kind == "text" for c in chunks if isinstance(c, TextDelta))
    (request,) = [c for c in chunks if isinstance(c, ToolCallRequest)]
    assert request.name == "sound_events" and request.arguments == {"top_k": 3}
    assert request.id and request.parse_error is None
    end = chunks[-1]
    assert isinstance(end, TurnEnd)
    assert end.usage.input_tokens == 120 and end.usage.output_tokens == 25
    assert end.cost == pytest.approx(120 * 1.0 / 1e6 + 25 * 4.0 / 1e6)
    # the streamed text pieces merged into one part; the signed call kept as it came
    assert [p.text for p in end.raw.parts][:1] == ["Let me listen."]
    assert end.raw.role == "model" and end.raw.parts[1].thought_signature == SIGNATURE

    (sent,) = fake.generate_requests
    assert sent.path == f"/v1/models/{MODEL}:streamGenerateContent"
    assert sent.query == {"alt": "sse"}
    assert sent.headers["x-goog-api-key"] == KEY
    body = sent.json
    assert body["systemInstruction"]["parts"] == [{"text": "You answer questions about audio."}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "What animal is heard?"}]}]
    (declaration,) = body["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "sound_events"
    assert declaration["parametersJsonSchema"] == SPEC.parameters
    assert body["generationConfig"]["temperature"] == 0.2
    assert "thinkingConfig" not in body["generationConfig"]


async def test_function_responses_go_back_with_the_signed_model_turn(fake):
    first = fg.turn(
        fg.thought("The user wants an animal.", signature=SIGNATURE),
        fg.text("Checking."),
        fg.call("sound_events", {"top_k": 3}, call_id="fc-1", signature=SIGNATURE[::-1]),
        fg.call("signal_stats", {}, call_id="fc-2"),
        meta=fg.usage(50, 10),
    )
    fake.queue(first, fg.turn(fg.text("A dog. <answer>Dog</answer>"), meta=fg.usage(90, 8)))
    planner = GeminiPlanner(config(fake.url, include_thoughts=True))
    messages = history()
    chunks = await turn_chunks(planner, messages)
    calls = [c for c in chunks if isinstance(c, ToolCallRequest)]
    assert [c.id for c in calls] == ["fc-1", "fc-2"]
    end = chunks[-1]
    messages.append(ChatMessage("assistant", "Checking.", tool_calls=calls, raw=end.raw))
    messages.append(ChatMessage("tool", "Dog bark 0.91", tool_call_id="fc-1", name="sound_events"))
    messages.append(
        ChatMessage(
            "tool",
            "ERROR: signal_stats failed",
            tool_call_id="fc-2",
            name="signal_stats",
            error="signal_stats failed",
        )
    )
    second = await turn_chunks(planner, messages)
    answer = "".join(c.text for c in second if isinstance(c, TextDelta))
    assert answer == "A dog. <answer>Dog</answer>"

    body = fake.generate_requests[1].json
    user, model, results = body["contents"]
    assert user["role"] == "user"
    # the model turn goes back exactly as the server sent it, signatures byte for byte
    sent_parts = [p for chunk in first.chunks for p in chunk["candidates"][0]["content"]["parts"]]
    assert model["role"] == "model" and len(model["parts"]) == len(sent_parts)
    for echoed, original in zip(model["parts"], sent_parts, strict=True):
        assert {k: v for k, v in echoed.items() if k != "thoughtSignature"} == {
            k: v for k, v in original.items() if k != "thoughtSignature"
        }
        if "thoughtSignature" in original:
            assert sig_of(echoed) == base64.b64decode(original["thoughtSignature"])
    assert sig_of(model["parts"][0]) == SIGNATURE
    assert sig_of(model["parts"][2]) == SIGNATURE[::-1]
    # both results in one user content, matched to the calls by id
    assert results["role"] == "user"
    assert [p["functionResponse"] for p in results["parts"]] == [
        {"id": "fc-1", "name": "sound_events", "response": {"output": "Dog bark 0.91"}},
        {"id": "fc-2", "name": "signal_stats", "response": {"error": "signal_stats failed"}},
    ]


async def test_a_stored_model_turn_as_json_goes_back_unchanged(fake):
    """``TurnEnd.raw`` dumped to JSON (as storage would keep it) still round-trips."""
    fake.queue(
        fg.turn(
            fg.thought("Hmm.", signature=SIGNATURE),
            fg.call("sound_events", {"top_k": 2}, call_id="fc-9", signature=SIGNATURE[:9]),
        ),
        fg.turn(fg.text("<answer>Dog</answer>")),
    )
    planner = GeminiPlanner(config(fake.url))
    messages = history()
    chunks = await turn_chunks(planner, messages)
    stored = json.loads(json.dumps(chunks[-1].raw.model_dump(mode="json", exclude_none=True)))
    calls = [c for c in chunks if isinstance(c, ToolCallRequest)]
    messages.append(ChatMessage("assistant", "", tool_calls=calls, raw=stored))
    messages.append(ChatMessage("tool", "Dog", tool_call_id="fc-9", name="sound_events"))
    await turn_chunks(planner, messages)
    model = fake.generate_requests[1].json["contents"][1]
    assert sig_of(model["parts"][0]) == SIGNATURE and sig_of(model["parts"][1]) == SIGNATURE[:9]
    assert model["parts"][1]["functionCall"] == {
        "id": "fc-9",
        "name": "sound_events",
        "args": {"top_k": 2},
    }


async def test_thoughts_stream_as_reasoning(fake):
    fake.queue(
        fg.turn(
            fg.thought("**Listening**\n"),
            fg.thought("The bark is clear.", signature=SIGNATURE),
            fg.text("<answer>Dog</answer>"),
            meta=fg.usage(40, 6, thoughts=30),
        )
    )
    planner = GeminiPlanner(config(fake.url, include_thoughts=True))
    chunks = await turn_chunks(planner, history(), tools=())
    deltas = [c for c in chunks if isinstance(c, TextDelta)]
    assert [(d.kind, d.text) for d in deltas] == [
        ("reasoning", "**Listening**\n"),
        ("reasoning", "The bark is clear."),
        ("text", "<answer>Dog</answer>"),
    ]
    end = chunks[-1]
    assert end.usage.output_tokens == 36
    # the unsigned thought is not merged into the signed one
    assert [(p.thought, p.thought_signature) for p in end.raw.parts] == [
        (True, None),
        (True, SIGNATURE),
        (None, None),
    ]
    body = fake.generate_requests[0].json
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True}
    assert "tools" not in body


async def test_rate_limit_then_success_is_retried(fake):
    fake.queue(
        fg.error(429, "Resource has been exhausted (e.g. check quota)."),
        fg.error(503, "The model is overloaded."),
        fg.turn(fg.text("<answer>Dog</answer>"), meta=fg.usage(10, 2)),
    )
    planner = GeminiPlanner(config(fake.url))
    chunks = await turn_chunks(planner, history())
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["<answer>Dog</answer>"]
    assert len(fake.generate_requests) == 3


async def test_retries_end_with_a_clear_error(fake):
    fake.queue(*(fg.error(500, "Internal error encountered.") for _ in range(3)))
    planner = GeminiPlanner(config(fake.url))
    with pytest.raises(PlannerError) as info:
        await turn_chunks(planner, history())
    assert info.value.kind == "http_500" and "Internal error encountered" in str(info.value)
    assert len(fake.generate_requests) == 3


@pytest.mark.parametrize(
    "reply",
    [fg.invalid_key(KEY), fg.error(401, f"Request had invalid credentials: {KEY}")],
    ids=["400-invalid-key", "401"],
)
async def test_bad_key_gives_one_clear_message(fake, reply):
    fake.queue(reply)
    planner = GeminiPlanner(config(fake.url))
    with pytest.raises(PlannerError) as info:
        await turn_chunks(planner, history())
    message = str(info.value)
    assert info.value.kind == "auth"
    assert "GEMINI_API_KEY" in message and KEY not in message
    assert len(fake.generate_requests) == 1  # not retried


async def test_a_blocked_prompt_is_a_clear_failure(fake):
    fake.queue(fg.Reply(chunks=[{"promptFeedback": {"blockReason": "SAFETY"}}]))
    planner = GeminiPlanner(config(fake.url))
    with pytest.raises(PlannerError) as info:
        await turn_chunks(planner, history())
    assert info.value.kind == "blocked" and "SAFETY" in str(info.value)
    assert len(fake.generate_requests) == 1


async def test_missing_key_is_reported_not_raised_at_construction(fake, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY")
    planner = GeminiPlanner(config(fake.url))
    with pytest.raises(PlannerError) as info:
        await turn_chunks(planner, history())
    assert info.value.kind == "auth" and "set GEMINI_API_KEY" in str(info.value)
    assert fake.requests == []


async def test_history_without_raw_is_rebuilt(fake):
    fake.queue(fg.turn(fg.text("ok")))
    planner = GeminiPlanner(config(fake.url))
    call = ToolCallRequest("gemini_call_7", "sound_events", {"top_k": 1})
    messages = history() + [
        ChatMessage("assistant", "Earlier answer: a dog."),
        ChatMessage("user", "And now?"),
        ChatMessage("assistant", "", tool_calls=[call]),
        ChatMessage("tool", "Dog", tool_call_id="gemini_call_7", name="sound_events"),
    ]
    await turn_chunks(planner, messages)
    contents = fake.generate_requests[0].json["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]
    assert contents[1]["parts"] == [{"text": "Earlier answer: a dog."}]
    # our own generated id is not sent to the API as if the model had given it, and its
    # first call carries the documented stand-in signature as the literal string (the old
    # code sent the string's base64, which Gemini 3+ refuses: "Thought signature is not
    # valid", langchain-ai/langchain-google#1570)
    assert contents[3]["parts"] == [
        {
            "functionCall": {"name": "sound_events", "args": {"top_k": 1}},
            "thoughtSignature": "skip_thought_signature_validator",
        }
    ]
    assert contents[4]["parts"] == [
        {"functionResponse": {"name": "sound_events", "response": {"output": "Dog"}}}
    ]


async def test_full_run_with_the_gemini_planner(fake, tmp_path: Path, tone_wav):
    store = AudioStore(tmp_path / "audio")
    audio = store.add_file(tone_wav)
    tool = ScriptedTool("sound_events", "Top classes: Dog 0.9", parameters=SPEC.parameters)
    fake.queue(
        fg.turn(
            fg.text("I will check the sounds."),
            fg.call("sound_events", {"top_k": 3, "audio_id": "audio1"}, signature=SIGNATURE),
            meta=fg.usage(200, 15),
        ),
        fg.turn(fg.text("The tool heard a dog. <answer>Dog</answer>"), meta=fg.usage(260, 12)),
    )
    planner = GeminiPlanner(config(fake.url))
    req = RunRequest("What animal?", [audio], planner, [tool], choices=["Cat", "Dog"])
    events = [e async for e in run_question(req, store=store)]
    assert events[-1].type == "run_finished", events[-1]
    (answer,) = [e for e in events if isinstance(e, ev.Answer)]
    assert answer.choice == "Dog"
    assert tool.calls == [{"top_k": 3}]
    assert events[-1].input_tokens == 460 and events[-1].output_tokens == 27
    assert events[-1].cost == pytest.approx((460 * 1.0 + 27 * 4.0) / 1e6)
    contents = fake.generate_requests[1].json["contents"]
    model, result = contents[-2], contents[-1]
    assert sig_of(model["parts"][1]) == SIGNATURE
    assert result["parts"][0]["functionResponse"]["response"] == {"output": "Top classes: Dog 0.9"}


# -- audio tool ------------------------------------------------------------------------------


def tone(seconds: float = 2.0) -> np.ndarray:
    t = np.arange(int(16_000 * seconds)) / 16_000
    return (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)


def context(tone_wav: Path, samples: np.ndarray) -> ToolContext:
    store = AudioStore(tone_wav.parent / "store")
    return ToolContext(audio=store.add_file(tone_wav), samples=samples)


async def test_audio_tool_sends_the_audio_inline(fake, tone_wav):
    fake.queue(fg.turn(fg.text("A steady 440 Hz tone."), meta=fg.usage(300, 10, audio=256)))
    tool = GeminiAudioTool(config(fake.url))
    assert tool.local is False and set(tool.parameters["properties"]) == {
        "question",
        "start",
        "end",
    }
    samples = tone(2.0)
    result = await tool(
        context(tone_wav, samples), {"question": "What do you hear?", "start": 0.5, "end": 1.5}
    )
    assert result.output == "A steady 440 Hz tone."
    assert result.data["answer"] == "A steady 440 Hz tone." and result.data["uploaded"] is False
    assert result.usage.input_tokens == 300 and result.usage.output_tokens == 10
    assert result.usage.audio_seconds == pytest.approx(1.0)
    assert result.cost == pytest.approx((44 * 1.0 + 256 * 7.0 + 10 * 4.0) / 1e6)

    (sent,) = fake.generate_requests
    assert sent.path == f"/v1/models/{MODEL}:generateContent"
    (content,) = sent.json["contents"]
    question, audio = content["parts"]
    assert question["text"].startswith("What do you hear?")
    assert "0.5 s to 1.5 s" in question["text"]
    assert audio["inlineData"]["mimeType"] == "audio/wav"
    wav = base64.urlsafe_b64decode(audio["inlineData"]["data"])
    assert wav[:4] == b"RIFF" and wav[8:12] == b"WAVE"
    assert wav == to_wav_bytes(samples[8_000:24_000])
    assert "systemInstruction" in sent.json
    assert fake.files == {} and not [r for r in fake.requests if "upload" in r.path]


async def test_audio_tool_uploads_above_the_inline_limit(tone_wav):
    server = fg.FakeGemini(processing_polls=1)
    with serve(server.app) as url:
        server.queue(fg.turn(fg.text("A tone."), meta=fg.usage(100, 3)))
        tool = GeminiAudioTool(config(url, inline_limit_bytes=1000, file_poll_s=0.01))
        samples = tone(1.0)
        result = await tool(context(tone_wav, samples), {"question": "What is it?"})
    assert result.output == "A tone." and result.data["uploaded"] is True
    assert server.refused == []  # the upload's metadata fits google-genai's File; ACTIVE first
    start, finish = [r for r in server.requests if r.path.startswith("/upload/")]
    assert start.headers["x-goog-upload-protocol"] == "resumable"
    assert start.headers["x-goog-upload-command"] == "start"
    assert start.headers["x-goog-upload-header-content-type"] == "audio/wav"
    assert start.headers["x-goog-api-key"] == KEY
    assert finish.headers["x-goog-upload-command"] == "upload, finalize"
    assert finish.body == to_wav_bytes(samples)
    (file_id,) = server.uploaded
    polls = [r for r in server.requests if r.method == "GET"]
    assert len(polls) == 2  # PROCESSING once, then ACTIVE
    (sent,) = server.generate_requests
    question, audio = sent.json["contents"][0]["parts"]
    assert question["text"] == "What is it?"
    assert audio == {"fileData": {"fileUri": f"{url}/v1/files/{file_id}", "mimeType": "audio/wav"}}
    # deleted after the answer
    assert server.deleted == [f"files/{file_id}"] and server.files == {}
    order = [(r.method, r.path.split("/")[-1]) for r in server.requests]
    assert order.index(("DELETE", file_id)) > order.index(("POST", f"{MODEL}:generateContent"))


async def test_an_uploaded_file_is_asked_about_only_once_it_is_active(tone_wav):
    """Gemini refuses a file still PROCESSING (400 FAILED_PRECONDITION) and one deleted or
    expired (403); the tool waits for ACTIVE, and nothing refers to the file afterwards."""
    from google import genai
    from google.genai import errors, types

    server = fg.FakeGemini(processing_polls=3)
    with serve(server.app) as url:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=url))
        wav = io.BytesIO(to_wav_bytes(tone(0.5)))
        early = await client.aio.files.upload(
            file=wav, config=types.UploadFileConfig(mime_type="audio/wav")
        )
        assert early.state == types.FileState.PROCESSING
        part = types.Part.from_uri(file_uri=early.uri or "", mime_type="audio/wav")
        with pytest.raises(errors.ClientError) as refused:  # used without waiting
            await client.aio.models.generate_content(model=MODEL, contents=["What?", part])
        assert refused.value.code == 400 and refused.value.status == "FAILED_PRECONDITION"
        assert "is not in an ACTIVE state" in str(refused.value.message)
        await client.aio.files.delete(name=early.name or "")
        with pytest.raises(errors.ClientError) as gone:
            await client.aio.models.generate_content(model=MODEL, contents=["What?", part])
        assert gone.value.code == 403 and "may not exist" in str(gone.value.message)
        assert server.refused == ["gemini_file_not_active", "gemini_file_gone"]

        server.queue(fg.turn(fg.text("A tone."), meta=fg.usage(100, 3)))
        tool = GeminiAudioTool(config(url, inline_limit_bytes=1000, file_poll_s=0.01))
        result = await tool(context(tone_wav, tone(1.0)), {"question": "What is it?"})
    assert result.output == "A tone." and result.data["uploaded"] is True
    assert server.refused == ["gemini_file_not_active", "gemini_file_gone"]  # none since
    order = [(r.method, r.path.split("/")[-1]) for r in server.requests]
    asked = order.index(("POST", f"{MODEL}:generateContent"), len(order) - 3)
    polls = [m for m, _ in order[:asked] if m == "GET"]
    assert len(polls) == 4  # PROCESSING three times, then ACTIVE; then asked; then deleted
    assert order[-1][0] == "DELETE" and server.files == {}


async def test_uploaded_audio_is_deleted_when_the_question_fails(tone_wav):
    server = fg.FakeGemini()
    with serve(server.app) as url:
        server.queue(fg.error(400, "Request contains an invalid argument."))
        tool = GeminiAudioTool(config(url, inline_limit_bytes=1000))
        with pytest.raises(ToolError) as info:
            await tool(context(tone_wav, tone(1.0)), {"question": "What is it?"})
    assert "invalid argument" in str(info.value)
    assert len(server.deleted) == 1 and server.files == {}


async def test_audio_tool_errors_are_tool_errors(fake, tone_wav, monkeypatch):
    fake.queue(fg.error(429, "quota"), fg.invalid_key(KEY))
    tool = GeminiAudioTool(config(fake.url))
    with pytest.raises(ToolError) as info:
        await tool(context(tone_wav, tone(1.0)), {"question": "What is it?"})
    assert "GEMINI_API_KEY" in str(info.value) and KEY not in str(info.value)
    assert len(fake.generate_requests) == 2  # the 429 was retried, the bad key was not
    with pytest.raises(ToolError, match="question"):
        await tool(context(tone_wav, tone(1.0)), {"question": " "})
    monkeypatch.delenv("GEMINI_API_KEY")
    with pytest.raises(ToolError, match="set GEMINI_API_KEY"):
        await GeminiAudioTool(config(fake.url))(context(tone_wav, tone(1.0)), {"question": "?"})


# -- error classification --------------------------------------------------------------------


def test_transport_errors_are_classified():
    import httpx2

    cfg = config("http://127.0.0.1:9")
    request = httpx.Request("POST", "http://127.0.0.1:9")
    for exc, kind in [
        (httpx.ReadTimeout("slow", request=request), "timeout"),
        (httpx2.ConnectTimeout("slow"), "timeout"),
        (httpx.ConnectError("refused", request=request), "connection"),
        (httpx2.RemoteProtocolError("closed"), "connection"),
    ]:
        error = classify_error(exc, cfg)
        assert error.kind == kind, (exc, error)
    assert classify_error(ValueError("x"), cfg).kind == "remote_error"
