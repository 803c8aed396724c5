"""A background thread that removes what has outlived its time.

- ``AUDIO_AGENT_RETENTION_DAYS``: conversations untouched that long, through
  ``AgentService.prune_stale`` (the same cleanup as a deletion: audio no one else uses,
  cached tool results, UI files and exports);
- ``AUDIO_AGENT_UPLOAD_TTL_HOURS``: the page's uploads and recordings never asked about
  (``expire_uploads``), and login sessions long expired or revoked.

It runs once at start-up, then every ``settings.retention_every_s`` (an hour by default). A
failed round is logged and retried next time.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from backend.service import AgentService
from storage.cleanup import expire_unused_uploads
from storage.login_sessions import LoginSessions
from storage.upload_files import UploadFiles

log = logging.getLogger(__name__)


class Retention:
    def __init__(self, service: AgentService) -> None:
        self.service = service
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="retention", daemon=True)

    def start(self) -> Retention:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def round(self) -> None:
        pruned = self.service.prune_stale()
        if pruned:
            log.info(
                "retention: deleted %d conversation(s) untouched for %g days",
                len(pruned),
                self.service.settings.retention_days,
            )
        expired = expire_uploads(self.service)
        if expired:
            log.info("retention: removed %d upload(s) no question used", expired)
        LoginSessions(self.service.store).prune(datetime.now(UTC) - timedelta(days=1))

    def _loop(self) -> None:
        every = max(float(self.service.settings.retention_every_s), 0.01)
        while not self._stop.is_set():
            try:
                self.round()
            except Exception:
                log.exception("retention: pruning failed; trying again in %.0f s", every)
            self.rounds += 1
            self._stop.wait(every)


def start_retention(service: AgentService) -> Retention | None:
    """Start the pruning thread when ``retention_days`` or ``upload_ttl_hours`` is set."""
    settings = service.settings
    if not settings.retention_days and not settings.upload_ttl_hours:
        return None
    return Retention(service).start()


def expire_uploads(service: AgentService, now: datetime | None = None) -> int:
    """Remove page uploads and unused API uploads older than the time to live; how many
    files and recordings went. Nothing when ``upload_ttl_hours`` is 0."""
    hours = service.settings.upload_ttl_hours
    if not hours or hours <= 0:
        return 0
    cutoff = (now or datetime.now(UTC)) - timedelta(hours=hours)
    files = UploadFiles(service.store)
    old = files.listed(before=cutoff)
    for upload in old:
        Path(upload.path).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            Path(upload.path).parent.rmdir()  # Gradio's folder of that file, if now empty
    files.forget(u.id for u in old)
    files.forget_missing()
    expired = expire_unused_uploads(service.store, cutoff)
    for info in expired:
        service.audio.delete(info.id)
    return len(old) + len(expired)
