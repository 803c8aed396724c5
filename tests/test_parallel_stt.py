"""Long audio transcribed in parallel groups: same text as one sequential job, segments in
time order with their times on the whole recording.

Clips are composed in code from the fixtures (see tests/fixtures/PROVENANCE.md): the padded
LibriSpeech reading and spoken digits, with pauses between them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from agent.audio import load_samples
from agent.local_models import parallel_stt, whisper_asr
from agent.local_models.parallel_stt import split_contiguous, split_groups
from agent.local_models.whisper_asr import Chunk, Part, Segment

FIXTURES = Path(__file__).parent / "fixtures"
SR = 16_000
PIECES = [
    "speech_padded_librispeech_3436-172162-0000.wav",  # 1 s silence, 2.4 s speech, 1 s silence
    "digit_6_theo_4.wav",
    "digit_1_george_1.wav",
    "speech_padded_librispeech_3436-172162-0000.wav",
    "digit_5_jackson_0.wav",
    "digit_7_jackson_2.wav",
]


def _clip(lead_s: float = 0.0) -> tuple[np.ndarray, list[float]]:
    """The pieces one after another, 0.8 s apart, after ``lead_s`` of silence; and where each
    piece starts."""
    parts, starts, at = [np.zeros(int(lead_s * SR), np.float32)], [], lead_s
    for name in PIECES:
        audio = load_samples(FIXTURES / name)
        audio = 0.7 * audio / np.max(np.abs(audio))
        starts.append(at)
        parts += [audio, np.zeros(int(0.8 * SR), np.float32)]
        at += (audio.size + int(0.8 * SR)) / SR
    return np.concatenate(parts).astype(np.float32), starts


def test_split_contiguous_keeps_order_and_balances():
    items = [5, 5, 5, 5, 1, 1, 1, 1]
    groups = split_contiguous(items, 2, float)
    assert [x for g in groups for x in g] == items
    assert groups == [[5, 5], [5, 5, 1, 1, 1, 1]]
    assert split_contiguous([3.0], 4, float) == [[3.0]]
    assert split_contiguous([], 2, float) == []
    chunks = [Chunk([{"start": i * 10, "end": i * 10 + 5}]) for i in range(5)]
    assert [len(g) for g in split_groups(chunks, 2)] in ([2, 3], [3, 2])


def test_merge_puts_segments_in_time_order_whatever_order_the_groups_finish():
    def seg(start: float, text: str) -> Segment:
        return Segment(start, start + 1, text, -0.1, 0.0)

    late = Part([seg(40.0, "c"), seg(35.0, "b")], "en", 1.0)
    early = Part([seg(2.0, "a")], "en", 1.0)
    merged = whisper_asr.merge([late, early])
    assert [s.text for s in merged.segments] == ["a", "b", "c"]
    assert merged.text == "a b c"


@pytest.mark.models
def test_parallel_groups_give_the_sequential_text_with_absolute_times():
    clip, starts = _clip()
    # Windows of at most 3 s of speech: several chunks in a 15 s clip.
    sequential = whisper_asr.transcribe_chunked(clip, chunk_s=3)
    parallel = asyncio.run(parallel_stt.transcribe(clip, workers=2, chunk_s=3))
    assert len(whisper_asr.speech_chunks(clip, 3)) >= 3
    assert parallel.text == sequential.text
    assert "adventure" in parallel.text.lower()
    assert [(s.start, s.end) for s in parallel.segments] == [
        (s.start, s.end) for s in sequential.segments
    ]
    times = [s.start for s in parallel.segments]
    assert times == sorted(times)
    duration = clip.size / SR
    assert all(0 <= s.start < s.end <= duration + 0.01 for s in parallel.segments)
    # The first speech is the reading after its 1 s of silence; the last is the final digit.
    assert 0.7 <= parallel.segments[0].start <= 1.3
    assert parallel.segments[-1].end >= starts[-1]


@pytest.mark.models
def test_parallel_word_times_land_on_the_whole_recording():
    clip, starts = _clip(lead_s=20.0)  # the speech starts 20 s in
    result = asyncio.run(parallel_stt.transcribe(clip, workers=2, chunk_s=3, word_timestamps=True))
    words = [w for s in result.segments for w in s.words]
    assert words, result
    assert all(b.start >= a.start for a, b in zip(words, words[1:], strict=False))
    adventure = [w for w in words if "adventure" in w.word.lower()]
    assert len(adventure) == 2
    # Each reading starts 1 s into its piece (its leading silence).
    for word, piece in zip(adventure, (starts[0], starts[3]), strict=True):
        assert piece + 0.8 <= word.start <= piece + 2.0, (word, piece)


@pytest.mark.models
def test_per_span_groups_give_the_sequential_segments():
    from agent.local_models import vad

    clip, _ = _clip()
    spans = vad.speech_spans(clip, speech_pad_ms=100)
    assert len(spans) >= 4
    sequential = whisper_asr.transcribe_spans(clip, spans)
    parallel = asyncio.run(parallel_stt.transcribe_spans(clip, spans, workers=2))
    assert [(s.start, s.end, s.text) for s in parallel.segments] == [
        (s.start, s.end, s.text) for s in sequential.segments
    ]


@pytest.mark.models
async def test_the_transcribe_tool_takes_the_parallel_path_on_long_audio():
    from agent.local_models import executor
    from agent.tools.base import ToolContext
    from agent.tools.local_asr import TranscribeTool

    clip, starts = _clip(lead_s=30.0)  # over 30 s: the parallel path; speech from 30 s on
    before = executor.get_executor().calls
    ctx = ToolContext(audio=None, samples=clip)  # type: ignore[arg-type]
    result = await TranscribeTool()(ctx, {"per_span": True, "word_timestamps": True})
    groups = min(2, executor.model_workers())  # one group per model worker
    assert executor.get_executor().calls - before >= 1 + groups  # voice activity, the groups
    segments = result.data["segments"]
    assert len(segments) >= 4
    assert [s["start"] for s in segments] == sorted(s["start"] for s in segments)
    assert segments[0]["start"] >= 30.0 and "adventure" in segments[0]["text"].lower()
    words = [w for s in segments for w in s["words"]]
    assert words and all(w["start"] >= 30.0 for w in words)
    whole = await TranscribeTool()(ctx, {})
    assert "adventure" in whole.data["text"].lower()
    assert whole.data["segments"][0]["start"] >= 30.0
