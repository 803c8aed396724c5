"""The orchestration loop: one question, one planner, one set of tools -> a stream of events.

``run_question`` emits ``run_started``, hands a ``RunContext`` (``agent.context``: the
machinery every strategy shares) to the chosen strategy (``agent.strategies``), and closes
with ``run_finished`` or ``run_failed``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from agent import events as ev
from agent.answer import Similarity
from agent.audio import AudioStore
from agent.context import RunContext, RunRequest
from agent.planners.base import PlannerError
from agent.strategies import default_strategy, get_strategy
from agent.tools.base import MemoryToolCache, ToolCache

__all__ = ["RunRequest", "run_question"]  # the request is part of this module's API


async def run_question(
    req: RunRequest,
    *,
    store: AudioStore,
    cache: ToolCache | None = None,
    similarity: Similarity | None = None,
) -> AsyncIterator[ev.Event]:
    """Answer one question; yields every event of the run, ending with finished or failed."""
    req.strategy = req.strategy or default_strategy()  # the run's events name the one used
    try:
        strategy = get_strategy(req.strategy)
    except KeyError as exc:
        ctx = RunContext(req, store=store, cache=MemoryToolCache(), similarity=None, budget=0)
        yield ctx.emit(ev.RunFailed, kind="bad_request", message=str(exc.args[0]))
        return
    budget = req.budget if req.budget is not None else strategy.default_budget
    ctx = RunContext(
        req,
        store=store,
        cache=cache if cache is not None else MemoryToolCache(),
        similarity=similarity,
        budget=budget,
    )
    yield ctx.emit(
        ev.RunStarted,
        question=req.question,
        choices=list(req.choices),
        audio_ids=[a.id for a in req.audio],
        planner=req.planner.name,
        planner_label=req.planner.label,
        tools=[t.name for t in req.tools],
        strategy=strategy.name,
        settings={"budget": budget, "model": req.planner.model},
    )
    ctx.prefetch()
    try:
        async for event in strategy.run(ctx):
            yield event
        if ctx.answer is None:
            raise PlannerError("The strategy ended without an answer.", kind="no_answer")
        yield ctx.emit(
            ev.RunFinished,
            calls=ctx.totals.calls,
            input_tokens=ctx.totals.usage.input_tokens,
            output_tokens=ctx.totals.usage.output_tokens,
            cache_read_tokens=ctx.totals.usage.cache_read_tokens,
            cost=round(ctx.totals.cost, 6),
            wall_s=round(time.monotonic() - ctx.started, 3),
            # a tool failed or timed out: the answer may lack its evidence, never "ok"
            status="degraded" if ctx.failed_tools else "forced" if ctx.answer.forced else "ok",
            degraded_tools=list(dict.fromkeys(ctx.failed_tools)),
            tokens_reported=ctx.totals.usage.reported,
        )
    except PlannerError as exc:
        yield ctx.emit(ev.RunFailed, kind=exc.kind, message=str(exc))
    except Exception as exc:  # a bug or an unexpected planner failure: report, do not hide
        yield ctx.emit(ev.RunFailed, kind="internal_error", message=f"{type(exc).__name__}: {exc}")
    finally:
        ctx.close()
