"""``Store``'s export of a whole conversation as one JSON-serialisable dict (no audio bytes)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from agent.events import parse_event
from storage.models import Audio, AudioOwnerRef, Conversation, EventRow, Message, Run, utc_now
from storage.question_reads import conversation_info
from storage.row_infos import audio_info, message_info, owned_conversation, run_info
from storage.store_base import engine_of

EXPORT_FORMAT = "audio-agent-conversation/1"


class ExportStore:
    """The export part of ``Store``."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions
        self._engine = engine_of(sessions)

    def conversation_export(self, conversation_id: str, owner: str | None = None) -> dict[str, Any]:
        """The whole conversation as a JSON-serialisable dict (no audio bytes).

        Audio is listed with the file names its owner uploaded it with (never another
        owner's). With ``owner``, someone else's conversation is missing (LookupError).

        Shape: ``{"format", "exported_at", "conversation", "audio": [...], "messages":
        [{...message, "runs": [{...run, "events": [...]}]}]}``. Assistant messages are
        included with an empty ``runs`` list. Raises LookupError if it does not exist.
        """
        with self._sessions() as s:
            conv = owned_conversation(s.get(Conversation, conversation_id), owner)
            if conv is None:
                raise LookupError(f"No conversation {conversation_id!r}")
            messages = list(
                s.scalars(
                    select(Message)
                    .where(Message.conversation_id == conversation_id)
                    .order_by(Message.position)
                )
            )
            message_ids = [m.id for m in messages]
            runs = (
                list(
                    s.scalars(
                        select(Run)
                        .where(Run.message_id.in_(message_ids))
                        .order_by(Run.created_at, Run.id)
                    )
                )
                if message_ids
                else []
            )
            run_ids = [r.id for r in runs]
            event_rows = (
                list(
                    s.execute(
                        select(EventRow.run_id, EventRow.payload)
                        .where(EventRow.run_id.in_(run_ids))
                        .order_by(EventRow.run_id, EventRow.seq)
                    )
                )
                if run_ids
                else []
            )

            events_by_run: dict[str, list[dict[str, Any]]] = {}
            audio_ids: list[str] = []
            for run_id, payload in event_rows:
                events_by_run.setdefault(run_id, []).append(_export_event(payload))
                if payload.get("type") == "run_started":
                    audio_ids.extend(payload.get("audio_ids") or [])
            runs_by_message: dict[str, list[dict[str, Any]]] = {}
            for r in runs:
                item = run_info(r).public()
                item["events"] = events_by_run.get(r.id, [])
                runs_by_message.setdefault(r.message_id, []).append(item)

            message_items = []
            for m in messages:
                item = message_info(m).model_dump(mode="json")
                item["runs"] = runs_by_message.get(m.id, [])
                message_items.append(item)
                if m.audio_id:
                    audio_ids.append(m.audio_id)

            wanted = list(dict.fromkeys(audio_ids))
            audio_rows = (
                {a.id: a for a in s.scalars(select(Audio).where(Audio.id.in_(wanted)))}
                if wanted
                else {}
            )
            refs = (
                {
                    r.audio_id: r
                    for r in s.scalars(
                        select(AudioOwnerRef).where(
                            AudioOwnerRef.owner == conv.owner, AudioOwnerRef.audio_id.in_(wanted)
                        )
                    )
                }
                if wanted
                else {}
            )
            audio_items = [
                audio_info(audio_rows[a], refs.get(a), name_only_from_ref=True).model_dump(
                    mode="json", exclude={"stored_path", "original_path"}
                )
                for a in wanted
                if a in audio_rows
            ]
            return {
                "format": EXPORT_FORMAT,
                "exported_at": utc_now().isoformat(),
                "conversation": conversation_info(conv).model_dump(mode="json"),
                "audio": audio_items,
                "messages": message_items,
            }


def _export_event(payload: dict[str, Any]) -> dict[str, Any]:
    try:
        return parse_event(payload).model_dump(mode="json")
    except ValueError:
        return payload  # an event stored by another version; keep it as stored
