"""Questions in words as people type them, on real recordings, and how their answers are scored.

    python -m bench.devsets --only words --seed 7 --out data/devsets-words/seed-7  # alone
    python -m bench.devsets                                      # with the other sets

The ``words`` category of the dev sets (``bench.devsets`` adds it, on a random stream of its
own, so the other sets stay as they were for a seed):

- ``sound_name``: a whole ESC-50 clip, "What sound is this?" / "What is making this sound?";
  right when the sound the answer names first is one of the class's accepted everyday names
  (``SYNONYMS``, reviewed by hand: "dog" accepts "dog", "barking", "puppy" ...; the table as
  it is when scoring, the item's ``accept`` only records it).
- ``digit``: one FSDD digit, alone or padded with silence, "What number does the speaker
  say?"; right when the digits the answer names are exactly that one digit.
- ``digits``: 3-5 FSDD digits in a row (0.25-0.6 s apart), "What numbers are said?"; right
  when the answer names exactly those digits in that order (an extra or repeated digit, as a
  speech-to-text repetition loop gives, is wrong).
- ``key``: a phone menu ("For sales, press 1. To leave a message, press 5 ..."), "Which key
  do I press to leave a message?"; right when every digit the answer names is that key, and
  it does not read out the menu (says "press" once at most).
  **Synthetic speech**: there are no phone-menu recordings in ../shared/data, so the menus
  are spoken by espeak-ng (``apt-get install espeak-ng``; without it this part is left out
  and the build says so), band-limited to 8 kHz as a phone line is, half of them over a quiet
  ESC-50 background.

An answer is read as a person reads it: its first sentence, without what is in parentheses;
for digits what follows a colon ("Three digits: 1, 0, 9." -> 1, 0, 9), for a sound the name
given first ("Probably a chainsaw, or an engine." -> chainsaw). Digits count as words
("three") or numerals ("3", and "109" is 1, 0, 9).
"""

from __future__ import annotations

import functools
import random
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.compose import SR, ItemSink, concat_with_gaps, faint_noise, loudest, normalise, silence

DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]

