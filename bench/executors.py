"""Where the (question, configuration) runs execute; each yields outcomes as they finish.

- ``local`` (the default): a pool of ``concurrency`` worker processes on this machine, each
  with its own models. Workers die with the command (Linux: the parent-death signal), so a
  killed benchmark leaves nothing running that could still write.
- ``inline``: this process, ``concurrency`` runs at once on one event loop: cheapest for
  remote planners (one copy of everything), and what tests and debuggers want.
- ``ray``: ``concurrency`` actors on a Ray cluster (``--address auto`` joins the running one;
  none starts a local Ray). Every node needs this checkout and its environment at the same
  path, the audio at the same path, and the database reachable (PostgreSQL when the workers
  are on other machines: ``AUDIO_AGENT_DB_URL``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import queue
import signal
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

from agent.local_models.librosa_warm_up import compile_librosa_paths
from bench.plan import Task
from bench.scoring import RunFacts, Score
from bench.worker import BenchWorker, Outcome, WorkerEnv

REPO = Path(__file__).resolve().parent.parent
EXECUTORS = ("local", "inline", "ray")


class Executor(Protocol):
    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]: ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------- inline


class InlineExecutor:
    """Tasks on one event loop (its own thread, kept for the executor's life: clients of
    remote models stay on the loop they were made on), ``concurrency`` at once."""

    def __init__(self, worker: BenchWorker, concurrency: int = 1) -> None:
        self.worker = worker
        self.concurrency = max(1, concurrency)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        results: queue.Queue[Outcome | BaseException | None] = queue.Queue()
        todo = list(tasks)

        async def drive() -> None:
            gate = asyncio.Semaphore(self.concurrency)

            async def one(task: Task) -> None:
                async with gate:
                    try:
                        results.put(await self.worker.run_async(task))
                    except BaseException as exc:  # noqa: BLE001 - handed to the caller
                        results.put(exc)

            await asyncio.gather(*(one(t) for t in todo))

        done = asyncio.run_coroutine_threadsafe(drive(), self.loop)
        done.add_done_callback(lambda _: results.put(None))
        try:
            while (got := results.get()) is not None:
                if isinstance(got, BaseException):
                    raise got
                yield got
        finally:
            done.cancel()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.worker.close()


# ---------------------------------------------------------------------------- local processes

_WORKER: BenchWorker | None = None


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)


def _init_worker(env: WorkerEnv) -> None:
    global _WORKER
    _die_with_parent()
    # Workers start together: one at a time fills numba's on-disk cache (numba#10128).
    compile_librosa_paths()
    _WORKER = BenchWorker(env, running=4)


def _run_in_worker(task: Task) -> Outcome:
    assert _WORKER is not None
    return _WORKER.run(task)


class ProcessExecutor:
    """``concurrency`` worker processes (started fresh: nothing of this process is forked).

    A worker that dies (a crash in a model's native code) breaks the pool: a new pool takes
    the questions that were in flight, and a question in flight during two deaths is
    reported as crashed (``crashed_outcome``) instead of taking the benchmark down."""

    def __init__(self, env: WorkerEnv, concurrency: int = 1) -> None:
        self.env = env
        self.concurrency = max(1, concurrency)
        self.pool = self._pool()

    def _pool(self) -> concurrent.futures.ProcessPoolExecutor:
        return concurrent.futures.ProcessPoolExecutor(
            max_workers=self.concurrency,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self.env,),
        )

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        """At most ``concurrency`` tasks in flight, so a death blames only those running."""
        waiting = list(tasks)[::-1]
        deaths: dict[int, int] = {}
        running: dict[concurrent.futures.Future[Outcome], Task] = {}
        try:
            while waiting or running:
                while waiting and len(running) < self.concurrency:
                    task = waiting.pop()
                    running[self.pool.submit(_run_in_worker, task)] = task
                finished, _ = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED
                )
                broken = False
                for future in finished:
                    task = running.pop(future)
                    try:
                        yield future.result()
                    except concurrent.futures.process.BrokenProcessPool:
                        broken = True
                        deaths[task.result_id] = deaths.get(task.result_id, 0) + 1
                        if deaths[task.result_id] >= 2:
                            yield crashed_outcome(task)
                        else:
                            waiting.append(task)
                if broken:  # the others in flight died with it: they go again
                    for task in running.values():
                        deaths[task.result_id] = deaths.get(task.result_id, 0) + 1
                        waiting.append(task)
                    running.clear()
                    self.pool.shutdown(wait=False, cancel_futures=True)
                    self.pool = self._pool()
        finally:
            for future in running:
                future.cancel()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def crashed_outcome(task: Task) -> Outcome:
    """A question whose worker process died twice: wrong, with the reason (scored so)."""
    reason = "the worker process died on this question (a crash in native code)"
    choice = bool(task.item.choices)
    score = Score(
        task.item.kind, 0.0, correct=False, not_scored=None,
        token=False if choice and task.item.benchmark != "mmau-pro" else None,
        exact=False if choice else None,
        facts={**asdict(RunFacts(status="failed", failed=reason)), "crashed": True},
    ).public()  # fmt: skip
    return Outcome(task.result_id, None, score, error=reason)


# ---------------------------------------------------------------------------- Ray


class RayExecutor:
    """``concurrency`` Ray actors, each a ``BenchWorker``; tasks go to whichever is free."""

    def __init__(
        self,
        env: WorkerEnv,
        concurrency: int = 1,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        actor_cpus: float = 1.0,
    ) -> None:
        try:
            import ray
            from ray.util import ActorPool
        except ImportError as exc:
            raise SystemExit(
                "--executor ray needs Ray: pip install -r requirements-scale.txt"
            ) from exc
        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray reports nothing home
            path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
            local = {"num_cpus": num_cpus, "_node_ip_address": "127.0.0.1"} if not address else {}
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env={"env_vars": {"PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}},
                **local,
            )
        actor = ray.remote(num_cpus=actor_cpus)(_RayWorker)
        self.actors = [actor.remote(env) for _ in range(max(1, concurrency))]
        self.pool = ActorPool(self.actors)

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        yield from self.pool.map_unordered(lambda a, t: a.run.remote(t), list(tasks))

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started_here:
            self.ray.shutdown()


class _RayWorker:
    def __init__(self, env: WorkerEnv) -> None:
        self.worker = BenchWorker(env, running=4)

    def run(self, task: Task) -> Outcome:
        return self.worker.run(task)


def make_executor(
    kind: str,
    env: WorkerEnv,
    concurrency: int,
    *,
    inline_worker: BenchWorker | None = None,
    address: str | None = None,
    num_cpus: int | None = None,
) -> Any:
    if kind == "inline":
        return InlineExecutor(inline_worker or BenchWorker(env), concurrency)
    if kind == "local":
        return ProcessExecutor(env, concurrency)
    if kind == "ray":
        return RayExecutor(env, concurrency, address=address, num_cpus=num_cpus)
    raise ValueError(f"Unknown executor {kind!r}; one of {', '.join(EXECUTORS)}.")
