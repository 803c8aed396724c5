"""Open questions (no choices), as people type them, and how their answers are scored.

Built by composition like the other dev sets (``bench.devsets``), from ESC-50 clips, FSDD
digits, the LibriSpeech readings and the music excerpts in ../shared/data/librosa:

- ``yes_no``: is a sound there (the clip's own class, or another that a listener would not
  confuse with it), is anyone speaking, is there music (alone, or under speech: "in the
  background"), does the speaker say a word (a digit said, or one not said). Half yes.
- ``kind``: what kind of sound is this (a whole ESC-50 clip).
- ``how_many``: a sound burst repeated 2-5 times, or 2-5 digits.
- ``what_said``: two or three digits.
- ``when``: one sound burst or one digit at a known time in a longer quiet clip.
- ``property``: yes or no about a property, where the truth is known from the sources: is
  the speaker a man / a woman (the FSDD speakers are all men by its labels.csv; the three
  LibriSpeech readers are two men and a woman by LibriSpeech's SPEAKERS.TXT, the reader's
  name in ``bench.devsets.READINGS``), and is there background noise (spoken digits with
  pauses of digital silence, or the same over a steady ESC-50 sound: rain, wind, an engine
  ...). Half yes. Tempo, key, emotion and accent are not here: no source gives their truth.

``score_open`` reads an answer as a person would: the yes/no answer is its first word, the
kind is what it names first (before a colon, parenthesis or comma), the count is its first
number, the digits said are the number words it gives in order, the time is the first time
it names.
"""

from __future__ import annotations

import random
import re
from typing import Any

import numpy as np

from agent.answer import tokens
from agent.number_words import canonical, is_number_word
from bench.compose import ItemSink, concat_timed, concat_with_gaps, faint_noise, loudest, normalise
from bench.devsets_whole import confusable
from bench.devsets_words import score_words

# How a person names an ESC-50 class in a question, and the words an answer may use for it.
PHRASE = {
    "door wood knock": "knocking on a door", "door wood creaks": "a creaking door",
    "crying baby": "a baby crying", "chirping birds": "birds chirping", "sea waves": "sea waves",
    "water drops": "water dripping", "pouring water": "water being poured",
    "toilet flush": "a toilet flushing", "brushing teeth": "someone brushing their teeth",
    "drinking sipping": "someone drinking", "mouse click": "mouse clicks",
    "keyboard typing": "typing on a keyboard", "can opening": "a can being opened",
    "clock alarm": "an alarm clock", "clock tick": "a clock ticking",
    "glass breaking": "glass breaking", "crackling fire": "a crackling fire",
    "hand saw": "a hand saw", "church bells": "church bells", "car horn": "a car horn",
    "footsteps": "footsteps", "clapping": "clapping", "laughing": "someone laughing",
    "coughing": "someone coughing", "sneezing": "someone sneezing", "snoring": "snoring",
    "breathing": "breathing", "rain": "rain", "wind": "wind", "thunderstorm": "a thunderstorm",
    "crickets": "crickets", "insects": "insects buzzing", "fireworks": "fireworks",
}  # fmt: skip
ACCEPT = {
    "dog": {"dog", "bark", "bow"}, "rooster": {"rooster", "chicken", "crowing", "cock"},
    "pig": {"pig", "oink"}, "cow": {"cow", "moo", "cattle"}, "frog": {"frog", "croak"},
    "cat": {"cat", "meow"}, "hen": {"hen", "chicken", "cluck"},
    "insects": {"insect", "bee", "buzz", "fly", "mosquito"}, "sheep": {"sheep", "bleat"},
    "crow": {"crow", "caw"}, "rain": {"rain", "raindrop"},
    "sea waves": {"wave", "surf", "ocean", "sea"},
    "crackling fire": {"fire", "crackle"}, "crickets": {"cricket"},
    "chirping birds": {"bird", "chirp", "tweet"}, "water drops": {"drip", "drop", "water"},
    "wind": {"wind"}, "pouring water": {"pour", "water", "liquid"},
    "toilet flush": {"toilet", "flush"}, "thunderstorm": {"thunder", "thunderstorm", "storm"},
    "crying baby": {"baby", "cry", "crying"}, "sneezing": {"sneeze", "sneezing"},
    "clapping": {"clap", "clapping", "applause"}, "breathing": {"breath", "breathing"},
    "coughing": {"cough", "coughing"}, "footsteps": {"footstep", "walk", "step"},
    "laughing": {"laugh", "laughter", "giggle"}, "brushing teeth": {"toothbrush", "brush"},
    "snoring": {"snore", "snoring"}, "drinking sipping": {"drink", "sip", "gulp", "slurp"},
    "door wood knock": {"knock", "door"}, "mouse click": {"click", "mouse"},
    "keyboard typing": {"typing", "keyboard", "typewriter"}, "door wood creaks": {"creak", "door"},
    "can opening": {"can", "opening"}, "washing machine": {"washing", "machine"},
    "vacuum cleaner": {"vacuum"}, "clock alarm": {"alarm"}, "clock tick": {"tick", "clock"},
    "glass breaking": {"glass", "shatter", "breaking"}, "helicopter": {"helicopter"},
    "chainsaw": {"chainsaw", "saw"}, "siren": {"siren"}, "car horn": {"horn"},
    "engine": {"engine", "motor"}, "train": {"train", "rail"}, "church bells": {"bell"},
    "airplane": {"airplane", "aircraft", "plane", "jet"}, "fireworks": {"firework", "explosion"},
    "hand saw": {"saw", "sawing"},
}  # fmt: skip
SOUND_Q = [
    "Is there {p} in this recording?", "Can you hear {p}?", "Do you hear {p} anywhere?",
    "Is there a sound of {p}?",
]  # fmt: skip
SPEECH_Q = ["Is anyone talking?", "Is there speech in this recording?", "Does someone speak?",
            "Is there any speech?"]  # fmt: skip
