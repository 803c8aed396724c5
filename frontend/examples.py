"""The examples on the first screen: small bundled recordings, each with a question (and
answer choices when it has them). One click uploads the recording for the visitor and asks,
so someone with no audio at hand sees the agent work at once. Where the clips come from and
their licences: ``frontend/examples/PROVENANCE.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

FOLDER = Path(__file__).parent / "examples"


@dataclass(frozen=True)
class Example:
    label: str  # what the card says
    file: str  # in FOLDER
    question: str
    choices: tuple[str, ...] = field(default_factory=tuple)

    @property
    def path(self) -> Path:
        return FOLDER / self.file

    def card(self) -> dict[str, str]:
        """The card in the empty chat (``gr.Chatbot(examples=...)``)."""
        return {"display_text": f"{self.label}: {self.question}", "text": self.question}


EXAMPLES = (
    Example(
        "Dog or siren",
        "dog_bark_esc50.ogg",
        "Which sound is this?",
        ("Dog barking", "Rain", "Church bells", "Siren"),
    ),
    Example("Speech", "speech_librispeech_198-209-0000.ogg", "What is said?"),
    Example("Music", "music_vibe_ace_excerpt.ogg", "What is the tempo of this music?"),
    Example("Phone menu", "phone_digits_fsdd.ogg", "Which digits are spoken, in order?"),
    Example("Bird", "robin_bird.ogg", "Which animal is this?", ("Bird", "Dog", "Cat", "Cow")),
)


def example(index: int | None) -> Example | None:
    if index is None or not 0 <= index < len(EXAMPLES):
        return None
    return EXAMPLES[index]
