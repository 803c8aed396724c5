"""Runs owned by the server: started in the background, stored, then published to followers.

A run does not belong to the HTTP request or the page that asked for it. ``RunManager.start``
hands it to a task on the manager's own event loop (one thread per process), and the caller
follows it with ``RunManager.follow``: stored events after a seq first, then the live ones as
they are stored, until the run ends. A client that goes away stops following; the run goes
on. Only ``stop`` (status ``cancelled``) or the server's shutdown (``interrupted``) end a run
early, each recorded as what it was.

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
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agent import events as ev
from agent.answer import Similarity
from agent.audio import AudioStore
from agent.context import RunRequest
from agent.run import run_question
from agent.tools.base import ToolCache
from backend import faults, leases
from backend.clients import UNKNOWN
from backend.fairness import AddressShare, queue_position
from storage import Store
from storage.repo import INTERRUPTED_ERROR
from storage.schemas import RunInfo

log = logging.getLogger("audio_agent.runs")

STOPPED_MESSAGE = "The run was stopped before it finished."
FOLLOW_POLL_S = 0.25  # following a run of another process: how often to look for new events
# How long a batch of events gathers before it is written: fewer transactions and thread
# trips per run (a fast model's whole run can be one batch), for at most this much later on
# the page. A run's last event does not wait.
GATHER_S = 0.02
# Text deltas alone gather longer: a model streaming from this machine's own cores sends a
# token every few tens of milliseconds, each of which would otherwise be a write of its own
# (about 2 ms of CPU taken from the model). Any other event cuts the wait short, and so does
# the first delta of a stretch of text: a reply's first words show as soon as they come.
DELTA_GATHER_S = 0.1


def default_max_running() -> int:
    """Concurrent runs per process: runs mostly wait on models and remote calls, and the
    model executor bounds the CPU work, so a few per core."""
    return max(4, 4 * (os.cpu_count() or 1))


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class RunLimits:
    """Admission limits; 0 or None turns a limit off."""

    max_running: int = field(default_factory=default_max_running)  # runs holding a slot
    max_queued: int = 64  # runs waiting for a slot before new ones get 429
    owner_runs_per_minute: int = 60
    owner_max_running: int = 8  # running or queued, per owner (a compare run counts each)
    owner_daily_usd: float | None = None  # remote spend per owner per UTC day
    address_runs_per_minute: int = 0  # per client address (limits that a cookie cannot dodge)
    address_max_running: int = 0  # running or queued per address: no address fills the queue


class RunRefused(Exception):
    """A question refused before anything was stored: HTTP 429 with Retry-After."""

    status = 429

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = max(1, math.ceil(retry_after_s))


@dataclass
class Ticket:
    """Slots reserved by ``admit`` until ``start`` (or ``release``) uses them."""

    owner: str
    count: int
    address: str = UNKNOWN
    used: bool = False


@dataclass(eq=False)
class _Subscriber:
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[tuple[str, list[ev.Event] | None]]

    def send(self, run_id: str, batch: list[ev.Event] | None) -> None:
        with contextlib.suppress(RuntimeError):  # the follower's loop is closed: it went away
            self.loop.call_soon_threadsafe(self.queue.put_nowait, (run_id, batch))


@dataclass
class _Group:
    run_ids: list[str]
    on_end: Callable[[list[RunInfo]], None] | None
    left: int = 0
    finished: bool = False  # on_end has run (or is no longer to run)


class _LiveRun:
    """One run in this process: its task, its unwritten events and its followers."""

    def __init__(self, request: RunRequest, owner: str, group: _Group, address: str) -> None:
        self.request = request
        self.owner = owner
        self.address = address
        self.group = group
        self.run_id = request.run_id
        self.last_seq = 0  # of the last event produced
        self.stored_seq = 0  # of the last event committed (and published)
        self.pending: list[ev.Event] = []
        # Every event of the run stored so far, in order: a follower that joins while the
        # run is live here reads them from memory instead of the database.
        self.stored: list[ev.Event] = []
        self.flusher: asyncio.Task[None] | None = None
        self.inner: asyncio.Task[None] | None = None
        self.stop_reason: str | None = None  # "cancelled" (Stop) or "interrupted" (shutdown)
        self.closed_elsewhere = False
        self.write_error: BaseException | None = None
        self.ended_as: str | None = None  # the kind of the run_failed the manager added
        self.slot: asyncio.Future[None] | None = None  # set while waiting in the queue
        self.position = 0  # in the queue, as last announced
        self.rank = 0  # runs of its address waiting ahead of it when it joined the queue
        self.subscribers: set[_Subscriber] = set()
        self.ending = asyncio.Event()  # set by the run's last event: stop gathering
        # set by any event but a text delta, and by the first delta after one: gather no longer
        self.urgent = asyncio.Event()
        self.last_type = ""  # of the last event produced

    @property
    def terminal(self) -> bool:
        """The run's last event has been added here (or read back from another process)."""
        return self.ending.is_set()


