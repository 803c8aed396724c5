"""Whose runs may be taken: a silent server process is dead, or only paused.

Every process refreshes the lease (heartbeat) of its running runs every few seconds; a run
whose lease expired belongs, most likely, to a dead process, and another process marks it
interrupted. But a process can also stop beating and live: paused (SIGSTOP, a debugger, a
frozen VM) or stalled (its event loop blocked). Its runs then go on as soon as it resumes, so
taking them would cut its visitors' answers short.

``sweep`` tells the two apart before taking anything. A worker id is ``host:pid:random``
(``backend.runs.manager.new_worker_id``); on the same host the process with that pid is alive (and
the same process) when it started before the worker's oldest running run was created. Such
a worker's runs are left alone, with one warning, until it has been silent ``stall_s``; a
worker on another host, or with an id of the operator's choosing, is judged by its lease.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import UTC, datetime

from storage import Store

log = logging.getLogger("audio_agent.runs")

NEVER_S = 100 * 365 * 86400.0  # a lease no heartbeat is older than
STALLED_MESSAGE = (
    "interrupted: the server process running it stopped answering for {seconds:.0f} s, so "
    "another process closed it. Ask again."
)


def _boot_time() -> float | None:
    try:
        with open("/proc/stat") as stat:
            for line in stat:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def process_started_at(pid: int) -> datetime | None:
    """When process ``pid`` of this machine started, or None (no such process, no /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    boot = _boot_time()
    if boot is None or len(fields) < 20:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return datetime.fromtimestamp(boot + int(fields[19]) / ticks, UTC)


def worker_alive(worker_id: str, since: datetime) -> bool | None:
    """True: the worker's process runs on this machine and is older than ``since``; False:
    it is gone (or its pid now belongs to a newer process); None: cannot tell (another host,
    an id without a pid)."""
    host, _, rest = worker_id.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    if not os.path.isdir("/proc"):
        return None
    started = process_started_at(int(pid_text))
    if started is None:
        return False
    return started.timestamp() <= since.timestamp() + 1  # /proc times are to 1/100 s


def sweep(
    store: Store, *, own_worker: str, lease_s: float, stall_s: float, warned: set[str]
) -> list[str]:
    """Mark interrupted the running runs of dead workers (see the module doc); their ids."""
    now = datetime.now(UTC)
    dead: list[str] = []  # gone, or cannot tell: judged by the lease
    stalled: dict[str, float] = {}  # alive, but silent for longer than stall_s
    for worker, (beat, oldest) in store.runs.stale_run_workers(lease_s).items():
        if worker == own_worker:
            continue  # this process is alive: its next beat refreshes them
        silent_s = (now - beat).total_seconds()
        if worker_alive(worker, oldest) is not True:
            dead.append(worker)
        elif silent_s >= stall_s:
            stalled[worker] = silent_s
        elif worker not in warned:
            warned.add(worker)
            log.warning(
                "server process %s has not renewed its runs' lease for %.0f s but is alive "
                "(paused or stalled); its runs are left to it for up to %.0f s",
                worker,
                silent_s,
                stall_s,
            )
    closed = []
    if dead:
        closed += store.runs.mark_interrupted_runs(None, lease_s, unowned=False, only_workers=dead)
    for worker, silent_s in stalled.items():
        warned.discard(worker)
        closed += store.runs.mark_interrupted_runs(
            None,
            lease_s,
            unowned=False,
            only_workers=[worker],
            message=STALLED_MESSAGE.format(seconds=silent_s),
        )
    return closed
