"""Dev sets for the offline planner, composed from real recordings in ../shared/data.

    python -m bench.devsets                       # writes data/devsets/devsets.json + audio/
    python -m bench.devsets --out DIR --per-set 20 --seed 0
    python -m bench.devsets --only words --seed 7 --out data/devsets-words/seed-7
    python -m bench.run_benchmark data/devsets/devsets.json --group-by category -v

Every clip is built by composition from recordings no one here made (ESC-50 sounds, spoken
digits from FSDD); the output is one MMAU-format file (``audio_id``, ``question``,
``choices``, ``answer``, ``task``, ``category``, ``sub-category``) plus ``expect_guess`` on
items whose audio cannot decide the answer. The categories:

- ``which_sound``: a whole ESC-50 clip, 4 sound classes to choose from;
- ``what_said``: a spoken digit, alone, padded with silence, or over an ESC-50 background;
- ``count``: a sound repeated 2-5 times with gaps, or a sequence of 2-5 spoken digits;
- ``order``: 2-3 different sounds one after another (which is first / last / after X), or
  3-4 spoken digits (which is first / second / third / last);
- ``speakers``: 2-4 turns by one speaker, or by two different speakers taking turns (how
  many speakers / people are talking); the voices: the six FSDD digit speakers (men) and
  phrases of the three LibriSpeech readers in ../shared/data/librosa (two men, one woman),
  band-limited to the FSDD's 8 kHz; a quarter of the two-speaker items turn quickly
  (pauses under 0.3 s);
- ``spoken_words``: 3-6 digits said quickly (pauses of 0.12-0.35 s, so voice activity joins
  several into one span): how many times one digit is said, which is said at a given time,
  which comes right after another (the word timestamps' questions);
- ``guess``: digital silence, faint noise, 0.1 s clips; the right behaviour is a guess
  (``expect_guess``), so the runner scores how many were answered as guesses;
- ``order_whole``: two or three whole ESC-50 clips one after another, as they are (with
  their own silences and background), 0.5 s apart; choices "A, then B" whose distractors swap
  the order or swap in a third sound (``bench.devsets_whole``);
- ``open``: questions without choices, as people type them: yes/no (a sound, speech, music,
  a word), what kind, how many, what is said, when, and yes/no about a property (the speaker
  a man or a woman, background noise); scored by ``bench.devsets_open``;
- ``words``: what sound (ESC-50, scored by everyday names), what number (one FSDD digit, or
  3-5 in a row) and which key to press (phone menus, synthetic: espeak-ng), scored by
  ``bench.devsets_words``.

Deterministic for a seed. Question wording is drawn from several phrasings written here
(not taken from MMAU).
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.compose import (  # noqa: F401 - loudest, normalise: the tests compose with them
    SR,
    Sources,
    concat_timed,
    concat_with_gaps,
    faint_noise,
    loudest,
    normalise,
    silence,
)
from bench.devsets_open import open_questions
from bench.devsets_whole import order_whole
from bench.devsets_words import words_questions

_REPO = Path(__file__).resolve().parent.parent
# ../shared/data next to the clone (a worktree under wt/ looks two levels up)
DEFAULT_DATA = next(
    (p for p in (_REPO.parent / "shared" / "data", _REPO.parent.parent / "shared" / "data")
     if p.is_dir()),
    _REPO.parent / "shared" / "data",
)  # fmt: skip
DEFAULT_OUT = _REPO / "data" / "devsets"
DIGIT_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth"}
COUNT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}

WHICH_SOUND_Q = [
    "Which sound is heard in this recording?",
    "What is making the noise in this clip?",
    "Identify the sound source.",
    "What do you hear?",
    "Which of these best describes the sound?",
]
WHAT_SAID_Q = [
    "Which number is spoken?",
    "What digit does the speaker say?",
    "What word is said in the recording?",
    "The person says a number. Which one?",
]
COUNT_SOUND_Q = [
    "How many times is the {s} sound heard?",
    "How many {s} sounds occur in the recording?",
    "Count the {s} events. How many are there?",
    "How many separate sound events are there?",
]
COUNT_DIGIT_Q = [
    "How many numbers are spoken?",
    "How many digits does the speaker say?",
    "Count the spoken numbers. How many are there?",
    "How many words are said in total?",
]
COUNT_SPEAKERS_Q = [
    "How many different speakers are there in the recording?",
    "How many people are talking?",
    "How many speakers can you hear?",
]
ORDER_SOUND_Q = {
    "first": ["Which sound comes first?", "What is heard at the start of the recording?"],
    "last": ["Which sound is heard last?", "What sound ends the recording?"],
    "after": ["Which sound comes right after the {s}?", "What is heard immediately after the {s}?"],
}
COUNT_WORD_Q = [
    "How many times is the number {w} said?",
    "How often is '{w}' spoken?",
    "Count how many times the word '{w}' is said.",
]
AT_TIME_Q = [
    "Which number is spoken at about {t} seconds?",
    "What is said at {t} s?",
    "Which digit is heard at around {t} seconds?",
]
AFTER_WORD_Q = [
    "Which number comes right after {w}?",
    "What is said immediately after '{w}'?",
]
ORDER_DIGIT_Q = [
    "Which digit is spoken {o}?",
    "What is the {o} number said?",
    "Which number comes {o} in the sequence?",
]


# LibriSpeech readings in ../shared/data/librosa (reader, sex from the attribution files)
READINGS = {
    "3436-172162-0000": "libri_anders_lankford_m",
    "198-209-0000": "libri_heather_barnett_f",
    "5703-47212-0000": "libri_garth_comira_m",
}


# Music in ../shared/data/librosa (the open questions' "is there music")
MUSIC = [
    "442789__lena-orsa__happy-music-pistachio-ice-cream-ragtime", "Kevin_MacLeod_-_Vibe_Ace",
    "147793__setuniman__sweet-waltz-0i-22mi", "admiralbob77_-_Choice_-_Drum-bass",
    "Hungarian_Dance_number_5_-_Allegro_in_F_sharp_minor_(string_orchestra)",
    "Karissa_Hobbs_-_Lets_Go_Fishin", "sorohanro_-_solo-trumpet-06",
    "Kevin_MacLeod_-_P_I_Tchaikovsky_Dance_of_the_Sugar_Plum_Fairy",
]  # fmt: skip


def load_sources(data: Path) -> Sources:
    from agent.audio import load_samples

    esc = []
    for row in csv.DictReader((data / "esc50" / "meta.csv").open()):
        name = row["category"].replace("_", " ")
        esc.append((name, load_samples(data / "esc50" / "audio" / row["filename"])))
    digits = []
    for row in csv.DictReader((data / "fsdd" / "labels.csv").open()):
        digits.append((row["word"], row["speaker"], load_samples(data / "fsdd" / row["file"])))
    phrases = []
    for name, reader in READINGS.items():
        path = data / "librosa" / f"{name}.ogg"
        if path.is_file():
            phrases += [(reader, p) for p in reading_phrases(load_samples(path))]
    music = [
        (name, load_samples(data / "librosa" / f"{name}.ogg"))
        for name in MUSIC
        if (data / "librosa" / f"{name}.ogg").is_file()
    ]
    return Sources(esc, digits, phrases, music)


def telephone_band(samples: np.ndarray) -> np.ndarray:
    """Through 8 kHz and back, so a reading has the bandwidth of the FSDD digits (8 kHz
    recordings) and the channel alone does not tell the voices apart."""
    from scipy.signal import resample_poly

    return resample_poly(resample_poly(samples, 1, 2), 2, 1).astype(np.float32)[: samples.size]


def reading_phrases(samples: np.ndarray, longest: float = 2.0) -> list[np.ndarray]:
    """The phrases of a reading (cut at its pauses), at most ``longest`` s each, faded out."""
    from agent.local_models import vad

    out = []
    for start, end in vad.speech_spans(samples, min_silence_ms=120, speech_pad_ms=30):
        piece = samples[int(start * SR) : int(min(end, start + longest) * SR)].copy()
        if piece.size >= 0.6 * SR:
            fade = min(piece.size, int(0.1 * SR))
            piece[-fade:] *= np.linspace(1, 0, fade, dtype=np.float32)
            out.append(telephone_band(piece))
    return out


def choices_with(answer: str, pool: list[str], rng: random.Random, n: int = 4) -> list[str]:
    others = rng.sample(sorted({p for p in pool if p != answer}), n - 1)
    choices = [answer, *others]
    rng.shuffle(choices)
    return choices


def number_choices(answer: int, rng: random.Random, words: bool) -> list[str]:
    low = max(1, answer - rng.randint(1, 3))
    options = sorted({answer, *range(low, low + 6)} - {0})
    picked = [answer, *rng.sample([o for o in options if o != answer], 3)]
    rng.shuffle(picked)
    return [COUNT_WORDS.get(p, str(p)) if words else str(p) for p in picked]


class Builder:
    def __init__(self, sources: Sources, out: Path, seed: int) -> None:
        self.src = sources
        self.out = out
        self.rng = random.Random(seed)
        self.items: list[dict] = []
        (out / "audio").mkdir(parents=True, exist_ok=True)

    def add(self, category: str, sub: str, audio: np.ndarray, question: str, choices, answer,
            task: str, expect_guess: bool = False, **extra) -> None:  # fmt: skip
        import soundfile as sf

        name = f"{category}_{sub}_{len(self.items):03d}.wav"
        sf.write(self.out / "audio" / name, np.clip(audio, -1, 1), SR, subtype="PCM_16")
        item = {
            "id": f"dev-{len(self.items):03d}",
            "audio_id": f"./audio/{name}",
            "question": question,
            "choices": list(choices),
            "answer": answer,
            "task": task,
            "category": category,
            "sub-category": sub,
            "expect_guess": expect_guess,
        }
        item.update(extra)
        self.items.append(item)

    def esc_pool(self) -> list[str]:
        return [name for name, _ in self.src.esc]

    def which_sound(self, n: int) -> None:
        for name, samples in self.rng.sample(self.src.esc, n):
            q = self.rng.choice(WHICH_SOUND_Q)
            self.add("which_sound", "esc50", samples, q, choices_with(name, self.esc_pool(),
                     self.rng), name, "sound")  # fmt: skip

    def what_said(self, n: int) -> None:
        kinds = ["plain", "padded", "over_sound"]
        for i in range(n):
            word, _, samples = self.rng.choice(self.src.digits)
            kind = kinds[i % 3]
            audio = normalise(samples)
            if kind == "padded":
                audio = np.concatenate([silence(self.rng.uniform(0.5, 2)), audio,
                                        silence(self.rng.uniform(0.5, 2))])  # fmt: skip
            elif kind == "over_sound":
                _, background = self.rng.choice(self.src.esc)
                bed = normalise(loudest(background, audio.size / SR + 1.0), 0.12)
                start = int(0.5 * SR)
                bed[start : start + audio.size] += audio
                audio = bed
            q = self.rng.choice(WHAT_SAID_Q)
            self.add("what_said", kind, audio, q, choices_with(word, DIGIT_WORDS, self.rng),
                     word, "speech")  # fmt: skip

    def count(self, n: int) -> None:
        for i in range(n):
            k = self.rng.randint(2, 5)
            words = self.rng.random() < 0.5
            if i % 2 == 0:
                name, samples = self.rng.choice(self.src.esc)
                burst = normalise(loudest(samples, self.rng.uniform(0.4, 0.8)))
                burst *= np.hanning(burst.size).astype(np.float32) ** 0.25
                audio = concat_with_gaps([burst] * k, self.rng, gap=(0.6, 1.2))
                q = self.rng.choice(COUNT_SOUND_Q).format(s=name)
                sub = "sound_repeats"
            else:
                parts = [normalise(self.rng.choice(self.src.digits)[2]) for _ in range(k)]
                audio = concat_with_gaps(parts, self.rng, gap=(0.4, 0.9))
                q = self.rng.choice(COUNT_DIGIT_Q)
                sub = "digit_sequence"
            choices = number_choices(k, self.rng, words)
            answer = COUNT_WORDS.get(k, str(k)) if words else str(k)
            self.add("count", sub, audio, q, choices, answer, "sound" if i % 2 == 0 else "speech")

    def order(self, n: int) -> None:
        for i in range(n):
            if i % 2 == 0:
                k = self.rng.randint(2, 3)
                picked = self.rng.sample(self.src.esc, k)
                parts = [normalise(loudest(s, self.rng.uniform(1.2, 2.0))) for _, s in picked]
                audio = concat_with_gaps(parts, self.rng, gap=(0.5, 1.0))
                names = [name for name, _ in picked]
                which = self.rng.choice(["first", "last", "after"])
                if which == "first":
                    answer, q = names[0], self.rng.choice(ORDER_SOUND_Q["first"])
                elif which == "last":
                    answer, q = names[-1], self.rng.choice(ORDER_SOUND_Q["last"])
                else:
                    j = self.rng.randrange(k - 1)
                    answer = names[j + 1]
                    q = self.rng.choice(ORDER_SOUND_Q["after"]).format(s=names[j])
                # the distractors include the other sounds that are present
                pool = [x for x in names if x != answer]
                extra = [x for x in self.esc_pool() if x not in names]
                choices = [answer, *pool, *self.rng.sample(extra, 4 - len(pool) - 1)][:4]
                self.rng.shuffle(choices)
                self.add("order", f"sound_{which}", audio, q, choices, answer, "sound",
                         sequence=names)  # fmt: skip
            else:
                spoken = [w for w in DIGIT_WORDS if any(d[0] == w for d in self.src.digits)]
                k = min(self.rng.randint(3, 4), len(spoken))
                words = self.rng.sample(spoken, k)
                parts = []
                for word in words:
                    options = [d for d in self.src.digits if d[0] == word]
                    parts.append(normalise(self.rng.choice(options)[2]))
                audio = concat_with_gaps(parts, self.rng, gap=(0.4, 0.9))
                pos = self.rng.choice([1, 2, 3, k])
                ordinal = "last" if pos == k and self.rng.random() < 0.5 else ORDINALS[pos]
                q = self.rng.choice(ORDER_DIGIT_Q).format(o=ordinal)
                answer = words[pos - 1]
                pool = [w for w in words if w != answer]
                choices = [answer, *self.rng.sample(pool, min(3, len(pool)))][:4]
                self.rng.shuffle(choices)
                self.add("order", "digit_position", audio, q, choices, answer, "speech",
                         sequence=words)  # fmt: skip

    def voices(self) -> dict[str, list[np.ndarray]]:
        """Recordings per speaker: six FSDD digit speakers (men) and three LibriSpeech
        readers (two men, one woman) cut into phrases."""
        by_speaker: dict[str, list[np.ndarray]] = {}
        for _, speaker, samples in self.src.digits:
            by_speaker.setdefault(speaker, []).append(samples)
        for reader, samples in self.src.phrases:
            by_speaker.setdefault(reader, []).append(samples)
        return by_speaker

    def speakers(self, n: int) -> None:
        by_speaker = self.voices()
        names = sorted(by_speaker)
        for i in range(n):
            two = i % 2 == 1 and len(names) > 1
            # a quarter of the two-speaker items take turns quickly: pauses under 0.3 s,
            # so voice activity joins the turns into one span
            quick = two and i % 4 == 3
            if two:
                a, b = self.rng.sample(names, 2)
                turns = [a] * self.rng.randint(1, 2) + [b] * self.rng.randint(1, 2)
                if self.rng.random() < 0.3:
                    turns.append(a)  # the first speaker again
            else:
                turns = [self.rng.choice(names)] * self.rng.randint(2, 4)
            parts = [normalise(self.rng.choice(by_speaker[who])) for who in turns]
            gap = (0.12, 0.25) if quick else (0.4, 0.9)
            audio = concat_with_gaps(parts, self.rng, gap=gap)
            k = len(set(turns))
            words = self.rng.random() < 0.5
            choices = number_choices(k, self.rng, words)
            answer = COUNT_WORDS.get(k, str(k)) if words else str(k)
            q = self.rng.choice(COUNT_SPEAKERS_Q)
            sub = "one" if not two else "two_quick" if quick else "two"
            self.add("speakers", sub, audio, q, choices, answer, "speech",
                     sequence=turns)  # fmt: skip

    def spoken_words(self, n: int) -> None:
        """Digits said quickly one after another (pauses of 0.12-0.35 s, so voice activity
        joins several into one span): how many times one of them is said, which is said at
        a given time, which comes right after another."""
        kinds = ["word_count", "at_time", "after_word"]
        for i in range(n):
            kind = kinds[i % 3]
            spoken = [w for w in DIGIT_WORDS if any(d[0] == w for d in self.src.digits)]
            if kind == "word_count":
                target = self.rng.choice(spoken)
                k = self.rng.randint(1, 3)
                pool = [w for w in spoken if w != target]
                others = self.rng.sample(pool, min(self.rng.randint(2, 3), len(pool)))
                words = [target] * k + others
                self.rng.shuffle(words)
            else:
                words = self.rng.sample(spoken, min(self.rng.randint(3, 5), len(spoken)))
            parts = []
            for word in words:
                options = [d for d in self.src.digits if d[0] == word]
                parts.append(normalise(self.rng.choice(options)[2]))
            audio, times = concat_timed(parts, self.rng, gap=(0.12, 0.35))
            if kind == "word_count":
                q = self.rng.choice(COUNT_WORD_Q).format(w=target)
                words_out = self.rng.random() < 0.5
                choices = number_choices(k, self.rng, words_out)
                answer = COUNT_WORDS.get(k, str(k)) if words_out else str(k)
            else:
                if kind == "at_time":
                    j = self.rng.randrange(len(words))
                    t = round(sum(times[j]) / 2, 1)
                    q = self.rng.choice(AT_TIME_Q).format(t=t)
                else:
                    j = self.rng.randrange(1, len(words))
                    q = self.rng.choice(AFTER_WORD_Q).format(w=words[j - 1])
                answer = words[j]
                pool = [w for w in words if w != answer]
                extra = [w for w in DIGIT_WORDS if w not in words]
                picked = self.rng.sample(pool, min(3, len(pool)))
                choices = [answer, *picked, *self.rng.sample(extra, 3 - len(picked))]
                self.rng.shuffle(choices)
            spans = [[round(a, 2), round(b, 2)] for a, b in times]
            self.add("spoken_words", kind, audio, q, choices, answer, "speech",
                     sequence=words, times=spans)  # fmt: skip

    def guesses(self, n: int) -> None:
        makers: list[tuple[str, Callable[[], np.ndarray]]] = [
            ("silence", lambda: silence(self.rng.uniform(1, 5))),
            ("faint_noise", lambda: faint_noise(self.rng.uniform(1, 4), self.rng)),
            ("short_sound", lambda: normalise(loudest(self.rng.choice(self.src.esc)[1], 0.1))),
            ("short_digit", lambda: normalise(self.rng.choice(self.src.digits)[2][:1600])),
            ("empty_speech", lambda: silence(self.rng.uniform(1, 3))),
        ]
        for i in range(n):
            sub, make = makers[i % len(makers)]
            audio = make()
            if sub in ("short_digit", "empty_speech"):
                q = self.rng.choice(WHAT_SAID_Q)
                choices = self.rng.sample(DIGIT_WORDS, 4)
            else:
                q = self.rng.choice(WHICH_SOUND_Q)
                choices = self.rng.sample(self.esc_pool(), 4)
            # No choice is right; the answer key is the one the guess should not default to.
            self.add("guess", sub, audio, q, choices, choices[0], "sound", expect_guess=True)


def build(data: Path, out: Path, per_set: int, seed: int) -> Path:
    builder = Builder(load_sources(data), out, seed)
    builder.which_sound(per_set)
    builder.what_said(per_set)
    builder.count(per_set)
    builder.order(per_set)
    builder.guesses(max(5, per_set // 2))
    builder.speakers(per_set)  # after the others: they stay as they were for a seed
    builder.spoken_words(per_set)
    # the newer sets each draw from their own stream: the ones above stay as they were
    order_whole(builder, per_set, seed)
    open_questions(builder, seed, yes_no=max(4, per_set + per_set // 5), each=max(2, per_set // 2))
    words_questions(builder, seed, each=per_set)  # last, on streams of its own
    path = out / "devsets.json"
    path.write_text(json.dumps(builder.items, indent=1))
    return path


def build_words(data: Path, out: Path, per_set: int, seed: int) -> Path:
    """The questions in words alone (``--only words``: ``bench.words_calibration`` runs them)."""
    builder = Builder(load_sources(data), out, seed)
    words_questions(builder, seed, each=per_set)
    path = out / "devsets.json"
    path.write_text(json.dumps(builder.items, indent=1))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--per-set", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["words"], help="only the questions in words")
    args = parser.parse_args()
    make = build_words if args.only == "words" else build
    path = make(args.data, args.out, args.per_set, args.seed)
    items = json.loads(path.read_text())
    counts: dict[str, int] = {}
    for item in items:
        counts[item["category"]] = counts.get(item["category"], 0) + 1
    listed = ", ".join(f"{k} {v}" for k, v in counts.items())
    print(f"wrote {len(items)} items to {path}: {listed}")


if __name__ == "__main__":
    main()