class RunManager:
    """Runs of this process; see the module docstring."""

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
        self.gather_s = gather_s
        self.delta_gather_s = delta_gather_s
        self._lock = threading.RLock()
        self._live: dict[str, _LiveRun] = {}
        self._waiting: list[_LiveRun] = []
        self._running = 0
        self._reserved = 0  # admitted, not yet started
        self._starting = 0  # started, not yet holding a slot or waiting
        self._beat_task: asyncio.Task[None] | None = None
        self._owner_reserved: dict[str, int] = {}
        self._addresses = AddressShare(  # per client address (backend.fairness)
            self.limits.address_max_running, self.limits.address_runs_per_minute
        )
        self._silent_workers: set[str] = set()  # alive but without a beat (warned once)
        self._recent_walls: list[float] = []
        self._closing = False
        # Database writes get their own threads: they never wait behind model calls.
        self._db = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="runs-db")
        self._loop = asyncio.new_event_loop()
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

    # ------------------------------------------------------------------ lifecycle

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def recover(self) -> list[str]:
        """At start-up: close this worker's runs left by an earlier life (a stable
        ``AUDIO_AGENT_WORKER_ID``), runs of no worker, and runs whose lease expired when
        their process is dead (``backend.leases``: a paused one keeps them)."""
        closed = self.store.mark_interrupted_runs(  # no lease is that old: own and unowned
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

        try:
            asyncio.run_coroutine_threadsafe(settle(), self._loop).result(timeout_s + 1)
        except Exception:  # noqa: BLE001 - closing anyway
            log.exception("runs did not settle at shutdown")
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._db.shutdown(wait=True)
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
                self._in_db(self.store.warm_up), self._in_db(self.store.run_events, "")
            )
            await asyncio.to_thread(int)
        except Exception as exc:  # noqa: BLE001 - only an optimisation
            log.warning("warm-up of the run path failed: %s", str(exc).splitlines()[0][:200])
        finally:
            self.warmed.set_result(None)

    async def _beat(self) -> None:
        """Refresh this worker's leases; now and then close runs of dead processes."""
        self._beat_task = asyncio.current_task()
        sweep_every = max(1, int(self.lease_s / self.heartbeat_s / 2))
        for tick in itertools.count(1):
            await asyncio.sleep(self.heartbeat_s)
            try:
                if self._live:
                    await self._in_db(self.store.heartbeat, self.worker_id)
                if tick % sweep_every == 0:
                    closed = await self._in_db(
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
                log.warning("run heartbeat failed: %s", str(exc).splitlines()[0][:200])

    async def _in_db(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await self._loop.run_in_executor(self._db, lambda: fn(*args, **kwargs))

    # ------------------------------------------------------------------ admission

    def admit(
        self, owner: str, count: int = 1, *, paid: bool = False, address: str = UNKNOWN
    ) -> Ticket:
        """Check the limits before a question is stored; reserve ``count`` runs.

        Raises ``RunRefused`` (429 + Retry-After) when the queue is full or the owner or
        the client ``address`` is over a limit. ``paid``: the runs use a priced remote
        planner (refused when the owner's daily spend is used up)."""
        limits = self.limits
        with self._lock:
            if self._closing:
                raise RunRefused("The server is shutting down; try again in a moment.", 5)
            waiting = len(self._waiting)
            wanted = self._running + waiting + self._starting + self._reserved + count
            if (
                limits.max_queued
                and limits.max_running
                and wanted - limits.max_running > limits.max_queued
            ):
                raise RunRefused(
                    f"The server is busy: {self._running} runs are running and {waiting} are "
                    "waiting. Try again shortly.",
                    self._retry_estimate(waiting),
                )
            refused = self._addresses.refusal(address, count)
            if refused is not None:
                raise RunRefused(refused[0], refused[1] or self._retry_estimate(0))
            now = datetime.now(UTC)
            day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
            activity = self.store.owner_activity(owner, now - timedelta(minutes=1), day_start)
            reserved = self._owner_reserved.get(owner, 0)
            per_minute = limits.owner_runs_per_minute
            if per_minute and activity.runs_recent + reserved + count > per_minute:
                wait = 60.0
                if activity.oldest_recent is not None:
                    wait = 60 - (now - activity.oldest_recent).total_seconds()
                raise RunRefused(
                    f"Too many questions: at most {per_minute} runs per minute "
                    f"({activity.runs_recent} in the last minute).",
                    wait,
                )
            most = limits.owner_max_running
            if most and activity.running + reserved + count > most:
                raise RunRefused(
                    f"You have {activity.running} runs going; at most {most} at once. Wait for "
                    "one to finish or stop it.",
                    self._retry_estimate(0),
                )
            usd = limits.owner_daily_usd
            if paid and usd is not None and activity.spent_today_usd >= usd:
                raise RunRefused(
                    spend_message(usd, activity.spent_today_usd),
                    (day_start + timedelta(days=1) - now).total_seconds(),
                )
            self._reserved += count
            self._owner_reserved[owner] = reserved + count
            self._addresses.add(address, count, admitted=True)
        return Ticket(owner, count, address)

    def release(self, ticket: Ticket) -> None:
        """Give back what ``admit`` reserved (the question was not started after all)."""
        with self._lock:
            if ticket.used:
                return
            ticket.used = True
            self._reserved -= ticket.count
            self._addresses.done(ticket.address, ticket.count)
            left = self._owner_reserved.get(ticket.owner, 0) - ticket.count
            if left > 0:
                self._owner_reserved[ticket.owner] = left
            else:
                self._owner_reserved.pop(ticket.owner, None)

    def _retry_estimate(self, ahead: int) -> float:
        walls = self._recent_walls[-20:]
        typical = sum(walls) / len(walls) if walls else 5.0
        return min(300.0, max(1.0, typical * (1 + ahead / max(1, self.limits.max_running))))

    async def _spend_refusal(self, live: _LiveRun) -> str | None:
        usd = self.limits.owner_daily_usd
        if usd is None:
            return None
        await self._drain(live)  # this run's own latest costs count too
        now = datetime.now(UTC)
        day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
        activity = await self._in_db(self.store.owner_activity, live.owner, now, day_start)
        if activity.spent_today_usd >= usd:
            return spend_message(usd, activity.spent_today_usd)
        return None

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
        group = _Group([r.run_id for r in requests], on_end, left=len(requests))
        address = ticket.address if ticket is not None else UNKNOWN
        lives = []
        with self._lock:
            if self._closing:
                raise RunRefused("The server is shutting down; try again in a moment.", 5)
            if ticket is not None:
                self.release(ticket)
            for request in requests:
                live = _LiveRun(request, owner, group, address)
                self._addresses.add(address)
                self._starting += 1
                if self.limits.owner_daily_usd is not None:
                    request.spend_check = lambda live=live: self._spend_refusal(live)
                self._live[live.run_id] = live
                lives.append(live)
        for live in lives:
            asyncio.run_coroutine_threadsafe(self._launch(live), self._loop)
        return group.run_ids

    async def _launch(self, live: _LiveRun) -> None:
        asyncio.current_task().set_name(f"run:{live.run_id}")  # type: ignore[union-attr]
        await self._supervise(live)

    def stop(self, run_id: str) -> bool:
        """Stop a live run of this process (status ``cancelled``); False if it is not live
        here (finished, unknown, or running in another process)."""
        with self._lock:
            live = self._live.get(run_id)
        if live is None:
            return False
        self._cancel(live, "cancelled")
        return True

    def _cancel(self, live: _LiveRun, reason: str) -> None:
        def cancel() -> None:
            if live.stop_reason is None:
                live.stop_reason = reason
            if live.inner is not None and not live.inner.done():
                live.inner.cancel()

        self._loop.call_soon_threadsafe(cancel)

    def is_live(self, run_id: str) -> bool:
        return run_id in self._live

    # ------------------------------------------------------------------ the run task

    async def _supervise(self, live: _LiveRun) -> None:
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
            self._leave_queue(live)
        if live.write_error is not None:  # not "interrupted": nothing more can be stored
            fault = faults.describe(live.write_error)
            failure = (fault.kind, fault.message)
        if not live.terminal and not live.closed_elsewhere:
            live.ended_as = failure[0] if failure else "internal_error"
            self._add(
                live,
                ev.RunFailed(
                    run_id=live.run_id,
                    seq=live.last_seq + 1,
                    kind=failure[0] if failure else "internal_error",
                    message=failure[1] if failure else "The run ended without its last event.",
                ),
            )
        await self._drain(live)
        self._recent_walls = [*self._recent_walls[-19:], time.monotonic() - started]
        await self._end(live)

    async def _drive(self, live: _LiveRun) -> None:
        await self._acquire_slot(live)
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
                    self._add(live, event)
                    if live.closed_elsewhere or live.write_error is not None:
                        break
            finally:
                await events.aclose()  # its finally blocks: running tools are cancelled
        finally:
            self._release_slot()

    async def _end(self, live: _LiveRun) -> None:
        group = live.group
        group.left -= 1
        if group.left == 0 and not group.finished and not self._closing:
            await self._in_db(self._finish_group, group)  # not with its last batch
        with self._lock:
            self._live.pop(live.run_id, None)
            self._addresses.done(live.address)
            subscribers = list(live.subscribers)
        for sub in subscribers:
            sub.send(live.run_id, None)

    def _finish_group(self, group: _Group, known: dict[str, RunInfo] | None = None) -> None:
        """``on_end`` of a group whose runs have all ended (in a database thread), with the
        runs as stored (``known``: those just written). Its failure is logged: the runs
        themselves are stored."""
        group.finished = True
        if group.on_end is None:
            return
        known = known or {}
        try:
            infos = [known.get(r) or self.store.get_run(r) for r in group.run_ids]
            group.on_end([i for i in infos if i is not None])
        except Exception:  # noqa: BLE001
            log.exception("after runs %s", ", ".join(group.run_ids))

    # ------------------------------------------------------------------ the queue

    async def _acquire_slot(self, live: _LiveRun) -> None:
        most = self.limits.max_running
        with self._lock:
            self._starting -= 1
            if not most or (self._running < most and not self._waiting):
                self._running += 1
                return
            live.slot = self._loop.create_future()
            self._join_queue(live)
        self._announce_queue()
        try:
            await live.slot
        except asyncio.CancelledError:
            if live.slot.done() and not live.slot.cancelled():
                self._release_slot()  # granted as we were cancelled: give it back
            raise
        finally:
            live.slot = None

    def _join_queue(self, live: _LiveRun) -> None:
        """Take turns between addresses (``backend.fairness.queue_position``)."""
        index, live.rank = queue_position(self._waiting, live.address)
        self._waiting.insert(index, live)

    def _leave_queue(self, live: _LiveRun) -> None:
        if live in self._waiting:
            self._waiting.remove(live)
            self._announce_queue()

    def _release_slot(self) -> None:
        self._running -= 1
        most = self.limits.max_running
        moved = False
        while self._waiting and (not most or self._running < most):
            nxt = self._waiting.pop(0)
            if nxt.slot is not None and not nxt.slot.done():
                self._running += 1
                nxt.slot.set_result(None)
                moved = True
        if moved:
            self._announce_queue()

    def _announce_queue(self) -> None:
        for index, live in enumerate(self._waiting):
            if live.position == index + 1:
                continue
            live.position = index + 1
            self._add(
                live,
                ev.Queued(
                    run_id=live.run_id,
                    seq=live.last_seq + 1,
                    position=index + 1,
                    ahead=index,
                    running=self._running,
                ),
            )

    # ------------------------------------------------------------------ writing, publishing

    def _add(self, live: _LiveRun, event: ev.Event) -> None:
        """Queue an event for the next batch; a batch is written while the next gathers."""
        live.last_seq = event.seq
        if event.type in ev.TERMINAL_TYPES:
            live.ending.set()
        if event.type != "planner_delta" or live.last_type != "planner_delta":
            live.urgent.set()
        live.last_type = event.type
        live.pending.append(event)
        if live.flusher is None or live.flusher.done():
            live.flusher = self._loop.create_task(self._flush(live))

    async def _flush(self, live: _LiveRun) -> None:
        while live.pending and not live.closed_elsewhere:
            if self.gather_s and not live.terminal:
                await self._gather(live)
            live.urgent.clear()  # what comes next gathers afresh
            batch, live.pending = live.pending, []
            try:
                await self._in_db(self._write, live, batch)
            except LookupError as exc:  # RunClosedError, or its conversation was deleted
                # Another process closed it (its lease expired): stop, write nothing more,
                # and tell the followers how it ended (the other process stored that).
                log.warning("run %s stopped: %s", live.run_id, exc)
                live.closed_elsewhere = True
                live.pending.clear()
                if live.inner is not None:
                    live.inner.cancel()
                await self._publish_stored_end(live)
                return
            except Exception as exc:  # the database is gone or full: nothing is stored
                log.exception("storing events of run %s failed", live.run_id)
                live.write_error = exc
                if batch[-1].type in ev.TERMINAL_TYPES:
                    # The run's last word cannot be stored: its followers still hear it.
                    self._publish(live, [batch[-1]])
                    return
                live.pending.clear()
                if live.inner is not None:
                    live.inner.cancel()
                return

    async def _gather(self, live: _LiveRun) -> None:
        """Let a batch gather: ``gather_s``, or until the run's last event; then, while it
        holds only text deltas, up to ``delta_gather_s`` in all, or until another event."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.gather_s):
                await live.ending.wait()
        longer = self.delta_gather_s - self.gather_s
        if longer > 0 and not live.urgent.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(longer):
                    await live.urgent.wait()

    def _write(self, live: _LiveRun, batch: list[ev.Event]) -> None:
        """Store a batch and publish it, in a database thread: followers hear it without a
        trip back through the manager's loop. The last batch of the last run of a question
        to end also runs its group's ``on_end`` first, and then tells the followers that
        the run has ended (they need not wait for ``_end``)."""
        info = self.store.append_events(batch)
        live.stored_seq = batch[-1].seq
        group = live.group
        ended = batch[-1].type in ev.TERMINAL_TYPES
        if ended and group.left == 1 and not group.finished and not self._closing:
            self._finish_group(group, {live.run_id: info} if info is not None else {})
        self._publish(live, batch, ended=ended and group.finished)

    def _publish(self, live: _LiveRun, batch: list[ev.Event], ended: bool = False) -> None:
        with self._lock:  # kept and published in one step: see ``follow``
            live.stored.extend(batch)
            subscribers = list(live.subscribers)
        for sub in subscribers:
            sub.send(live.run_id, batch)
            if ended:
                sub.send(live.run_id, None)

    async def _publish_stored_end(self, live: _LiveRun) -> None:
        """The terminal event another process stored for this run, to its followers here."""
        try:
            stored = await self._in_db(self.store.run_events, live.run_id, live.stored_seq)
        except Exception:  # noqa: BLE001 - followers still see the stream end
            log.exception("reading how run %s ended failed", live.run_id)
            return
        ends = [e for e in stored if e.type in ev.TERMINAL_TYPES]
        if ends:
            live.ending.set()
            self._publish(live, ends[-1:])

    async def _drain(self, live: _LiveRun) -> None:
        while live.flusher is not None and not live.flusher.done():
            await asyncio.shield(live.flusher)
        if live.pending and not live.closed_elsewhere:  # e.g. the end after a failed write
            live.flusher = self._loop.create_task(self._flush(live))
            await asyncio.shield(live.flusher)

    # ------------------------------------------------------------------ following

    async def follow(
        self, run_ids: Sequence[str], after: int | dict[str, int] = 0
    ) -> AsyncIterator[ev.Event]:
        """Stored events after ``after`` (a seq, or a seq per run), then live ones as they
        are stored, until every run has ended. Call from any event loop; leaving the loop
        early (the client went away) only stops following."""
        run_ids = list(dict.fromkeys(run_ids))
        last = {r: (after.get(r, 0) if isinstance(after, dict) else after) for r in run_ids}
        loop = asyncio.get_running_loop()
        sub = _Subscriber(loop, asyncio.Queue())
        live_ids: set[str] = set()
        stored: dict[str, list[ev.Event]] = {}
        with self._lock:
            for run_id in run_ids:
                live = self._live.get(run_id)
                if live is not None:
                    # What is stored so far comes from memory; later batches are published
                    # to this follower (the two are taken in one step under the lock).
                    live.subscribers.add(sub)
                    live_ids.add(run_id)
                    stored[run_id] = [e for e in live.stored if e.seq > last[run_id]]
        try:
            ended: set[str] = set()
            elsewhere = [r for r in run_ids if r not in live_ids]
            if elsewhere:  # ended, or run by another process: from the database
                stored.update(
                    await loop.run_in_executor(
                        self._db,
                        lambda: {r: self.store.run_events(r, after=last[r]) for r in elsewhere},
                    )
                )
            for run_id in run_ids:
                for event in stored[run_id]:
                    last[run_id] = event.seq
                    yield event
                    if event.type in ev.TERMINAL_TYPES:
                        ended.add(run_id)
            # Runs neither live here nor ended: another process runs them; poll the store.
            polled = [r for r in run_ids if r not in live_ids and r not in ended]
            while len(ended) < len(run_ids):
                try:
                    if polled:
                        item = await asyncio.wait_for(sub.queue.get(), FOLLOW_POLL_S)
                    else:
                        item = await sub.queue.get()
                except TimeoutError:
                    for run_id in list(polled):
                        # The status before the events: a run's end (its status and its
                        # terminal event) is stored in one transaction, so events read after
                        # a status that is no longer "running" hold that end.
                        running = await self._still_running(run_id)
                        events = await loop.run_in_executor(
                            self._db, self.store.run_events, run_id, last[run_id]
                        )
                        for event in events:
                            last[run_id] = event.seq
                            yield event
                        if not running or any(e.type in ev.TERMINAL_TYPES for e in events):
                            ended.add(run_id)
                            polled.remove(run_id)
                    continue
                run_id, batch = item
                if batch is None:
                    ended.add(run_id)
                    continue
                for event in batch:
                    if event.seq > last[run_id]:
                        last[run_id] = event.seq
                        yield event
        finally:
            with self._lock:
                for run_id in live_ids:
                    live = self._live.get(run_id)
                    if live is not None:
                        live.subscribers.discard(sub)

    async def _still_running(self, run_id: str) -> bool:
        info = await asyncio.get_running_loop().run_in_executor(
            self._db, self.store.get_run, run_id
        )
        return info is not None and info.status == "running"


def spend_message(limit: float, spent: float) -> str:
    return (
        f"The daily limit of ${limit:.2f} for remote models is used up (${spent:.2f} spent "
        "today). Use the offline planner and tools, or come back after 00:00 UTC."
    )
