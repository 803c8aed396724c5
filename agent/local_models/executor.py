"""Where local models run: one bounded pool per process, sized to the machine.

Every local model call (whisper, Silero VAD, YAMNet, basic-pitch, the signal facts) goes
through ``run_model``. The pool is separate from asyncio's default thread pool, so database
writes, uploads and planner I/O never queue behind a model call.

Sizing: ``workers`` calls run at once (default: one per core) and each model is told to use
``threads_per_call`` threads (default: cores // workers), so concurrent calls never ask for
more threads than there are cores.

Threads or processes, by whether the model releases the GIL. CTranslate2 (whisper) and ONNX
Runtime (VAD, YAMNet, basic-pitch, embeddings) release it while they compute, so threads run
them in parallel and share one copy of each model. librosa's pYIN (a numba Viterbi pass) and
its tempo/key analysis hold it: in threads they stall the web server's interpreter and each
other. Functions marked ``@holds_gil`` therefore run in worker processes forked from a server
that has loaded and warmed them (``agent.local_models.worker_preload``); the calling model
thread waits for the result, so the queue, the bound and the tool clock are the same for both
kinds. Sizing: ``AUDIO_AGENT_MODEL_PROCESSES`` worker processes; 0 keeps everything in
threads. Default: cores // 2 from four cores up, none below. Measured on two cores
(bench/perf.py, bench/memory.py): four pitch analyses at once took 3.8x one in threads and
2.0x with two worker processes, but one worker raised the peak on a 300 s clip by 100-300 MB
(``refine`` past the 1.2 GB budget) and one worker alone gained nothing (3.9x); so below four
cores memory wins by default, and ``AUDIO_AGENT_MODEL_PROCESSES=2`` chooses the speed.
``AUDIO_AGENT_MODEL_WORKERS`` and ``AUDIO_AGENT_MODEL_THREADS`` override the
thread sizing (all read once, at the first call).

Jobs wait in a FIFO queue in front of the workers. A tool's timeout counts only the time its
jobs run, not their wait in the queue: the loop gives each tool call a ``ToolClock``
(``clock_scope``) and this module stops that clock while a job of the call is queued.
``queue_depth()`` tells how many jobs are waiting, for a "queued" state in the UI.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import functools
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("audio_agent.models")

WORKERS_ENV = "AUDIO_AGENT_MODEL_WORKERS"
THREADS_ENV = "AUDIO_AGENT_MODEL_THREADS"
PROCESSES_ENV = "AUDIO_AGENT_MODEL_PROCESSES"
# What the worker processes' fork server imports once (shared by every worker it forks).
PRELOAD = ["__main__", "agent.local_models.worker_preload"]


def holds_gil(fn: Callable[..., T]) -> Callable[..., T]:
    """Mark a module-level model function that holds the GIL while it computes: the
    executor runs it in a worker process (see the module doc). Its arguments and result
    must pickle (numpy arrays, dataclasses)."""
    fn.holds_gil = True  # type: ignore[attr-defined]
    return fn


def _marked(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        if getattr(fn, "holds_gil", False):
            return True
        fn = fn.func
    return bool(getattr(fn, "holds_gil", False))


def process_count(cores: int | None = None) -> int:
    """Worker processes for GIL-bound models: ``AUDIO_AGENT_MODEL_PROCESSES`` if set (0 = none,
    threads only), else cores // 2 from four cores up, else none (see the module doc)."""
    value = env_int(PROCESSES_ENV, minimum=0)
    if value is not None:
        return value
    cores = cores or cpu_count()
    return cores // 2 if cores >= 4 else 0


