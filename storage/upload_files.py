"""Rows of the ``upload_files`` table: what the page's upload route kept on disk, per owner.

Gradio's ``/gradio_api/upload`` writes each file into its cache before any question uses it.
``backend.access.upload_quota`` records every such file here, so that it counts in the owner's
storage quota until a question makes a recording of it (``claim``: the recording counts from
then on) and its file is removed: by its time to live, or when it is found gone (deleting a
conversation removes Gradio's copies of its recordings).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import delete, func, insert, select, update

from storage.models import UploadFile, new_id, utc_now
from storage.repo import Store


@dataclass(frozen=True)
class PendingUpload:
    id: str
    path: str
    owner: str
    size_bytes: int


class UploadFiles:
    """The ``upload_files`` table of one ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, path: str, owner: str, size_bytes: int, address: str | None = None) -> None:
        with self.store.engine.begin() as conn:
            conn.execute(
                insert(UploadFile).values(
                    id=new_id(),
                    path=path,
                    owner=owner,
                    address=address,
                    size_bytes=int(size_bytes),
                    created_at=utc_now(),
                )
            )

    def bytes_of(self, owner: str, path: str | None = None) -> int:
        """Bytes of ``owner``'s uploads that no recording counts yet (of one file: ``path``)."""
        stmt = select(func.coalesce(func.sum(UploadFile.size_bytes), 0)).where(
            UploadFile.owner == owner, UploadFile.audio_id.is_(None)
        )
        if path is not None:
            stmt = stmt.where(UploadFile.path == path)
        with self.store.engine.connect() as conn:
            return int(conn.scalar(stmt) or 0)

    def owns(self, path: str, owner: str) -> bool:
        """Whether the upload route kept the file at ``path`` (exactly) for ``owner``."""
        stmt = select(UploadFile.id).where(UploadFile.path == path, UploadFile.owner == owner)
        with self.store.engine.connect() as conn:
            return conn.execute(stmt.limit(1)).first() is not None

    def claim(self, path: str, owner: str, audio_id: str) -> None:
        """``owner``'s upload at ``path`` became the recording ``audio_id``."""
        with self.store.engine.begin() as conn:
            conn.execute(
                update(UploadFile)
                .where(UploadFile.path == path, UploadFile.owner == owner)
                .values(audio_id=audio_id)
            )

    def listed(
        self, *, owner: str | None = None, before: datetime | None = None
    ) -> list[PendingUpload]:
        stmt = select(UploadFile.id, UploadFile.path, UploadFile.owner, UploadFile.size_bytes)
        if owner is not None:
            stmt = stmt.where(UploadFile.owner == owner)
        if before is not None:
            stmt = stmt.where(UploadFile.created_at < before)
        with self.store.engine.connect() as conn:
            return [
                PendingUpload(*row) for row in conn.execute(stmt.order_by(UploadFile.created_at))
            ]

    def forget(self, ids: Iterable[str]) -> int:
        wanted = list(ids)
        if not wanted:
            return 0
        with self.store.engine.begin() as conn:
            result = conn.execute(delete(UploadFile).where(UploadFile.id.in_(wanted)))
            return int(result.rowcount)  # type: ignore[attr-defined]

    def forget_missing(self, owner: str | None = None) -> int:
        """Drop the rows of files no longer on disk (removed with a conversation)."""
        return self.forget(u.id for u in self.listed(owner=owner) if not Path(u.path).exists())