# Every ESC-50 class and the everyday names a person gives it (one or more words each; an
# answer's word matches in the singular: "dogs" is "dog"). Reviewed by hand: a name is here
# when a person hearing the clip would say it and it does not also name another class
# ("door" alone could be a knock or a creak; "water" could be five classes), except for
# classes no listener tells apart by name (a hen and a rooster are both "a chicken").
SYNONYMS: dict[str, list[str]] = {
    "dog": ["dog", "barking", "bark", "puppy", "woof"],
    "rooster": ["rooster", "cockerel", "chicken", "cock a doodle doo", "crowing"],
    "pig": ["pig", "oink", "grunting pig", "hog", "swine"],
    "cow": ["cow", "moo", "mooing", "cattle", "bull"],
    "frog": ["frog", "croaking", "croak", "toad"],
    "cat": ["cat", "meow", "meowing", "kitten", "miaow"],
    "hen": ["hen", "chicken", "clucking", "cluck"],
    "insects": ["insect", "buzzing", "bee", "fly", "mosquito", "wasp", "bug"],
    "sheep": ["sheep", "bleating", "baa", "lamb"],
    "crow": ["crow", "cawing", "caw", "raven"],
    "rain": ["rain", "raining", "rainfall", "raindrop", "downpour"],
    "sea waves": ["wave", "sea", "ocean", "surf", "beach", "shore"],
    "crackling fire": ["fire", "crackling", "campfire", "fireplace", "flame", "burning"],
    "crickets": ["cricket", "chirping cricket"],
    "chirping birds": ["bird", "birdsong", "tweeting", "songbird"],
    "water drops": ["dripping", "drip", "water drop", "drop of water", "droplet", "leak"],
    "wind": ["wind", "windy", "gust", "blowing wind", "gale"],
    "pouring water": ["pouring", "pour", "water being poured", "filling", "running water"],
    "toilet flush": ["toilet", "flush", "flushing"],
    "thunderstorm": ["thunder", "thunderstorm", "storm", "lightning"],
    "crying baby": ["baby", "crying", "infant", "cry", "wailing"],
    "sneezing": ["sneeze", "sneezing", "achoo"],
    "clapping": ["clapping", "clap", "applause", "applauding", "hands clapping"],
    "breathing": ["breathing", "breath", "breathe", "panting", "inhaling", "exhaling", "gasp",
                  "gasping", "sigh", "sighing"],
    "coughing": ["cough", "coughing"],
    "footsteps": ["footstep", "steps", "walking", "stepping", "foot"],
    "laughing": ["laugh", "laughing", "laughter", "giggle", "giggling", "chuckle"],
    "brushing teeth": ["brushing teeth", "toothbrush", "teeth brushing", "brushing"],
    "snoring": ["snore", "snoring"],
    "drinking sipping": ["drinking", "sipping", "sip", "gulp", "gulping", "slurp", "swallow"],
    "door wood knock": ["knock", "knocking", "rapping", "door knock"],
    "mouse click": ["mouse", "click", "clicking", "mouse click"],
    "keyboard typing": ["typing", "keyboard", "typewriter", "keystroke"],
    "door wood creaks": ["creak", "creaking", "squeak", "squeaking", "creaky door", "hinge"],
    "can opening": ["can opening", "can being opened", "opening a can", "soda can", "tin can",
                    "ring pull", "pop tab", "fizz", "opening can"],
    "washing machine": ["washing machine", "washer", "laundry", "spin cycle", "dryer"],
    "vacuum cleaner": ["vacuum", "vacuum cleaner", "hoover", "hoovering", "vacuuming"],
    "clock alarm": ["alarm", "alarm clock", "beeping", "ringing alarm", "buzzer"],
    "clock tick": ["tick", "ticking", "tick tock", "tock"],
    "glass breaking": ["glass", "shattering", "shatter", "breaking glass", "smash"],
    "helicopter": ["helicopter", "chopper", "rotor"],
    "chainsaw": ["chainsaw", "chain saw"],
    "siren": ["siren", "ambulance", "police car", "fire engine", "emergency vehicle"],
    "car horn": ["horn", "honk", "honking", "car horn", "hooting"],
    "engine": ["engine", "motor", "idling", "car", "truck", "vehicle", "motorbike",
               "motorcycle", "lorry", "bus"],
    "train": ["train", "rail", "railway", "locomotive", "railroad", "tram", "subway"],
    "church bells": ["bell", "church bell", "chime", "chiming", "ringing bell", "peal"],
    "airplane": ["airplane", "plane", "aeroplane", "aircraft", "jet", "airliner"],
    "fireworks": ["firework", "explosion", "bang", "cracker", "popping"],
    "hand saw": ["saw", "sawing", "hand saw", "handsaw", "cutting wood"],
}  # fmt: skip

SOUND_Q = ["What sound is this?", "What is making this sound?", "what's that sound",
           "What is this noise?", "what do you hear", "What is making that noise?"]  # fmt: skip
DIGIT_Q = ["What number does the speaker say?", "What number is said?",
           "which number do they say", "What digit is spoken?"]  # fmt: skip
DIGITS_Q = ["What numbers are said?", "What numbers does the speaker say?",
            "what digits are spoken", "Which numbers are read out, in order?"]  # fmt: skip

# Phone-menu options: what it is for, as the menu says it and as a caller asks for it.
OPTIONS = [
    ("For sales, press {k}.", ["Which key do I press for sales?",
                                "What number do I press to talk to sales?"]),
    ("For technical support, press {k}.", ["Which key is for technical support?",
                                           "what do i press for tech support"]),
    ("For billing questions, press {k}.", ["Which button do I press for billing?",
                                           "Which key for a billing question?"]),
    ("To leave a message, press {k}.", ["Which button do I press to leave a message?",
                                        "what key to leave a message"]),
    ("For an operator, press {k}.", ["which key do i press to get an operator?",
                                     "Which number gets me an operator?"]),
    ("For our opening hours, press {k}.", ["Which key do I press for the opening hours?",
                                           "What do I press to hear the opening hours?"]),
    ("To check your account balance, press {k}.", ["Which key checks my balance?",
                                                   "What number do I press for my balance?"]),
    ("To book an appointment, press {k}.", ["Which key do I press to book an appointment?",
                                            "what button for appointments"]),
    ("To hear these options again, press {k}.", ["Which key repeats the options?",
                                                 "What do I press to hear the menu again?"]),
]  # fmt: skip
GREETINGS = ["Thank you for calling.", "Welcome to City Services.",
             "Hello, you have reached the help line.",
             "Please listen carefully, as our options have changed."]  # fmt: skip