def _init_worker_process(threads: int) -> None:
    """In each worker process: the same per-call thread budget, and no processes of its own."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[name] = str(threads)
    os.environ[PROCESSES_ENV] = "0"


def cpu_count() -> int:
    """Cores this process may use (the affinity mask, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Sizing:
    workers: int  # model calls that run at once
    threads_per_call: int  # intra-op threads each model uses


def env_int(name: str, minimum: int = 1) -> int | None:
    """A whole-number setting from the environment (None when unset); a clear error when it
    is not one or is below ``minimum``."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name}={raw!r} is not a whole number.") from exc
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum} (got {value}).")
    return value


def sizing(cores: int | None = None) -> Sizing:
    """How many calls at once and how many threads each, so the product fits the cores."""
    cores = cores or cpu_count()
    workers = env_int(WORKERS_ENV) or cores
    threads = env_int(THREADS_ENV) or max(1, cores // workers)
    return Sizing(workers=workers, threads_per_call=threads)


class ToolClock:
    """Execution time of one tool call: wall time minus the time its jobs sat in the queue.

    Thread-safe: workers mark the start of a job from their own thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self._queued_s = 0.0
        self._waiting = 0  # this call's jobs now in the queue
        self._waiting_since = 0.0

    def enter_queue(self) -> None:
        with self._lock:
            if self._waiting == 0:
                self._waiting_since = time.monotonic()
            self._waiting += 1

    def leave_queue(self) -> None:
        with self._lock:
            self._waiting -= 1
            if self._waiting == 0:
                self._queued_s += time.monotonic() - self._waiting_since

    @property
    def queued_s(self) -> float:
        with self._lock:
            extra = time.monotonic() - self._waiting_since if self._waiting else 0.0
            return self._queued_s + extra

    @property
    def waiting(self) -> bool:
        with self._lock:
            return self._waiting > 0

    def running_s(self) -> float:
        """Seconds this call has spent running (not queued) so far."""
        return time.monotonic() - self.started - self.queued_s


_CLOCK: contextvars.ContextVar[ToolClock | None] = contextvars.ContextVar(
    "audio_agent_tool_clock", default=None
)


async def run_timed(awaitable: Awaitable[T], timeout_s: float) -> tuple[T, ToolClock]:
    """Await a tool call with a timeout on its execution time only.

    Raises ``TimeoutError`` once the call has *run* (outside the model queue) for
    ``timeout_s`` seconds; time its jobs spend queued does not count. The call is
    cancelled then (its queued jobs never start).
    """
    clock = ToolClock()
    context = contextvars.copy_context()
    context.run(_CLOCK.set, clock)
    task = asyncio.get_running_loop().create_task(_as_coro(awaitable), context=context)
    try:
        while True:
            remaining = timeout_s - clock.running_s()
            if remaining <= 0 and not clock.waiting:
                raise TimeoutError
            # While a job is queued the clock is stopped: look again after the time left.
            done, _ = await asyncio.wait({task}, timeout=max(remaining, 0.05))
            if done:
                return task.result(), clock
    finally:
        if not task.done():
            task.cancel()
            # Let the call see its cancellation (queued jobs are withdrawn).
            await asyncio.gather(task, return_exceptions=True)


async def _as_coro(awaitable: Awaitable[T]) -> T:
    return await awaitable


class ModelExecutor:
    """A bounded FIFO pool for model calls, with its queue depth visible."""

    def __init__(self, workers: int, threads_per_call: int = 1, *, processes: int = 0) -> None:
        self.workers = workers
        self.threads_per_call = threads_per_call
        self.processes = processes  # worker processes for GIL-bound functions (0: threads)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="model"
        )
        self._process_pool: concurrent.futures.ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._queued = 0
        self._running = 0
        self._peak_running = 0
        self.calls = 0  # jobs started, for tests and the bench

    @property
    def queued(self) -> int:
        """Jobs waiting for a worker."""
        return self._queued

    @property
    def running(self) -> int:
        return self._running

    @property
    def peak_running(self) -> int:
        """Most jobs ever running at once (never above ``workers``)."""
        return self._peak_running

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on a model worker; cancelling withdraws a queued job."""
        clock = _CLOCK.get()
        state = {"started": False}
        with self._lock:
            self._queued += 1
        if clock is not None:
            clock.enter_queue()

        def leave_queue() -> None:  # exactly once: when the job starts or is withdrawn
            with self._lock:
                if state["started"]:
                    return
                state["started"] = True
                self._queued -= 1
            if clock is not None:
                clock.leave_queue()

        def job() -> T:
            leave_queue()
            with self._lock:
                self._running += 1
                self.calls += 1
                self._peak_running = max(self._peak_running, self._running)
            try:
                if self.processes and _marked(fn):
                    return self._in_process(fn, *args, **kwargs)
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self._running -= 1

        future = self._pool.submit(job)
        future.add_done_callback(lambda f: leave_queue() if f.cancelled() else None)
        return await asyncio.wrap_future(future)

    def _in_process(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn`` in a worker process; in this thread if the workers cannot run (a script
        without the ``if __name__ == "__main__"`` guard, a worker killed): logged once, and
        the executor stays with threads from then on."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            return self.process_pool().submit(fn, *args, **kwargs).result()
        except BrokenProcessPool as exc:
            if self.processes:
                self.processes = 0
                log.warning(
                    "model worker processes failed (%s); GIL-bound models run in threads", exc
                )
            return fn(*args, **kwargs)

    def process_pool(self) -> concurrent.futures.ProcessPoolExecutor:
        """The worker processes (started at the first call). A pool broken by a worker that
        died (killed, out of memory) is replaced: that call fails, the next one runs."""
        import multiprocessing

        with self._lock:
            pool = self._process_pool
            if pool is not None and getattr(pool, "_broken", False):
                pool.shutdown(wait=False, cancel_futures=True)
                pool = None
            if pool is None:
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(PRELOAD)
                pool = concurrent.futures.ProcessPoolExecutor(
                    max_workers=self.processes,
                    mp_context=context,
                    initializer=_init_worker_process,
                    initargs=(self.threads_per_call,),
                )
                self._process_pool = pool
                atexit.register(pool.shutdown, wait=True, cancel_futures=True)
            return pool

    def warm_processes(self, warm_ups: list[Callable[[], Any]]) -> None:
        """Start the worker processes and run each warm-up in them (numba compiles per
        process); does nothing when GIL-bound models run in threads."""
        if not self.processes:
            return
        from concurrent.futures.process import BrokenProcessPool

        pool = self.process_pool()
        try:
            futures = [pool.submit(w) for w in warm_ups for _ in range(self.processes)]
            for future in futures:
                future.result()
        except BrokenProcessPool as exc:
            self.processes = 0
            log.warning("model worker processes failed (%s); GIL-bound models run in threads", exc)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._process_pool is not None:
            self._process_pool.shutdown(wait=False, cancel_futures=True)


_EXECUTOR: ModelExecutor | None = None
_EXECUTOR_LOCK = threading.Lock()


def get_executor() -> ModelExecutor:
    """The process-wide model executor (created at first use)."""
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            size = sizing()
            _EXECUTOR = ModelExecutor(
                size.workers, size.threads_per_call, processes=process_count()
            )
        return _EXECUTOR


def set_executor(executor: ModelExecutor | None) -> ModelExecutor | None:
    """Replace the process-wide executor (tests, the bench); returns the previous one."""
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        previous, _EXECUTOR = _EXECUTOR, executor
        return previous


def threads_per_call() -> int:
    """Intra-op threads for a model session (ONNX Runtime, CTranslate2)."""
    return get_executor().threads_per_call


def model_workers() -> int:
    """Calls that may use one model at once (CTranslate2's ``num_workers``)."""
    return get_executor().workers


def queue_depth() -> int:
    """Model jobs now waiting for a worker (0 when the executor is idle)."""
    return _EXECUTOR.queued if _EXECUTOR is not None else 0


async def run_model(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run a model function on the model executor (never on asyncio's default pool)."""
    return await get_executor().run(functools.partial(fn, *args, **kwargs))
