"""Runs owned by the server: started in the background, stored, then published to followers.

A run does not belong to the HTTP request or the page that asked for it. ``RunManager.start``
hands it to a task on the manager's own event loop (one thread per process), and the caller
follows it with ``RunManager.follow``: stored events after a seq first, then the live ones as
they are stored, until the run ends. A client that goes away stops following; the run goes
on. Only ``stop`` (status ``cancelled``) or the server's shutdown (``interrupted``) end a run
early, each recorded as what it was, or storage that fails (``storage_full``: its followers
hear that, never an end that was not stored; ``backend.runs.unstored_ends``).

Events are written in small batches (group commit: a batch gathers for ``gather_s`` after
its first event, a batch of text deltas alone up to ``delta_gather_s`` (but the first delta
of a stretch of text does not wait longer), and while one batch
is being written the next one gathers; a run's last event is written at once) and
published only after their batch is committed, so every event a client has received is
stored. The last batch of a question and what follows its end (the answer as the
assistant's message) are written in one trip to a database thread.

Several processes can serve one database: each has a worker id; its runs carry it and a
heartbeat (lease) refreshed every few seconds. A process marks as ``interrupted`` only its
own runs left by an earlier life, runs of no process, and runs whose lease expired (their
process died); never another live process's runs.

Admission: at most ``max_running`` runs hold a slot at once; the others wait in a queue and
emit ``queued`` events (position, ahead). Past ``max_queued`` waiting runs, and past the
per-owner limits (runs per minute, concurrent runs, spend per day), a new question is refused
with ``RunRefused`` (HTTP 429 with Retry-After).

API for other parts (the API routes, the Gradio UI, the benchmarks)::

    manager = RunManager(store, audio=..., cache=..., similarity=..., limits=RunLimits(...))
    manager.recover()                       # at start-up: close runs of dead processes
    ticket = manager.admit(owner, n)        # before storing the question; RunRefused
    manager.start(requests, owner=..., ticket=ticket, on_end=...)   # returns at once
    async for event in manager.follow([run_id], after=0): ...       # any event loop
    manager.stop(run_id)                    # Stop: cancelled
    manager.close()                         # shutdown: live runs interrupted

Its parts, a module and an attribute each (see ``RunManager``): ``writer``, ``queue``,
``admission``, ``following`` and ``unstored`` (``backend.runs.unstored_ends``), over
``live_run`` (a live run's record), ``limits`` and ``db_threads``; this module starts,
supervises and stops runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence

from agent import events as ev
from agent.answer import Similarity
from agent.audio import AudioStore
from agent.context import RunRequest
from agent.run import run_question
from agent.tools.base import ToolCache
from backend.access.clients import UNKNOWN
from backend.runs import faults, leases
from backend.runs.admission import RunAdmission, spend_message
from backend.runs.db_threads import DbThreads
from backend.runs.fairness import AddressShare
from backend.runs.following import FOLLOW_POLL_S, RunFollowing
from backend.runs.limits import RunLimits, RunRefused, Ticket, default_max_running
from backend.runs.live_run import LiveRun, RunGroup
from backend.runs.queue import RunQueue
from backend.runs.unstored_ends import UnstoredEnds
from backend.runs.writer import DELTA_GATHER_S, GATHER_S, RunEventWriter
from storage import Store
from storage.repo import INTERRUPTED_ERROR
from storage.schemas import RunInfo

__all__ = [  # the run manager's API, wherever its parts are defined
    "DELTA_GATHER_S",
    "FOLLOW_POLL_S",
    "GATHER_S",
    "STOPPED_MESSAGE",
    "RunLimits",
    "RunManager",
    "RunRefused",
    "Ticket",
    "default_max_running",
    "new_worker_id",
    "spend_message",
]

log = logging.getLogger("audio_agent.runs")

STOPPED_MESSAGE = "The run was stopped before it finished."


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class RunManager:
    """Runs of this process; see the module docstring.

    Composed of its parts, each given what it works with and owning its own state:
    ``writer`` (``RunEventWriter``), ``queue`` (``RunQueue``: the slots and the counts),
    ``admission`` (``RunAdmission``: the reservations), ``unstored`` (``UnstoredEnds``: the
    ends kept) and ``following`` (``RunFollowing``). The manager keeps the live runs, the
    lock the parts share, its event loop and database threads, and the heartbeat."""

    def __init__(
        self,
        store: Store,
        *,
        audio: AudioStore,
        cache: ToolCache | None = None,
        similarity: Similarity | None = None,
        limits: RunLimits | None = None,
        worker_id: str | None = None,
        heartbeat_s: float = 2.0,
        lease_s: float = 15.0,
        stall_s: float = 300.0,
        warm_up: bool = False,
        warm_planners: Callable[[], object] | None = None,
        gather_s: float = GATHER_S,
        delta_gather_s: float = DELTA_GATHER_S,
    ) -> None:
        self.store = store
        self.audio = audio
        self.cache = cache
        self.similarity = similarity
        self.limits = limits or RunLimits()
        self.worker_id = worker_id or new_worker_id()
        self.heartbeat_s = heartbeat_s
        self.lease_s = max(lease_s, 2 * heartbeat_s)
        self.stall_s = max(stall_s, self.lease_s)
        self._lock = threading.RLock()  # the parts' too: their state changes in one step
        self._live: dict[str, LiveRun] = {}
        self._beat_task: asyncio.Task[None] | None = None
        self._addresses = AddressShare(  # per client address (backend.runs.fairness)
            self.limits.address_max_running, self.limits.address_runs_per_minute
        )
        self._silent_workers: set[str] = set()  # alive but without a beat (warned once)
        self._closing = False
        self._loop = asyncio.new_event_loop()
        # Database writes get their own threads: they never wait behind model calls.
        self._db = DbThreads(self._loop)
        closing = self._is_closing
        self.writer = RunEventWriter(
            store, self._db, self._lock,
            gather_s=gather_s, delta_gather_s=delta_gather_s, closing=closing,
        )  # fmt: skip
        self.queue = RunQueue(self.limits, self._lock, self._loop, self.writer)
        self.admission = RunAdmission(
            store, self.limits, self._lock,
            queue=self.queue, addresses=self._addresses, db=self._db, writer=self.writer,
            closing=closing,
        )  # fmt: skip
        self.unstored = UnstoredEnds(
            store, self._lock, self._db, self.writer, retry_every_s=heartbeat_s
        )
        self.following = RunFollowing(
            store, self._lock, self._db, live=self._live, unstored=self.unstored
        )
        self._thread = threading.Thread(target=self._serve, name="runs", daemon=True)
        self._thread.start()
        self._heartbeat = asyncio.run_coroutine_threadsafe(self._beat(), self._loop)
        # Done once the run path is warm (at once when not asked to warm it).
        self.warmed: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._warm_planners = warm_planners
        if warm_up:
            asyncio.run_coroutine_threadsafe(self._warm_up(), self._loop)
        else:
            self.warmed.set_result(None)

    # ------------------------------------------------------------------ the parts' API

    def admit(
        self, owner: str, count: int = 1, *, paid: bool = False, address: str = UNKNOWN
    ) -> Ticket:
        """Check the limits, reserve ``count`` runs (``RunAdmission.admit``; RunRefused)."""
        return self.admission.admit(owner, count, paid=paid, address=address)

    def release(self, ticket: Ticket) -> None:
        self.admission.release(ticket)

    def follow(
        self, run_ids: Sequence[str], after: int | dict[str, int] = 0
    ) -> AsyncIterator[ev.Event]:
        """Stored events, then live ones, until every run ended (``RunFollowing.follow``)."""
        return self.following.follow(run_ids, after)

    def unstored_end(self, run_id: str) -> ev.RunFailed | None:
        return self.unstored.unstored_end(run_id)

    def _is_closing(self) -> bool:
        return self._closing

    # ------------------------------------------------------------------ lifecycle

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def recover(self) -> list[str]:
        """At start-up: close this worker's runs left by an earlier life (a stable
        ``AUDIO_AGENT_WORKER_ID``), runs of no worker, and runs whose lease expired when
        their process is dead (``backend.runs.leases``: a paused one keeps them)."""
        closed = self.store.runs.mark_interrupted_runs(  # no lease is that old: own and unowned
            worker_id=self.worker_id, lease_s=leases.NEVER_S
        )
        return closed + leases.sweep(
            self.store,
            own_worker=self.worker_id,
            lease_s=self.lease_s,
            stall_s=self.stall_s,
            warned=self._silent_workers,
        )

    def close(self, timeout_s: float = 10.0) -> list[str]:
        """Shutdown: every live run ends as ``interrupted`` (its events kept); returns ids."""
        with self._lock:
            if self._closing:
                return []
            self._closing = True
            live = list(self._live.values())
        for run in live:
            self._cancel(run, "interrupted")

        async def settle() -> None:
            pending = [t for t in asyncio.all_tasks() if t.get_name().startswith("run:")]
            if pending:
                await asyncio.wait(pending, timeout=timeout_s)
            if self._beat_task is not None:
                self._beat_task.cancel()
                await asyncio.gather(self._beat_task, return_exceptions=True)
            if self.unstored:  # a last try; else the next start closes them (recover)
                await self._db.run(self.unstored.store_all)

        try:
            asyncio.run_coroutine_threadsafe(settle(), self._loop).result(timeout_s + 1)
        except Exception:  # noqa: BLE001 - closing anyway
            log.exception("runs did not settle at shutdown")
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._db.shutdown()
        return [r.run_id for r in live if r.ended_as == "interrupted"]

    async def _warm_up(self) -> None:
        """In the background at start-up, what the first run would otherwise pay for: the
        modules a run imports on first use, the configured planners with their SDK clients
        and the SDKs' first calls (``agent.sdk_warm_up``), both database threads with their
        connections and compiled statements (``Store.warm_up``, rolled back), and this
        loop's thread for the decoding a run starts at once."""
        try:
            from agent import sdk_warm_up
            from agent.strategies import all_strategies

            all_strategies()  # imports every strategy and what it uses
            if self._warm_planners is not None:
                await asyncio.to_thread(self._warm_planners)
            await asyncio.to_thread(sdk_warm_up.warm_up)
            await asyncio.gather(
                self._db.run(self.store.warm_up), self._db.run(self.store.runs.run_events, "")
            )
            await asyncio.to_thread(int)
        except Exception as exc:  # noqa: BLE001 - only an optimisation
            log.warning("warm-up of the run path failed: %s", faults.first_line(exc))
        finally:
            self.warmed.set_result(None)

    async def _beat(self) -> None:
        """Refresh this worker's leases; now and then close runs of dead processes."""
        self._beat_task = asyncio.current_task()
        sweep_every = max(1, int(self.lease_s / self.heartbeat_s / 2))
        for tick in itertools.count(1):
            await asyncio.sleep(self.heartbeat_s)
            try:
                if self.unstored:  # runs that ended here while storage failed
                    await self._db.run(self.unstored.store_all)
                if self._live or self.unstored:
                    await self._db.run(self.store.runs.heartbeat, self.worker_id)
                if tick % sweep_every == 0:
                    closed = await self._db.run(
                        leases.sweep,
                        self.store,
                        own_worker=self.worker_id,
                        lease_s=self.lease_s,
                        stall_s=self.stall_s,
                        warned=self._silent_workers,
                    )
                    if closed:
                        log.warning("marked %d run(s) of a dead process interrupted", len(closed))
            except Exception as exc:  # noqa: BLE001 - the next beat tries again
                log.warning("run heartbeat failed: %s", faults.first_line(exc))

    # ------------------------------------------------------------------ starting and stopping

    def start(
        self,
        requests: Sequence[RunRequest],
        *,
        owner: str,
        ticket: Ticket | None = None,
        on_end: Callable[[list[RunInfo]], None] | None = None,
    ) -> list[str]:
        """Start prepared runs (already created in the store) in the background; returns at
        once with their ids. ``on_end`` runs (in a worker thread) once all of them ended,
        unless the server is shutting down, before their followers see the end."""
        group = RunGroup([r.run_id for r in requests], on_end, left=len(requests))
        address = ticket.address if ticket is not None else UNKNOWN
        lives = []
        with self._lock:
            if self._closing:
                raise RunRefused("The server is shutting down; try again in a moment.", 5)
            if ticket is not None:
                self.admission.release(ticket)
            for request in requests:
                live = LiveRun(request, owner, group, address)
                self._addresses.add(address)
                self.queue.starts()
                if self.limits.owner_daily_usd is not None:
                    request.spend_check = lambda live=live: self.admission.spend_refusal(live)
                self._live[live.run_id] = live
                lives.append(live)
        for live in lives:
            asyncio.run_coroutine_threadsafe(self._launch(live), self._loop)
        return group.run_ids

    async def _launch(self, live: LiveRun) -> None:
        asyncio.current_task().set_name(f"run:{live.run_id}")  # type: ignore[union-attr]
        await self._supervise(live)

    def stop(self, run_id: str) -> bool:
        """Stop a live run of this process (status ``cancelled``); False if it is not live
        here (finished, unknown, or running in another process). A run that ended here
        while its end could not be stored has it stored now (``backend.runs.unstored_ends``;
        the storage's error if it still fails)."""
        with self._lock:
            live = self._live.get(run_id)
        if live is None:
            return self.unstored.stop(run_id)
        self._cancel(live, "cancelled")
        return True

    def _cancel(self, live: LiveRun, reason: str) -> None:
        def cancel() -> None:
            if live.stop_reason is None:
                live.stop_reason = reason
            if live.inner is not None and not live.inner.done():
                live.inner.cancel()

        self._loop.call_soon_threadsafe(cancel)

    def is_live(self, run_id: str) -> bool:
        return run_id in self._live

    # ------------------------------------------------------------------ the run task

    async def _supervise(self, live: LiveRun) -> None:
        started = time.monotonic()
        failure: tuple[str, str] | None = None
        live.inner = asyncio.create_task(self._drive(live))
        try:
            await live.inner
        except asyncio.CancelledError:
            reason = live.stop_reason or "interrupted"
            failure = (
                ("cancelled", STOPPED_MESSAGE)
                if reason == "cancelled"
                else ("interrupted", INTERRUPTED_ERROR)
            )
        except Exception as exc:  # a bug outside the loop's own error handling
            log.exception("run %s failed", live.run_id)
            failure = ("internal_error", f"{type(exc).__name__}: {exc}")
        finally:
            self.queue.leave_queue(live)
        if not live.terminal and not live.closed_elsewhere and live.write_error is None:
            live.ended_as = failure[0] if failure else "internal_error"
            self.writer.add(
                live,
                ev.RunFailed(
                    run_id=live.run_id,
                    seq=live.last_seq + 1,
                    kind=failure[0] if failure else "internal_error",
                    message=failure[1] if failure else "The run ended without its last event.",
                ),
            )
        await self.writer.drain(live)
        if live.write_error is not None and not live.closed_elsewhere:
            # Not "interrupted", and not what was not stored: it ends with the fault.
            await self.unstored.end(live)
        self.admission.ran(time.monotonic() - started)
        await self._end(live)

    async def _drive(self, live: LiveRun) -> None:
        await self.queue.acquire_slot(live)
        try:
            live.request.first_seq = live.last_seq + 1
            # Each owner's runs read and write only their own cached tool results.
            for_owner = getattr(self.cache, "for_owner", None)
            cache = for_owner(live.owner) if for_owner is not None else self.cache
            events = run_question(
                live.request, store=self.audio, cache=cache, similarity=self.similarity
            )
            try:
                async for event in events:
                    self.writer.add(live, event)
                    if live.closed_elsewhere or live.write_error is not None:
                        break
            finally:
                await events.aclose()  # its finally blocks: running tools are cancelled
        finally:
            self.queue.release_slot()

    async def _end(self, live: LiveRun) -> None:
        group = live.group
        group.left -= 1
        if group.left == 0 and not group.finished and not self._closing:
            await self._db.run(self.writer.finish_group, group)  # not with its last batch
        with self._lock:
            self._live.pop(live.run_id, None)
            self._addresses.done(live.address)
            subscribers = list(live.subscribers)
        for sub in subscribers:
            sub.send(live.run_id, None)