VOICES = ["en-us", "en-gb", "en-us+f3", "en-gb+f2", "en-us+m3", "en-gb-x-rp"]


def words_questions(builder: ItemSink, seed: int, each: int = 20) -> None:
    """``each`` items of every shape, on their own random stream."""
    rng = random.Random(seed * 104_729 + 43)
    _sound_names(builder, rng, each)
    _digit(builder, rng, each)
    _digits(builder, rng, each)
    _keys(builder, random.Random(seed * 130_363 + 47), each)  # its own: needs espeak-ng


def _add(builder: ItemSink, sub: str, audio: np.ndarray, question: str, answer: str,
         task: str, **extra: Any) -> None:  # fmt: skip
    builder.add("words", sub, audio, question, [], answer, task, open=sub, **extra)


def _sound_names(builder: ItemSink, rng: random.Random, n: int) -> None:
    for name, samples in rng.sample(builder.src.esc, min(n, len(builder.src.esc))):
        _add(builder, "sound_name", samples, rng.choice(SOUND_Q), name, "sound",
             accept=SYNONYMS.get(name, [name]))  # fmt: skip


def _digit(builder: ItemSink, rng: random.Random, n: int) -> None:
    for i in range(n):
        word, _, samples = rng.choice(builder.src.digits)
        audio = normalise(samples)
        if i % 2:
            audio = np.concatenate([silence(rng.uniform(0.3, 1.5)), audio,
                                    silence(rng.uniform(0.3, 1.5))])  # fmt: skip
        _add(builder, "digit", audio, rng.choice(DIGIT_Q), word, "speech")


def _digits(builder: ItemSink, rng: random.Random, n: int) -> None:
    for _ in range(n):
        picked = [rng.choice(builder.src.digits) for _ in range(rng.randint(3, 5))]
        audio = concat_with_gaps([normalise(d[2]) for d in picked], rng, gap=(0.25, 0.6))
        said = " ".join(d[0] for d in picked)
        _add(builder, "digits", audio, rng.choice(DIGITS_Q), said, "speech")


def speak(text: str, voice: str, speed: int) -> np.ndarray:
    """``text`` spoken by espeak-ng at 16 kHz, through an 8 kHz phone band."""
    import soundfile as sf
    from scipy.signal import resample_poly

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "say.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(path), text],
                       check=True, capture_output=True, timeout=60)  # fmt: skip
        samples, rate = sf.read(path, dtype="float32")
    samples = resample_poly(samples, SR, rate).astype(np.float32)
    band = resample_poly(resample_poly(samples, 1, 2), 2, 1).astype(np.float32)
    return band[: samples.size]


def _keys(builder: ItemSink, rng: random.Random, n: int) -> None:
    if shutil.which("espeak-ng") is None:
        print("devsets_words: espeak-ng is not installed, so the phone-menu items are left out")
        return
    for i in range(n):
        options = rng.sample(OPTIONS, rng.randint(3, 5))
        keys = rng.sample(range(10), len(options))
        voice, speed = rng.choice(VOICES), rng.randint(140, 185)
        lines = [rng.choice(GREETINGS)] + [
            o[0].format(k=k) for o, k in zip(options, keys, strict=True)
        ]
        parts = [normalise(speak(line, voice, speed)) for line in lines]
        audio = concat_with_gaps(parts, rng, gap=(0.3, 0.7))
        if i % 2:  # over a quiet real background (a street, rain, an office ...)
            _, background = rng.choice(builder.src.esc)
            bed = normalise(loudest(background, audio.size / SR), 0.06)
            audio = audio + np.resize(bed, audio.size)
        else:
            audio = audio + faint_noise(audio.size / SR, rng)
        j = rng.randrange(len(options))
        question = rng.choice(options[j][1])
        _add(builder, "key", audio, question, str(keys[j]), "speech", synthetic=True,
             menu=" ".join(lines), voice=voice)  # fmt: skip


# -- scoring -------------------------------------------------------------------------------
WORD = re.compile(r"[a-z]+|\d")


