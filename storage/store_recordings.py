"""``Store``'s recordings: the stored audio, each owner's references to it (the owner's own
file name), and the bytes an owner keeps on disk."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from agent.events import AudioRef
from storage import question_reads
from storage.models import Audio, AudioOwnerRef, Conversation, Message, utc_now
from storage.row_infos import audio_info
from storage.schemas import AudioInfo
from storage.store_base import engine_of, retried

DECODED_BYTES_PER_S = 16_000 * 2  # the stored copy of every recording: 16 kHz mono 16-bit


class RecordingStore:
    """The recordings part of ``Store``."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._engine = engine_of(sessions)

    def add_audio(self, ref: AudioRef, size_bytes: int) -> None:
        """Record a stored recording; a second call with the same id does nothing."""
        if self.get_audio(ref.id) is not None:
            return
        row = Audio(
            id=ref.id,
            name=ref.name,
            format=ref.format,
            duration_s=float(ref.duration_s),
            sample_rate=int(ref.original_sample_rate),
            channels=int(ref.original_channels),
            stored_path=str(ref.path),
            original_path=str(ref.original_path),
            size_bytes=int(size_bytes),
            created_at=utc_now(),
        )
        try:
            with self._sessions.begin() as s:
                s.add(row)
        except IntegrityError:
            # Another thread stored the same recording between the check and the insert.
            if self.get_audio(ref.id) is None:
                raise

    def get_audio(self, audio_id: str, owner: str | None = None) -> AudioInfo | None:
        """The recording; with ``owner``, only through that owner's reference (None without
        one), and with that owner's file name and upload time."""
        if owner is None:
            stmt = select(Audio.__table__).where(Audio.id == audio_id)
            with self._engine.connect() as conn:
                row = conn.execute(stmt).first()
            return audio_info(row) if row is not None else None  # type: ignore[arg-type]
        with self._engine.connect() as conn:
            return question_reads.owned_audio(conn, audio_id, owner)

    def audio_infos(self, audio_ids: Iterable[str], owner: str) -> dict[str, AudioInfo]:
        """``get_audio`` for several recordings in one query: those ``owner`` has a
        reference to, by id, under that owner's names."""
        wanted = list(dict.fromkeys(audio_ids))
        if not wanted:
            return {}
        stmt = (
            select(Audio, AudioOwnerRef)
            .join(AudioOwnerRef, AudioOwnerRef.audio_id == Audio.id)
            .where(AudioOwnerRef.owner == owner, Audio.id.in_(wanted))
        )
        with self._sessions() as s:
            return {row.id: audio_info(row, ref) for row, ref in s.execute(stmt)}

    def add_audio_ref(self, owner: str, audio_id: str, name: str = "") -> None:
        """Give ``owner`` a reference to a stored recording (kept if it exists: the first
        name this owner used stays)."""

        def write(s: Session) -> None:
            if s.get(AudioOwnerRef, (owner, audio_id)) is None:
                s.add(
                    AudioOwnerRef(owner=owner, audio_id=audio_id, name=name, created_at=utc_now())
                )
                s.flush()

        retried(self._sessions.begin, write)

    def stored_bytes(self, owner: str) -> int:
        """Bytes on disk of the recordings ``owner`` uploaded or uses: the original as
        uploaded plus the decoded 16 kHz mono copy, each recording counted once, whether a
        question used it yet or not. Deleting a conversation (or an unused upload expiring)
        frees what only it held."""
        used = (
            select(Message.audio_id)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(Conversation.owner == owner, Message.audio_id.is_not(None))
        )
        uploaded = select(AudioOwnerRef.audio_id).where(AudioOwnerRef.owner == owner)
        decoded = Audio.duration_s * DECODED_BYTES_PER_S
        with self._sessions() as s:
            total = s.execute(
                select(func.coalesce(func.sum(Audio.size_bytes + decoded), 0)).where(
                    or_(Audio.id.in_(used), Audio.id.in_(uploaded))
                )
            ).scalar_one()
        return int(total)
