"""Answer options scored against speech with whisper itself (teacher forcing).

For a question about what is said, each option is read as if it were the transcript: the
bundled whisper model's mean log-probability per token of the option's text says how well
it fits the speech, even where the free transcript misspells or misses the word.
"""

from __future__ import annotations

import numpy as np

from agent.local_models.whisper_asr import SAMPLE_RATE, WINDOW_S, get_model, span_context
from agent.number_words import number_value

MAX_OPTION_TOKENS = 24


def option_scores(samples: np.ndarray, options: list[str]) -> list[float]:
    """How well each option fits the speech as its transcript: whisper's mean log-probability
    per token of the option's text, read with the option forced (teacher forcing), best of a
    few spellings ("four", "Four", "4"). Clips up to 30 s; the first 24 tokens of an option.
    """
    import ctranslate2
    from faster_whisper.audio import pad_or_trim
    from faster_whisper.tokenizer import Tokenizer

    model, _ = get_model()
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)[: WINDOW_S * SAMPLE_RATE]
    if not options:
        return []
    tokenizer = Tokenizer(
        model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language="en"
    )
    # The features exactly as faster-whisper's transcribe cuts a clip's first window (its
    # last frame left out, padded to 3,000 frames), encoded through the model's ``encode``:
    # the transcript of the same clip has already encoded them, and the output is reused.
    features = model.feature_extractor(audio)
    frames = model.feature_extractor.nb_max_frames
    features = pad_or_trim(features[:, : min(frames, features.shape[-1] - 1)], frames)
    encoded = model.encode(features)
    prefix = [*tokenizer.sot_sequence, tokenizer.no_timestamps]
    prompts: list[list[int]] = []
    targets: list[tuple[int, int, int]] = []  # (option, variant, token id) per prompt
    variants_of: list[list[list[int]]] = []
    for index, option in enumerate(options):
        text = option.strip()
        spellings = {" " + text, " " + text[:1].upper() + text[1:], " " + text.lower()}
        value = number_value(text)
        if value is not None:
            spellings.add(f" {value}")
        ids_list = [tokenizer.encode(s)[:MAX_OPTION_TOKENS] for s in sorted(spellings)]
        ids_list = [ids for ids in ids_list if ids]
        variants_of.append(ids_list)
        for v, ids in enumerate(ids_list):
            for k, token in enumerate(ids):
                prompts.append(prefix + ids[:k])
                targets.append((index, v, token))
    # One decoding step per prompt (the logits of the next token), prompts of one length
    # in one batch.
    # in one batch; the spellings share prefixes, so each distinct prompt runs once.
    unique = sorted({tuple(p) for p in prompts}, key=len)
    logits_of: dict[tuple[int, ...], np.ndarray] = {}
    encoded_np = np.asarray(encoded)
    for length in sorted({len(p) for p in unique}):
        members = [p for p in unique if len(p) == length]
        batch = ctranslate2.StorageView.from_array(np.repeat(encoded_np, len(members), 0))
        outputs = model.model.generate(
            batch,
            [list(p) for p in members],
            max_length=length + 1,
            beam_size=1,
            return_logits_vocab=True,
            suppress_blank=False,
            suppress_tokens=[],
        )
        for prompt, output in zip(members, outputs, strict=True):
            logits_of[prompt] = np.asarray(output.logits[0][0], dtype=np.float64)
    sums: dict[tuple[int, int], list[float]] = {}
    for (index, v, token), prompt in zip(targets, prompts, strict=True):
        logits = logits_of[tuple(prompt)]
        top = logits.max()
        log_softmax = logits[token] - (top + np.log(np.exp(logits - top).sum()))
        sums.setdefault((index, v), []).append(float(log_softmax))
    scores = []
    for index in range(len(options)):
        means = [np.mean(sums[(index, v)]) for v in range(len(variants_of[index]))]
        scores.append(round(float(max(means)), 3) if means else -99.0)
    return scores


SPAN_PAD_S = 0.2  # silence put around a span read on its own
SPAN_WIDEN_S = 0.25  # the recording's own sound taken in on each side of a span


def span_words(
    samples: np.ndarray, spans: list[tuple[float, float]], vocabulary: list[str]
) -> list[dict[str, object]]:
    """Each speech span read as the best word of a closed vocabulary (a constrained second
    pass, e.g. the ten digit words): the word whose forced reading whisper finds likeliest,
    its mean log-probability, and its margin over the next best (how sure the choice is)."""
    audio = np.asarray(samples, dtype=np.float32).reshape(-1)
    pad = np.zeros(int(SPAN_PAD_S * SAMPLE_RATE), np.float32)
    found: list[dict[str, object]] = []
    if not vocabulary or not spans:
        return found
    ends = [0.0] + [float(e) for _, e in spans[:-1]]
    starts = [float(s) for s, _ in spans[1:]] + [audio.size / SAMPLE_RATE]
    for (start, end), before, after in zip(spans, ends, starts, strict=True):
        # voice activity misses a soft onset ("z" of "zero" heard as "one"): a little more
        # of the sound around the span, never into the next or the last span
        low = max(before, float(start) - SPAN_WIDEN_S)
        high = min(after, float(end) + SPAN_WIDEN_S)
        piece = audio[max(0, int(low * SAMPLE_RATE)) : int(high * SAMPLE_RATE)]
        if piece.size < SAMPLE_RATE // 20:
            continue
        with span_context():  # a 10 s encoder context: 7 times faster, as many right
            scores = option_scores(np.concatenate([pad, piece, pad]), vocabulary)
        ranked = sorted(range(len(scores)), key=lambda i: -scores[i])
        second = scores[ranked[1]] if len(ranked) > 1 else scores[ranked[0]] - 9.0
        found.append({
            "start": round(float(start), 2),
            "end": round(float(end), 2),
            "word": vocabulary[ranked[0]],
            "logprob": scores[ranked[0]],
            "margin": round(scores[ranked[0]] - second, 3),
        })  # fmt: skip
    return found