MUSIC_Q = ["Is there music in the background?", "Is there any music?", "Is music playing?",
           "Is there music in this recording?"]  # fmt: skip
WORD_Q = ["Does the speaker say '{w}'?", "Is the number {w} said?",
          "Does the speaker say the word {w}?", "Is {w} among the numbers said?"]  # fmt: skip
KIND_Q = ["What kind of sound is this?", "What is making this sound?", "What do you hear?",
          "What's that noise?"]  # fmt: skip
COUNT_SOUND_Q = ["How many times do you hear the {s}?", "How many {s} sounds are there?"]
COUNT_DIGIT_Q = ["How many numbers does the speaker say?", "How many digits are spoken?"]
SAID_Q = ["What does the speaker say?", "What is said?", "What numbers are spoken?"]
WHEN_SOUND_Q = ["When is the {s} heard?", "At what time do you hear the {s}?"]
WHEN_SPEECH_Q = ["When does the speech start?", "When does the speaker start talking?"]


def phrase(name: str) -> str:
    if name in PHRASE:
        return PHRASE[name]
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def music_bed(builder: ItemSink, rng: random.Random, seconds: float) -> np.ndarray | None:
    if not builder.src.music:
        return None
    _, samples = rng.choice(builder.src.music)
    n = int(seconds * 16_000)
    start = rng.randrange(max(1, samples.size - n))
    return normalise(samples[start : start + n].copy(), 0.6)


def open_questions(builder: ItemSink, seed: int, yes_no: int = 24, each: int = 10,
                   properties: int = 12) -> None:  # fmt: skip
    """The open-question items, on their own random stream (other sets stay as they were)."""
    rng = random.Random(seed * 6007 + 29)
    _yes_no(builder, rng, yes_no)
    _kind(builder, rng, each)
    _how_many(builder, rng, each)
    _what_said(builder, rng, each)
    _when(builder, rng, each)
    # last, on a stream of its own: the items above stay as they were for a seed
    _property(builder, random.Random(seed * 7919 + 31), properties)


def _add(builder: ItemSink, sub: str, audio: np.ndarray, question: str, answer: str,
         **extra: Any) -> None:  # fmt: skip
    task = "speech" if sub in ("speech", "word", "what_said", "property") else "sound"
    builder.add("open", sub, audio, question, [], answer, task, **extra)


