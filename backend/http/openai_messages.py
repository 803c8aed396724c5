"""Reading an OpenAI chat request: the question, its choices and its audio.

What a client may send (``POST /v1/chat/completions``):

- user messages whose content is text, or a list of parts: ``text``; ``input_audio``
  (``{"data": <base64>, "format": "wav"|"mp3"|...}``, as OpenAI's audio models take it);
  ``file`` (``{"file_data": <base64 or data: URL>, "filename": ...}`` or ``{"file_id": <audio
  id>}``); ``audio_url`` (``{"url": <data: URL, or the URL of an upload of this server>}``);
- answer choices as a numbered (or lettered) list at the end of the question's text, or as
  the ``choices`` extension field;
- or the link of an earlier upload (``…/api/audio/<id>``) written in the text, for chat front
  ends that cannot attach audio themselves;
- earlier user and assistant messages: the earlier turns of the same conversation. A follow-up
  without audio of its own uses the latest earlier recording.

System and developer messages are not read (the planner has its own instructions), nor
assistant messages (their answers are stored with the conversation).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent.audio import sha256_bytes
from backend.access.body_limits import Text
from backend.http.client_runs import audio_id_of

# The link of an upload of this server written in a message (what a person pastes into a chat
# front end that cannot attach audio itself, as Open WebUI, which transcribes attachments).
_UPLOAD_LINK = re.compile(r"(?:https?://[^\s/]+)?(?:/[^\s]*)?/api/audio/([0-9a-f]{64})(?:/info)?/?")
_DATA_URL = re.compile(r"^data:([\w/+.-]*)(?:;[\w=.-]+)*;base64,(.*)$", re.DOTALL)
_CHOICE_LINE = re.compile(r"^\s*\(?([0-9]{1,2}|[A-Za-z])[.):]\s+(\S.*?)\s*$")
_CHOICES_HEADING = re.compile(r"^\s*(answer\s+)?(choices|options)\s*:?\s*$", re.IGNORECASE)
ATTACH_AUDIO = (
    "Attach the recording to a user message: an input_audio part (base64 wav or mp3), a file "
    "part, or an audio_url part with the URL of an earlier upload (POST /api/audio)."
)


class ChatError(ValueError):
    """A request this model cannot read; ``param`` names the field, as OpenAI's errors do."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class ChatBody(BaseModel):
    """The fields read; the others OpenAI clients send are refused or accepted and not used
    as ``backend.http.openai_params`` says."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    n: int | None = None
    choices: list[Text] | None = Field(
        default=None, description="extension: answer choices (else read from the question)"
    )


@dataclass
class AudioPart:
    """A recording in a message: its bytes, or a reference to an upload."""

    data: bytes | None = None
    name: str = ""
    audio_id: str | None = None

    @property
    def id(self) -> str:
        """The audio id it has (or will have once stored): the sha256 of its bytes."""
        return self.audio_id or sha256_bytes(self.data or b"")


@dataclass
class UserTurn:
    question: str
    choices: list[str]
    audio: list[AudioPart] = field(default_factory=list)


@dataclass
class ParsedChat:
    turns: list[UserTurn]  # every user message in order; the last one is the question

    @property
    def current(self) -> UserTurn:
        return self.turns[-1]

    @property
    def earlier(self) -> list[UserTurn]:
        return self.turns[:-1]

    def audio(self) -> AudioPart:
        """The question's recording: its own, else the latest earlier one."""
        for turn in reversed(self.turns):
            if len(turn.audio) > 1:
                raise ChatError(
                    f"A message carries {len(turn.audio)} recordings; send one per message.",
                    "messages",
                )
            if turn.audio:
                return turn.audio[0]
        raise ChatError("No audio in the messages. " + ATTACH_AUDIO, "messages")


def parse_chat(body: ChatBody, lifted: Mapping[str, bytes] | None = None) -> ParsedChat:
    """The turns of a request. ``lifted``: base64 strings taken out of the JSON before it was
    parsed (``backend.http.json_lift``), decoded, by the name that stands in their place."""
    lifted = lifted or {}
    if body.n not in (None, 1):
        raise ChatError("Only n=1 is supported: one answer per question.", "n")
    turns: list[UserTurn] = []
    for index, message in enumerate(body.messages):
        role = message.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool", "function"):
            raise ChatError(f"messages[{index}] has an unknown role {role!r}.", "messages")
        if role == "user":
            turns.append(_user_turn(message.get("content"), f"messages[{index}]", lifted))
    if not turns or body.messages[-1].get("role") != "user":
        raise ChatError("The last message must be the user's question.", "messages")
    current = turns[-1]
    if body.choices is not None:
        current.choices = [c.strip() for c in body.choices if c and c.strip()]
        if len(current.choices) == 1:
            raise ChatError("Give at least two answer choices, or none.", "choices")
    if not current.question:
        raise ChatError("The last user message has no question text.", "messages")
    return ParsedChat(turns)