def stem(word: str) -> str:
    """The singular, roughly: "dogs" -> "dog", "flies" -> "fly"; "glass" stays."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us")):
        return word[:-1]
    return word


def words_of(text: str) -> list[str]:
    return [stem(w) for w in WORD.findall(text.lower().replace("'", ""))]


MEASURE = re.compile(r"\d+\.\d+|\d+\s*(?:s|sec|seconds?|ms|hz|khz|db|%)(?![a-z])", re.I)
COLON = re.compile(r"(?<!\d):|:(?!\d)")  # not the colon of a time ("0:05")


def first_sentence(text: str) -> str:
    """The first sentence, without what is in parentheses; a quotation in it is read to its
    end ('It says: "Four. Zero. Two."' is one sentence)."""
    text = re.sub(r"\([^)]*\)?", " ", text.strip())
    quoted = False
    for k, char in enumerate(text):
        ends = text[k + 1 : k + 2].isspace()
        if char in '"“”':
            quoted = char != "”" and not quoted
            if not quoted and ends and text[k - 1 : k] in (".", "!", "?"):
                return text[: k + 1]  # a quotation that ends the sentence
        elif char in ".!?" and not quoted and ends:
            return text[: k + 1]
    return text


FILLER = {
    "it",
    "this",
    "that",
    "say",
    "sound",
    "like",
    "i",
    "hear",
    "answer",
    "is",
    "the",
    "a",
    "an",
    "probably",
    "mostly",
    "most",
    "likely",
    "heard",
    "source",
}


def named_sound(text: str) -> list[str]:
    """The words of the sound an answer names first: its first sentence up to the first
    colon, comma, semicolon, "or", "and" or "with" ("Probably a chainsaw or an engine." ->
    chainsaw; "Chainsaw: light engine" -> chainsaw; "Mostly animal, with ... dog" ->
    animal); a colon after words that name nothing ("It sounds like: a dog") is read past."""
    sentence = first_sentence(text).lower()
    before, *after = COLON.split(sentence, maxsplit=1)
    if after and set(words_of(before)) <= FILLER:
        before = after[0]
    cut = re.split(r"[,;]|\bor\b|\band\b|\bwith\b", before, maxsplit=1)
    return words_of(cut[0])


@functools.lru_cache(maxsize=1024)
def name_words(name: str) -> list[str]:
    return words_of(name)


def spans(words: list[str], name: str) -> list[tuple[int, int]]:
    wanted = name_words(name)
    if wanted[0] not in words:
        return []
    return [(i, i + len(wanted)) for i in range(len(words)) if words[i : i + len(wanted)] == wanted]


def names(words: list[str], accept: list[str], own: str) -> bool:
    """Whether ``words`` name the class ``own`` (its names ``accept``): one of them is there,
    and not inside a longer name of another class ("saw" in "chain saw" is not a hand saw)."""
    mine = [s for name in accept for s in spans(words, name)]
    if not mine:
        return False
    theirs = [s for cls, others in SYNONYMS.items() if cls != own
              for name in others for s in spans(words, name)]  # fmt: skip
    return any(not any(a <= i and j <= b and b - a > j - i for a, b in theirs) for i, j in mine)


def digits_named(text: str) -> list[int]:
    """The digits an answer names in its main clause, words or numerals, in order."""
    said = COLON.split(first_sentence(text), maxsplit=1)[-1]  # "Five digits: 1, 0, 9" -> 1, 0, 9
    said = MEASURE.sub(" ", said)  # "0.3 s", "2.5": a time or a measure, not digits said
    return [int(w) if w.isdigit() else DIGITS.index(w)
            for w in WORD.findall(said.lower()) if w.isdigit() or w in DIGITS]  # fmt: skip


def score_words(item: dict[str, Any], text: str) -> bool:
    """Whether an answer in words answers a ``words`` item right (see the module doc)."""
    kind = item.get("open")
    if kind == "sound_name":
        accept = SYNONYMS.get(item["answer"], item.get("accept", []))  # today's table
        return names(named_sound(text), accept, item["answer"])
    truth = [DIGITS.index(w) if w in DIGITS else int(w) for w in item["answer"].split()]
    said = digits_named(text)
    if kind in ("digit", "digits"):
        return said == truth
    if kind == "key":  # the key, not a menu read out ("press" once at most)
        once = len(re.findall(r"\bpress", first_sentence(text).lower())) <= 1
        return bool(said) and set(said) == set(truth) and once
    raise ValueError(f"not a question in words: {kind!r}")