def _yes_no(builder: ItemSink, rng: random.Random, n: int) -> None:
    pool = builder.esc_pool()
    by_name = dict(builder.src.esc)
    kinds = ["sound", "speech", "music", "word"]
    for i in range(n):
        kind, present = kinds[(i // 2) % 4], i % 2 == 0  # each kind: yes, then no
        if kind == "music" and not builder.src.music:
            kind = "sound"
        if kind == "sound":
            name = rng.choice(pool)
            asked = name if present else rng.choice(
                [p for p in pool if p != name and not confusable(p, name)])  # fmt: skip
            audio = by_name[name]
            question = rng.choice(SOUND_Q).format(p=phrase(asked))
            extra: dict[str, Any] = {"heard": name, "asked": asked}
        elif kind == "speech":
            if present:
                words = [rng.choice(builder.src.digits) for _ in range(rng.randint(1, 3))]
                audio, _ = concat_timed([normalise(d[2]) for d in words], rng, gap=(0.3, 0.6))
            else:
                audio = by_name[rng.choice(pool)]
            question = rng.choice(SPEECH_Q)
            extra = {}
        elif kind == "music":
            bed = music_bed(builder, rng, 6.0)
            assert bed is not None
            background = rng.random() < 0.5
            if present and background and builder.src.phrases:
                speech = normalise(rng.choice(builder.src.phrases)[1], 0.7)
                audio = 0.3 * bed
                audio[8000 : 8000 + speech.size] += speech[: audio.size - 8000]
            elif present:
                audio = bed
            elif background and builder.src.phrases:
                audio = np.concatenate([normalise(rng.choice(builder.src.phrases)[1]),
                                        normalise(rng.choice(builder.src.phrases)[1])])  # fmt: skip
            else:
                audio = by_name[rng.choice(pool)]
            question = MUSIC_Q[0] if background else rng.choice(MUSIC_Q[1:])
            extra = {}
        else:
            digits = rng.sample(builder.src.digits, 3)
            said = [d[0] for d in digits]
            audio, _ = concat_timed([normalise(d[2]) for d in digits], rng, gap=(0.3, 0.6))
            word = rng.choice(said) if present else rng.choice(
                sorted({d[0] for d in builder.src.digits} - set(said)))  # fmt: skip
            question = rng.choice(WORD_Q).format(w=word)
            extra = {"said": said, "asked": word}
        _add(builder, kind, audio, question, "yes" if present else "no", open="yes_no", **extra)


def _kind(builder: ItemSink, rng: random.Random, n: int) -> None:
    for name, samples in rng.sample(builder.src.esc, min(n, len(builder.src.esc))):
        accept = sorted(ACCEPT.get(name, set(tokens(name))))
        _add(builder, "kind", samples, rng.choice(KIND_Q), name, open="kind", accept=accept)


def _how_many(builder: ItemSink, rng: random.Random, n: int) -> None:
    for i in range(n):
        k = rng.randint(2, 5)
        if i % 2 == 0:
            name, samples = rng.choice(builder.src.esc)
            burst = normalise(loudest(samples, rng.uniform(0.4, 0.8)))
            burst *= np.hanning(burst.size).astype(np.float32) ** 0.25
            audio = concat_with_gaps([burst] * k, rng, gap=(0.6, 1.2))
            question = rng.choice(COUNT_SOUND_Q).format(s=name)
        else:
            parts = [normalise(rng.choice(builder.src.digits)[2]) for _ in range(k)]
            audio = concat_with_gaps(parts, rng, gap=(0.4, 0.9))
            question = rng.choice(COUNT_DIGIT_Q)
        _add(builder, "how_many", audio, question, str(k), open="how_many")


def _what_said(builder: ItemSink, rng: random.Random, n: int) -> None:
    for _ in range(n):
        digits = [rng.choice(builder.src.digits) for _ in range(rng.randint(2, 3))]
        audio = concat_with_gaps([normalise(d[2]) for d in digits], rng, gap=(0.4, 0.8))
        said = " ".join(d[0] for d in digits)
        _add(builder, "what_said", audio, rng.choice(SAID_Q), said, open="what_said")


def _when(builder: ItemSink, rng: random.Random, n: int) -> None:
    for i in range(n):
        seconds = rng.uniform(4.0, 7.0)
        bed = faint_noise(seconds, rng, level=0.003)
        if i % 2 == 0:
            name, samples = rng.choice(builder.src.esc)
            part = normalise(loudest(samples, rng.uniform(0.6, 1.2)))
            question = rng.choice(WHEN_SOUND_Q).format(s=name)
        else:
            part = normalise(rng.choice(builder.src.digits)[2])
            question = rng.choice(WHEN_SPEECH_Q)
        start = rng.uniform(0.5, seconds - part.size / 16_000 - 0.3)
        at = int(start * 16_000)
        bed[at : at + part.size] += part
        span = [round(start, 2), round(start + part.size / 16_000, 2)]
        _add(builder, "when", bed, question, f"{span[0]}-{span[1]} s", open="when", span=span)


GENDER_Q = {
    "male": ["Is the speaker a man?", "Is it a male voice?", "Is this a man talking?"],
    "female": ["Is the speaker a woman?", "Is it a female voice?", "Is this a woman talking?"],
}
NOISE_Q = ["Is there background noise?", "Is the recording noisy?",
           "Is there any noise in the background?"]  # fmt: skip
# ESC-50 sounds that go on (a bed under speech), not single events
STEADY = ["rain", "wind", "sea waves", "crackling fire", "engine", "vacuum cleaner",
          "washing machine", "airplane", "helicopter", "train", "crickets", "insects",
          "chirping birds", "pouring water", "chainsaw"]  # fmt: skip


def _property(builder: ItemSink, rng: random.Random, n: int) -> None:
    """Yes/no about the speaker's sex and about background noise (see the module doc)."""
    readers = {}  # sex -> the LibriSpeech phrases of readers of that sex
    for reader, samples in builder.src.phrases:
        readers.setdefault("female" if reader.endswith("_f") else "male", []).append(samples)
    # (a data folder without any of them: any ESC-50 sound, still a sound under the speech)
    steady = [(name, s) for name, s in builder.src.esc if name in STEADY] or builder.src.esc
    for i in range(n):
        present = i % 2 == 0
        if i % 4 < 2 and readers.get("female"):
            asked = rng.choice(["male", "female"])
            sex = asked if present else ("female" if asked == "male" else "male")
            if sex == "male" and rng.random() < 0.5:  # an FSDD speaker (all men), 2-3 digits
                speaker = rng.choice(sorted({d[1] for d in builder.src.digits}))
                own = [d for d in builder.src.digits if d[1] == speaker]
                parts = [normalise(d[2]) for d in rng.sample(own, rng.randint(2, 3))]
                voice = f"fsdd_{speaker}"
            else:
                parts = [normalise(p) for p in rng.sample(readers[sex], 2)]
                voice = f"librispeech_{sex}"
            audio, _ = concat_timed(parts, rng, gap=(0.3, 0.6))
            question = rng.choice(GENDER_Q[asked])
            extra: dict[str, Any] = {"property": "gender", "asked": asked, "voice": voice}
        else:
            digits = [rng.choice(builder.src.digits) for _ in range(rng.randint(2, 3))]
            audio, _ = concat_timed([normalise(d[2]) for d in digits], rng, gap=(0.3, 0.6))
            background = ""
            if present:
                background, samples = rng.choice(steady)
                bed = normalise(loudest(samples, audio.size / 16_000 + 0.1), rng.uniform(0.1, 0.2))
                bed = np.resize(bed, audio.size)  # a shorter clip goes round again
                audio = audio + bed
            question = rng.choice(NOISE_Q)
            extra = {"property": "noise", "background": background}
        answer = "yes" if present else "no"
        _add(builder, "property", audio, question, answer, open="property", **extra)


# -- scoring -------------------------------------------------------------------------------
CANT_TELL = re.compile(r"^\s*(?:i\s+)?can(?:'|no)t tell\b", re.I)
TIME = re.compile(r"(\d+(?:\.\d+)?)\s*(?:–|-|to)?\s*(?:\d+(?:\.\d+)?)?\s*s\b")


def starts_yes_no(text: str) -> bool:
    """A yes/no answer as the issue asks: Yes, No or "I can't tell" first."""
    words = tokens(text)
    return bool(words) and (words[0] in ("yes", "no") or bool(CANT_TELL.search(text)))


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]


def score_open(item: dict[str, Any], text: str) -> bool:
    """Whether an answer in words answers the open question right (see the module doc)."""
    kind = item.get("open")
    words = tokens(text)
    if item.get("category") == "words":  # the questions in words of bench.devsets_words
        return score_words(item, text)
    if kind in ("yes_no", "property"):
        return bool(words) and words[0] == item["answer"]
    if kind == "kind":  # the kind named first: before the first colon, parenthesis or comma
        head = tokens(re.split(r"[:(,;]", first_sentence(text), maxsplit=1)[0])
        return any(w.startswith(a) for w in head for a in item["accept"])
    if kind == "how_many":
        numbers = [canonical(w) for w in words if is_number_word(w)]
        return bool(numbers) and numbers[0] == canonical(item["answer"])
    if kind == "what_said":
        said = [canonical(w) for w in words if is_number_word(w)]
        return said == [canonical(w) for w in tokens(item["answer"])]
    if kind == "when":
        found = TIME.search(text)
        start, end = item["span"]
        return bool(found) and start - 0.5 <= float(found.group(1)) <= end + 0.5
    raise ValueError(f"not an open question: {kind!r}")