def _user_turn(content: Any, where: str, lifted: Mapping[str, bytes]) -> UserTurn:
    texts: list[str] = []
    audio: list[AudioPart] = []
    if isinstance(content, str):
        texts.append(_valid_text(content, f"{where}.content"))
    elif isinstance(content, list):
        for number, part in enumerate(content):
            _read_part(part, f"{where}.content[{number}]", texts, audio, lifted)
    elif content is not None:
        raise ChatError(f"{where}.content must be text or a list of parts.", "messages")
    text = "\n".join(t for t in texts if t.strip())
    for match in _UPLOAD_LINK.finditer(text):
        audio.append(AudioPart(audio_id=match.group(1)))
    if _UPLOAD_LINK.search(text):
        lines = (" ".join(line.split()) for line in _UPLOAD_LINK.sub("", text).splitlines())
        text = "\n".join(line for line in lines if line)
    unique = list({part.id: part for part in audio}.values())  # the same recording twice: one
    question, choices = split_choices(text)
    return UserTurn(question, choices, unique)


def _read_part(
    part: Any, where: str, texts: list[str], audio: list[AudioPart], lifted: Mapping[str, bytes]
) -> None:
    kind = part.get("type") if isinstance(part, dict) else None
    body = part.get(kind) if isinstance(part, dict) and kind else None
    if kind == "text":
        texts.append(_valid_text(str(part.get("text") or ""), where))
    elif kind == "input_audio" and isinstance(body, dict):
        fmt = str(body.get("format") or "wav").lower()
        data = _b64(body.get("data"), where, lifted)
        audio.append(AudioPart(data=data, name=f"audio.{fmt}"))
    elif kind == "file" and isinstance(body, dict):
        if body.get("file_id"):
            audio.append(AudioPart(audio_id=_reference(str(body["file_id"]), where)))
        else:
            data = _data_url_or_b64(body.get("file_data"), where, lifted)
            name = _valid_text(str(body.get("filename") or "audio"), f"{where}.filename")
            audio.append(AudioPart(data=data, name=name))
    elif kind == "audio_url" and isinstance(body, dict | str):
        url = str(body.get("url") if isinstance(body, dict) else body)
        if url.startswith("data:"):
            audio.append(AudioPart(data=_data_url_or_b64(url, where, lifted), name="audio"))
        else:
            audio.append(AudioPart(audio_id=_reference(url, where)))
    elif kind in ("text", "input_audio", "file", "audio_url"):
        raise ChatError(f"{where} ({kind}) is missing its '{kind}' object.", "messages")
    else:
        raise ChatError(
            f"{where} is a {kind!r} part; this model reads text and audio only.", "messages"
        )


def _valid_text(value: str, where: str) -> str:
    """Text that can be stored and sent back (JSON allows a lone "\\ud800", UTF-8 not)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ChatError(
            f"{where} has an invalid character (an unpaired UTF-16 surrogate such as \\ud800); "
            "send valid Unicode text.",
            "messages",
        ) from None
    return value


def _b64(value: Any, where: str, lifted: Mapping[str, bytes]) -> bytes:
    if not isinstance(value, str) or not value:
        raise ChatError(f"{where} has no base64 data.", "messages")
    if value in lifted:
        return lifted[value]
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ChatError(f"{where} is not valid base64.", "messages") from None


def _data_url_or_b64(value: Any, where: str, lifted: Mapping[str, bytes]) -> bytes:
    match = _DATA_URL.match(value) if isinstance(value, str) else None
    return _b64(match.group(2) if match else value, where, lifted)


def _reference(url: str, where: str) -> str:
    audio_id = audio_id_of(url)
    if audio_id is None:
        raise ChatError(
            f"{where}: this server does not fetch audio from other sites ({url[:80]}). Send the "
            "bytes (input_audio, or a data: URL), or upload the file first (POST /api/audio) "
            "and pass the URL or id it returns.",
            "messages",
        )
    return audio_id


def split_choices(text: str) -> tuple[str, list[str]]:
    """The question and its choices, when the text ends with a numbered or lettered list
    (``1. Dog`` / ``2) Rain``, ``A. Dog`` / ``B. Rain``; at least two, numbered in order),
    optionally under a "Choices:" or "Options:" line."""
    lines = text.strip().splitlines()
    items: list[str] = []
    markers: list[str] = []
    start = len(lines)
    for index in range(len(lines) - 1, -1, -1):
        match = _CHOICE_LINE.match(lines[index])
        if not match:
            break
        markers.insert(0, match.group(1))
        items.insert(0, match.group(2))
        start = index
    while len(items) >= 2 and not _in_order(markers):  # the list is only its in-order tail
        markers.pop(0)
        items.pop(0)
        start += 1
    if len(items) < 2:
        return text.strip(), []
    head = lines[:start]
    if head and _CHOICES_HEADING.match(head[-1]):
        head = head[:-1]
    return "\n".join(head).strip(), items


def _in_order(markers: list[str]) -> bool:
    first = markers[0]
    if first.isdigit():
        return all(m.isdigit() and int(m) == 1 + i for i, m in enumerate(markers))
    if first.lower() != "a":
        return False
    return all(m.isalpha() and ord(m.lower()) == ord("a") + i for i, m in enumerate(markers))
