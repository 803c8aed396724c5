"""``AUDIO_AGENT_RETENTION_DAYS``: a background thread that prunes old conversations.

It prunes once at start-up, then every ``settings.retention_every_s`` (an hour by default),
through ``AgentService.prune_stale`` (the same cleanup as a deletion: audio no one else uses,
cached tool results, UI files and exports). A failed round is logged and retried next time.
"""

from __future__ import annotations

import logging
import threading

from backend.service import AgentService

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

    def _loop(self) -> None:
        every = max(float(self.service.settings.retention_every_s), 0.01)
        while not self._stop.is_set():
            try:
                pruned = self.service.prune_stale()
                if pruned:
                    log.info(
                        "retention: deleted %d conversation(s) untouched for %g days",
                        len(pruned),
                        self.service.settings.retention_days,
                    )
            except Exception:
                log.exception("retention: pruning failed; trying again in %.0f s", every)
            self.rounds += 1
            self._stop.wait(every)


def start_retention(service: AgentService) -> Retention | None:
    """Start the pruning thread when ``retention_days`` is set; None otherwise."""
    if not service.settings.retention_days:
        return None
    return Retention(service).start()
