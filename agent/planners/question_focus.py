"""What a question asks about, read from its words and the shape of its choices.

Two readings, both plain data:

- ``Focus``: a question answered from time-stamped evidence: a count ("how many times"),
  a position ("which comes first", "after the dog", "at 2 s"), a sequence of sounds (choices
  like "dog, then rain"), or a comparison of speakers ("is it the same speaker").
- ``OpenAsk``: what a question without choices wants back: yes or no about something being
  there (a sound, speech, music, a word), yes or no about a property of it (the music fast,
  in a minor key, loud; the speaker a woman, a child, angry; the recording noisy), what
  kind, how many, when, who, what is said.

Nothing here looks at evidence; ``question_types`` turns a reading into tools to call, and the
offline modules answer it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent.answer import tokens
from agent.number_words import NUMBER_WORDS, leading_number

ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6}
COUNT_RE = re.compile(r"\bhow many\b|\bcount\b|\bnumber of\b|\bhow often\b")
ORDER_RE = re.compile(
    r"\b(first|second|third|fourth|fifth|last|final|before|after|follow\w*|preced\w*|"
    r"order|sequence|begin\w*|start\w*|ends?|ending|earlier|later|next)\b"
)
AT_TIME_RE = re.compile(r"\bat (?:about |around )?(\d+(?:\.\d+)?) ?(?:s\b|sec|second)")
SPEECH_RE = re.compile(
    r"\b(numbers?|digits?|words?|said|say|says|spoken|speak\w*|utter\w*|syllables?|"
    r"names?|letters?|mention\w*)\b"
)
SPEAKER_RE = re.compile(r"\b(speakers?|people|persons?|voices?|talkers?)\b")
NUMERIC_RE = re.compile(r"\b(numbers?|digits?)\b")
SAME_RE = re.compile(
    r"\bsame (speaker|person|voice|man|woman)\b|\b(different|two|multiple|several|more than one)"
    r" (speakers|people|persons|voices)\b"
)
WHICH_SPEAKER_RE = re.compile(r"\b(first|second|third|last|other) (speaker|voice|person)\b")
# "dog, then rain", "dog -> rain", "dog followed by rain", "first dog and then rain"
THEN_RE = re.compile(r"\s*(?:,|;)?\s*(?:and\s+)?(?:then|afterwards|after that)\s+|\s*(?:->|→|>)\s*"
                     r"|\s*,?\s*followed by\s+")  # fmt: skip
FILLER = {
    "how", "many", "times", "time", "is", "are", "the", "a", "an", "of", "in", "this", "that",
    "sound", "sounds", "heard", "hear", "occur", "occurs", "recording", "clip", "audio", "there",
    "count", "does", "do", "you", "can", "separate", "events", "event", "number", "total",
    "which", "what", "comes", "come", "right", "immediately", "after", "before", "first",
    "last", "then", "be", "it", "at", "start", "end", "ends", "begin", "next",
}  # fmt: skip


@dataclass(frozen=True)
class Focus:
    """What a question answered from time-stamped evidence is about."""

    kind: str  # count | order | sequence | same | compare (speakers)
    target: str  # speech | sound | speakers
    position: int | None = None  # 1-based; -1 = last
    relation: str | None = None  # after | before | at
    anchor: str | None = None  # the thing named after "after"/"before", or the time
    subject: str = ""  # what to count ("dog bark"), or "" for everything
    numeric: bool = False  # counts numbers or digits


def subject_words(text: str) -> str:
    """The words of a question part that name a thing, without question filler."""
    return " ".join(w for w in tokens(text) if w not in FILLER)


def choice_sequence(choice: str) -> list[str]:
    """The sounds a choice names in order ("dog, then rain" -> ["dog", "rain"]); one item
    when the choice is not a sequence."""
    text = re.sub(r"^\s*first\s*(?:,\s*)?", "", choice.strip(), flags=re.I)
    parts = [p.strip(" .,;") for p in THEN_RE.split(text)]
    parts = [re.sub(r"^(?:finally|lastly)\s+", "", p, flags=re.I) for p in parts if p]
    return [p for p in parts if p]


def is_yes_no_choices(choices: Sequence[str]) -> bool:
    """Choices that are yes and no (in any wording: "Yes", "no, it is not")."""
    firsts = {tokens(c)[0] for c in choices if tokens(c)}
    return len(choices) >= 2 and firsts <= {"yes", "no"} and len(firsts) == 2


def is_sequence_question(choices: Sequence[str]) -> bool:
    return len(choices) >= 2 and all(len(choice_sequence(c)) >= 2 for c in choices)


def focus_of(question: str, choices: Sequence[str]) -> Focus | None:
    """A counting, order, sequence or speaker-comparison question, else None."""
    text = question.lower()
    if is_sequence_question(choices):
        target = "speech" if SPEECH_RE.search(text) else "sound"
        return Focus("sequence", target)
    numeric_choices = bool(choices) and all(leading_number(c) is not None for c in choices)
    if COUNT_RE.search(text) and (numeric_choices or not choices):
        named = named_word(text)
        speech_words = re.search(r"\b(words?|numbers?|digits?)\b", text) or named
        if SPEAKER_RE.search(text) and not speech_words:
            return Focus("count", "speakers")
        target = "speech" if SPEECH_RE.search(text) else "sound"
        numeric = bool(NUMERIC_RE.search(text)) or (named or "") in NUMBER_WORDS
        return Focus("count", target, subject=subject_words(text), numeric=numeric)
    speakers = speaker_focus(text)
    if speakers is not None:
        return speakers
    at = AT_TIME_RE.search(text)
    if at:
        target = "speech" if SPEECH_RE.search(text) else "sound"
        return Focus("order", target, relation="at", anchor=at.group(1))
    if not ORDER_RE.search(text) or (not choices and WHEN_RE.search(text)):
        return None  # "when does the speech start" is a time, not a position
    target = "speech" if SPEECH_RE.search(text) else "sound"
    relation = re.search(r"\b(after|before|follow\w*|preced\w*|next)\b", text)
    if relation:
        word = relation.group(1)
        kind = "before" if word.startswith(("before", "preced")) else "after"
        rest = text[relation.end() :]
        if word.startswith("follow") and re.search(r"\bis followed\b", text):
            kind, rest = "after", text[: relation.start()]
        return Focus("order", target, relation=kind, anchor=subject_words(rest) or None)
    for word, pos in ORDINAL.items():
        if re.search(rf"\b{word}\b", text):
            return Focus("order", target, position=pos)
    if re.search(r"\b(last|final|ends?|ending|later)\b", text):
        return Focus("order", target, position=-1)
    if re.search(r"\b(begin\w*|start\w*|earlier)\b", text):
        return Focus("order", target, position=1)
    return None


def speaker_focus(question: str) -> Focus | None:
    """A question comparing speakers ("is it the same speaker", "is the second speaker
    higher"), else None. Counting speakers is found by ``focus_of``."""
    text = question.lower()
    which = WHICH_SPEAKER_RE.search(text)
    if which:
        word = which.group(1)
        position = -1 if word == "last" else ORDINAL.get(word, 2)
        return Focus("compare", "speakers", position=position)
    if SAME_RE.search(text):
        return Focus("same", "speakers")
    return None


QUOTED_RE = re.compile(r"""["'‘“]([a-z0-9-]+)["'’”]""")


def named_word(question: str) -> str | None:
    """The one word a counting question asks about ("how many times is 'seven' said", "how
    often does she say the number two"), else None."""
    text = question.lower()
    quoted = QUOTED_RE.search(text)
    if quoted:
        return quoted.group(1)
    numbers = [w for w in tokens(text) if w in NUMBER_WORDS and w != "oh"]
    return numbers[0] if len(numbers) == 1 else None


# -- questions without choices ------------------------------------------------------------
YES_NO_RE = re.compile(
    r"^\s*(?:and\s+|so\s+|but\s+)?(is|are|does|do|did|can|could|was|were|has|have|will|would)\b"
    r"|^\s*any(?:one|body)?\b(?!.*\b(?:what|which|who|when|how)\b)"  # "Any music?", "Anyone there?"
)
SPEECH_TARGET_RE = re.compile(
    r"\b(speech|speak\w*|talk\w*|voices?|someone|anyone|somebody|anybody|person|people|"
    r"conversation|spoken words?|words?)\b"
)
# a person is asked about, not yet what they do: "is anyone there" is speech, "can you hear
# someone coughing" is the cough
PERSON_WORDS = {"someone", "anyone", "somebody", "anybody", "person", "people", "persons"}
MUSIC_TARGET_RE = re.compile(r"\b(music|musical|song|melody|tune)\b")
SAY_RE = re.compile(r"\b(say|says|said|saying|mention\w*|utter\w*|pronounc\w*|spoken|speak)\b")
WORD_RE = re.compile(r"\b(?:the\s+)?(?:word|number|name|digit|phrase)s?\s+['\"‘“]?([\w'-]+)")
KIND_RE = re.compile(
    r"\b(?:what|which)\s+(kinds?|types?|sorts?|genres?|styles?)\b(?:\s+of\s+(\w+))?"
    r"|\b(?:what|which)\s+(animal|instrument|bird|vehicle|machine|sound|noise|music)s?\b"
    r"|\bwhat(?:'s| is| are)?\s+(?:making|causing|producing)\b"
    r"|^\s*what\s+(?:do|can)\s+(?:you|i|we)\s+hear\b"
    r"|^\s*what(?:'s| is)\s+(?:this|that)\s+(sound|noise)\b"
)
WHEN_RE = re.compile(r"^\s*(?:and\s+)?(?:when|at what (?:time|point|moment))\b|\bwhat time\b")
WHO_RE = re.compile(
    r"^\s*who\b|\b(man|male|boy) or (?:a )?(woman|female|girl)\b|\b(woman|female|girl) or "
    r"(?:a )?(man|male|boy)\b|\bgender\b"
)
SAID_RE = re.compile(
    r"\bwhat\b.*\b(say|says|said|saying|spoken|asked|question|words?|read|reading|talk\w* about)\b"
    r"|\btranscri\w*"
)
EDGE_RE = re.compile(r"\b(start|starts|begin|begins|stop|stops|end|ends|finish\w*)\b")
PRESENCE_FILLER = {
    "is", "are", "does", "do", "did", "can", "could", "was", "were", "has", "have", "will",
    "would", "there", "a", "an", "the", "any", "some", "sound", "sounds", "noise", "noises",
    "of", "in", "this", "that", "recording", "clip", "audio", "file", "background", "here",
    "anywhere", "you", "i", "we", "hear", "heard", "it", "somewhere", "at", "all", "and",
    "what", "kind", "type", "sort", "also", "present", "audible", "playing", "play", "ever",
    "me", "tell", "please", "within", "on", "track", "so", "but", "or", "not", "maybe",
}  # fmt: skip


# words around the word asked about that are not it ("is X among the numbers said")
SPEECH_NOUNS = {
    "word", "words", "number", "numbers", "digit", "digits", "name", "names", "speaker",
    "speakers", "he", "she", "they", "someone", "anyone", "person", "among", "one", "said",
    "spoken", "say", "says", "mentioned", "mention", "ever", "actually", "really", "out", "loud",
    "something", "anything",
}  # fmt: skip


@dataclass(frozen=True)
class OpenAsk:
    """What a question without choices asks for."""

    form: str  # yes_no | property | kind | count | when | who | said | describe
    target: str = "sound"  # sound | speech | music | word | recording (property: the whole clip)
    subject: str = ""  # the thing asked about ("hen", "seven", "dog bark")
    and_kind: bool = False  # "is there music, and what kind?"
    edge: str = ""  # when: "start" or "end" ("when does the speech start")
    prop: str = ""  # property: tempo | mode | loudness | mood | gender | child | emotion |
    #                 accent | noise | clipping
    value: str = ""  # the value asked about: fast, slow, major, minor, loud, quiet, male,
    #                  female, angry, noisy, clean ... ("" when the question names none)


def open_ask(question: str) -> OpenAsk:
    """How a question typed without choices is to be answered."""
    text = " ".join(question.lower().replace("’", "'").split())
    first = re.split(r"[?.!]", text)[0] if re.search(r"[?.!]", text[:-1]) else text
    and_kind = bool(KIND_RE.search(text))
    if WHO_RE.search(text):
        return OpenAsk("who", "speech")
    if YES_NO_RE.search(text):
        prop = property_asked(first)
        if prop is not None:
            return prop
        target, subject = presence_target(first)
        return OpenAsk("yes_no", target, subject, and_kind=and_kind)
    if WHEN_RE.search(text):
        target, subject = presence_target(re.sub(WHEN_RE, "is", text, count=1))
        edge = EDGE_RE.search(text)
        word = edge.group(1) if edge else ""
        edge_kind = "start" if word.startswith(("start", "begin")) else "end" if word else ""
        return OpenAsk("when", target, subject, edge=edge_kind)
    if COUNT_RE.search(text):
        return OpenAsk("count", subject=subject_words(text))
    if SAID_RE.search(text):
        return OpenAsk("said", "speech")
    if and_kind:
        found = KIND_RE.search(text)
        noun = next((g for g in (found.groups() if found else ()) if g and g not in (
            "kind", "kinds", "type", "types", "sort", "sorts", "genre", "genres", "style",
            "styles")), "")  # fmt: skip
        target = "music" if noun in ("music", "instrument") or MUSIC_TARGET_RE.search(text) else (
            "sound")  # fmt: skip
        return OpenAsk("kind", target, noun)
    return OpenAsk("describe")


def presence_target(text: str) -> tuple[str, str]:
    """What a yes/no question asks is there: ("word", "seven"), ("speech", ""),
    ("music", ""), or ("sound", "dog barking")."""
    said = SAY_RE.search(text)
    quoted = QUOTED_RE.search(text)
    named = WORD_RE.search(text)
    if said or (named and re.search(r"\bword\b", text)):
        if quoted:
            return "word", quoted.group(1)
        if named and named.group(1) not in ("is", "are", "was", "said", "spoken"):
            return "word", named.group(1)
        after = text[said.end() :] if said else ""
        before = text[: said.start()] if said else text
        for part in (after, before):  # "does he say X", "is X among the words said"
            words = [w for w in tokens(part) if w not in PRESENCE_FILLER | SPEECH_NOUNS]
            if words and not SPEECH_TARGET_RE.fullmatch(words[0]):
                return "word", " ".join(words[:3])
        return "speech", ""
    if MUSIC_TARGET_RE.search(text) and not re.search(r"\bmusical instrument", text):
        return "music", ""
    subject = [w for w in tokens(text) if w not in PRESENCE_FILLER]
    speech = {m.group(1) for m in SPEECH_TARGET_RE.finditer(text)}
    if speech <= PERSON_WORDS:  # only who, not what: the sound they make, if one is named
        done = [w for w in subject if w not in PERSON_WORDS]
        if done:
            return "sound", " ".join(done)
    if speech and not re.search(r"\bsing\w*|\bsung\b", text):
        return "speech", ""
    return "sound", " ".join(subject)


# -- yes/no about a property of the music, the speaker or the recording ---------------------
# Each property: the words that ask for it and the value each word stands for. Checked in this
# order: "is the man angry" asks about anger, not about a man.
PROPERTY_WORDS: dict[str, dict[str, str]] = {
    "accent": {"accent": "", "accented": ""},
    "emotion": {
        "angry": "angry", "mad": "angry", "annoyed": "angry", "furious": "angry",
        "upset": "upset", "frustrated": "frustrated", "happy": "happy", "cheerful": "happy",
        "joyful": "happy", "sad": "sad", "unhappy": "sad", "depressed": "sad", "calm": "calm",
        "relaxed": "calm", "excited": "excited", "nervous": "nervous", "anxious": "nervous",
        "scared": "scared", "afraid": "scared", "frightened": "scared", "stressed": "stressed",
        "worried": "worried", "bored": "bored", "emotional": "emotional", "tense": "tense",
    },
    "child": {"child": "child", "kid": "child", "children": "child", "kids": "child"},
    "gender": {
        "man": "male", "male": "male", "guy": "male", "boy": "male", "men": "male",
        "woman": "female", "female": "female", "lady": "female", "girl": "female",
        "women": "female",
    },
    "pitch": {
        "deep": "low", "low": "low", "lower": "low", "high": "high", "higher": "high",
        "squeaky": "high", "shrill": "high", "pitched": "", "pitch": "",
    },
    "mode": {"major": "major", "minor": "minor"},
    "tempo": {
        "fast": "fast", "quick": "fast", "rapid": "fast", "uptempo": "fast", "upbeat": "fast",
        "slow": "slow", "tempo": "", "bpm": "",
    },
    "loudness": {"loud": "loud", "quiet": "quiet", "soft": "quiet", "faint": "quiet",
                 "volume": ""},
    "noise": {"noisy": "noisy", "noise": "noisy", "hiss": "noisy", "clean": "clean"},
    "clipping": {"clipped": "", "clipping": "", "clips": ""},
}  # fmt: skip
# a mood of the music, not of a person ("is the music happy")
MUSIC_MOODS = {"happy", "sad", "calm", "angry", "excited", "scared", "tense"}
# the words that name what a property is of, or tie the question together: anything else left
# in the question ("is there a fast car") makes it a question about that thing being there
PROPERTY_SUBJECT = {
    "speaker", "speakers", "voice", "voices", "person", "someone", "somebody", "anyone",
    "anybody", "he", "she", "they", "his", "her", "their", "singer", "vocalist", "vocals",
    "narrator", "talking", "speaking", "talk", "talks", "speak", "speaks", "sing", "sings",
    "singing", "sound", "sounds", "seem", "seems", "like", "feel", "feels", "mood", "tone",
    "music", "song", "songs", "tune", "melody", "track", "piece", "beat", "rhythm", "key",
    "scale", "mode", "pace", "played", "recording", "clip", "audio", "file", "this", "that",
    "it", "its", "in", "a", "an", "the", "very", "quite", "rather", "pretty", "really", "too",
    "bit", "little", "kind", "sort", "of", "background", "there", "any", "some", "much",
    "overall", "generally", "mostly", "strong", "heavy", "lot", "lots", "with", "have", "has",
    "having", "be", "being", "there's", "one", "here", "speech", "playing", "or",
    "not", "at", "all", "s", "spoken", "by", "adult", "young", "old", "human",
}  # fmt: skip
# a key named in full: "C minor", "F sharp major", "Bb minor" (not "a minor key": an article)
KEY_NAME_RE = re.compile(
    r"\b([a-g])(?:\s*(#|sharp|flat|b))?\s+(major|minor)\b(?!\s+(?:key|scale|mode|chord|tonality))"
)
MUSIC_SUBJECT_RE = re.compile(
    r"\b(music|musical|song|songs|tune|melody|track|piece|beat|rhythm|key|scale|mode|tempo|bpm)\b"
)
SPEECH_SUBJECT_RE = re.compile(
    r"\b(speaker|speakers|voice|voices|person|someone|somebody|anyone|anybody|he|she|they|"
    r"singer|vocalist|narrator|talk\w*|speak\w*|man|woman|male|female|guy|lady|girl|boy|"
    r"child|kid)\b"
)


def key_named(text: str) -> re.Match[str] | None:
    """A key named in a question ("is it in C minor"), else None; "a minor" is the key A minor
    only after "in" ("is it in A minor", not "is it a minor key")."""
    for found in KEY_NAME_RE.finditer(text):
        article = found.group(1) == "a" and not found.group(2)
        if article and not re.search(r"\bin\s+$", text[: found.start()]):
            continue
        return found
    return None


def property_asked(text: str) -> OpenAsk | None:
    """A yes/no question about a property of the music, the speaker or the recording ("is the
    song in a major key", "is the speaker a woman", "is there background noise"), else None
    (a question about something being there)."""
    if re.search(r"\b(say|says|said|saying|mention\w*|utter\w*|pronounc\w*|words?)\b", text) or (
            QUOTED_RE.search(text)):  # fmt: skip
        return None  # "does she say the word 'happy'": a word, not a mood
    key = key_named(text)
    if key is not None:
        rest = tokens(text[: key.start()] + " " + text[key.end() :])
        if all(w in PRESENCE_FILLER | PROPERTY_SUBJECT for w in rest):
            sharp = {"#": "#", "sharp": "#", "b": "b", "flat": "b"}.get(key.group(2) or "", "")
            value = f"{key.group(1).upper()}{sharp} {key.group(3)}"
            return OpenAsk("property", "music", prop="key", value=value)
    words = tokens(text)
    for prop, vocabulary in PROPERTY_WORDS.items():
        hits = [w for w in words if w in vocabulary]
        if not hits:
            continue
        speech = bool(SPEECH_SUBJECT_RE.search(text))
        if prop == "pitch" and (not speech or "volume" in words):
            continue  # "is the volume high": loudness
        if prop == "mode" and not (MUSIC_SUBJECT_RE.search(text) or re.search(
                r"\b(?:in|is it) (?:a )?(?:major|minor)\b", text)):  # fmt: skip
            continue  # "a minor problem"
        others = [w for w in words if w not in PRESENCE_FILLER | PROPERTY_SUBJECT
                  and not any(w in v for v in PROPERTY_WORDS.values())]  # fmt: skip
        if others:
            return None  # "is there a fast car", "is the dog angry": that thing, if it is there
        values = list(dict.fromkeys(vocabulary[w] for w in hits if vocabulary[w]))
        value = values[0] if len(values) == 1 else ""
        music = bool(MUSIC_SUBJECT_RE.search(text))
        if prop in ("tempo", "mode"):
            target = "music"
        elif prop == "emotion":
            moods = all(vocabulary[w] in MUSIC_MOODS for w in hits)
            target = "music" if music and not speech and moods else "speech"
            prop = "mood" if target == "music" else prop
        elif prop in ("accent", "gender", "child", "pitch"):
            target = "speech"
        elif prop == "loudness":
            target = "music" if music else "speech" if speech else "recording"
            if not value and ("low" in words or "high" in words):  # "is the volume low"
                value = "quiet" if "low" in words else "loud"
        else:
            target = "recording"
        return OpenAsk("property", target, prop=prop, value=value)
    return None
