"""``AgentService``'s uploads: recordings stored once for identical bytes, each owner's
reference to them, within the owner's quota."""

from __future__ import annotations

from pathlib import Path

from agent.audio import AudioError, AudioStore, UnsupportedFormatError, decode_bytes, sha256_bytes
from backend.access.upload_quota import UploadQuota, disk_free
from backend.errors import ServiceError
from backend.host.settings import Settings
from storage import Store
from storage.repo import DECODED_BYTES_PER_S
from storage.schemas import AudioInfo
from storage.upload_files import UploadFiles


class UploadService:
    """The uploads part of ``AgentService``; owns the upload quota (``quota``)."""

    def __init__(
        self, settings: Settings, store: Store, audio: AudioStore, upload_files: UploadFiles
    ) -> None:
        self.settings = settings
        self.store = store
        self.audio = audio
        self.upload_files = upload_files  # the page's uploads, counted per owner
        self.quota = UploadQuota(  # per owner and per address (backend.access.upload_quota)
            per_hour=settings.limits.uploads_per_hour,
            stored_bytes=int(settings.limits.stored_mb_per_owner * 1024 * 1024),
            stored_bytes_of=self.stored_bytes,
            address_limits=settings.client_limits,
            free_bytes=disk_free(settings.data_dir),
            min_free_bytes=int(settings.min_free_disk_mb * 1024 * 1024),
        )

    def stored_bytes(self, owner: str) -> int:
        """What ``owner`` keeps on disk: recordings, and page uploads no recording counts."""
        return self.store.recordings.stored_bytes(owner) + self.upload_files.bytes_of(owner)

    def upload(
        self,
        data: bytes,
        name: str = "",
        *,
        owner: str,
        counted: int = 0,
        address: str | None = None,
    ) -> AudioInfo:
        """Store a recording (bytes shared by identical uploads) and give ``owner`` a
        reference to it under ``name``. ``counted``: bytes of it already in the owner's
        stored bytes (a page upload). ``address``: the client address, for an upload that
        came inside a JSON request (``/v1``, ``/mcp``): it counts in that address's upload
        windows (``UploadQuota.admit``); the upload routes' middleware counts the others."""
        # The same bytes again cost nothing, if this owner has them already (another
        # owner's copy must not show: no existence oracle through the quota).
        digest = sha256_bytes(data)
        known = self.store.recordings.get_audio(digest, owner) is not None
        self.quota.admit(owner, len(data), already_stored=known, counted=counted, address=address)
        existed = self.audio.get(digest) is not None
        try:
            if not known and existed:
                # Someone else stored these bytes: decode them anyway, so that the time this
                # upload takes does not tell that somebody has the same recording.
                decode_bytes(data, max_seconds=self.audio.max_seconds, name=name)
            ref = self.audio.add_bytes(data, name=name)
        except UnsupportedFormatError as exc:
            raise ServiceError(str(exc), status=415) from exc
        except AudioError as exc:
            raise ServiceError(str(exc), status=422) from exc
        if not known:  # with its decoded copy, does it still fit the owner's quota?
            keeps = len(data) + int(ref.duration_s * DECODED_BYTES_PER_S)
            refused = self.quota.stored_refusal(owner, keeps, counted)
            if refused is not None:
                if not existed and self.store.recordings.get_audio(ref.id) is None:
                    self.audio.delete(ref.id)  # stored just now, for nobody else
                raise ServiceError(refused.detail, refused.status)
        self.store.recordings.add_audio(ref, size_bytes=len(data))
        self.store.recordings.add_audio_ref(owner, ref.id, Path(name).name if name else "")
        info = self.store.recordings.get_audio(ref.id, owner)
        assert info is not None
        return info

    def upload_page_file(self, path: str, *, owner: str) -> AudioInfo:
        """A file of the page's upload route as ``owner``'s recording: only one that route
        kept for this owner (``backend.access.gradio_files`` refuses the others before Gradio
        copies them; this is the second lock)."""
        if not self.upload_files.owns(str(path), owner):
            raise ServiceError(
                "Only a file you uploaded from this page can be attached: upload it again.",
                status=403,
            )
        return self.upload_file(path, owner=owner)

    def upload_file(self, path: str | Path, *, owner: str) -> AudioInfo:
        path = Path(path)
        if not path.is_file():
            raise ServiceError(f"No such file: {path.name}")
        size = path.stat().st_size
        if size > self.audio.max_bytes:
            raise ServiceError(
                f"{path.name} is {size / 1e6:.0f} MB; the limit is "
                f"{self.settings.max_upload_mb:.0f} MB.",
                status=413,
            )
        # A file of the page's upload route is counted already: it moves to the recording.
        pending = self.upload_files.bytes_of(owner, str(path))
        info = self.upload(path.read_bytes(), name=path.name, owner=owner, counted=pending)
        if pending:
            self.upload_files.claim(str(path), owner, info.id)
        return info
