"""One tool call of a run, from request to result (``ToolCalls``, a part of
``agent.context.RunContext``): which tool and recording it names, the daily spend check, the
result prefetched or cached (a turn's lookups in one read), or joined while another run
computes it (``agent.inflight``), or run within its timeout, its failure told to the planner.
Apart from ``RunContext``, which decides which calls run and streams them as events."""

from __future__ import annotations

import asyncio
from typing import Any

from agent import events as ev
from agent import inflight
from agent.audio import AudioRef, AudioStore
from agent.local_models.executor import run_timed
from agent.planners.base import ToolCallRequest
from agent.prefetch import Prefetch
from agent.prompts import audio_alias
from agent.run_request import RunRequest, is_paid, tool_timeout
from agent.tools.base import Tool, ToolCache, ToolContext, ToolError, ToolResult, cache_key


class ToolCalls:
    """Running a run's tool calls one by one; ``RunContext`` sets the attributes below."""

    req: RunRequest
    store: AudioStore
    cache: ToolCache
    failed_tools: list[str]  # tools that raised or timed out (status degraded)
    _prefetched: Prefetch  # speculative calls, behind the planner
    _looked_up: dict[str, ToolResult | None]  # this turn's cache lookups (``_prime_cache``)

    async def spend_refusal(self, model: Any) -> str | None:
        """Why a paid call must not be made now (the daily spend is used up), else None."""
        if self.req.spend_check is None or not is_paid(model):
            return None
        return await self.req.spend_check()

    async def _call_tool(
        self, request: ToolCallRequest, tools: list[Tool], use_cache: bool
    ) -> tuple[ToolResult, bool]:
        if request.parse_error:
            return ToolResult(output="", error=request.parse_error), False
        tool = next((t for t in tools if t.name == request.name), None)
        if tool is None:
            names = ", ".join(t.name for t in tools) or "none"
            error = f"Unknown tool '{request.name}'. Available tools: {names}."
            return ToolResult(output="", error=error), False
        arguments = dict(request.arguments)
        alias = str(arguments.pop("audio_id", "") or audio_alias(0))
        audio = self._audio_for(alias)
        if audio is None:
            known = ", ".join(audio_alias(i) for i in range(len(self.req.audio)))
            known = known or "none (no audio was given)"
            error = f"Unknown audio id '{alias}'. Known ids: {known}."
            return ToolResult(output="", error=error), False
        prefetched = self._prefetched.claim(cache_key(audio.id, tool.name, arguments, tool.model))
        if prefetched is not None:  # started when the question arrived
            outcome = await prefetched
        else:
            refusal = await self.spend_refusal(tool)
            if refusal:
                return ToolResult(output="", error=f"{tool.name} not run: {refusal}"), False
            outcome = await self._fetch(tool, audio, arguments, tools, use_cache)
        if outcome[0].error:  # it ran (or the call it joined ran) and failed or timed out
            self.failed_tools.append(tool.name)
        return outcome

    def _audio_for(self, alias: str) -> AudioRef | None:
        return {audio_alias(i): a for i, a in enumerate(self.req.audio)}.get(alias)

    def _call_key(self, request: ToolCallRequest, tools: list[Tool]) -> str | None:
        """The cache key a valid call will use (None if it names no tool or audio)."""
        tool = next((t for t in tools if t.name == request.name), None)
        if tool is None or getattr(tool, "composite", False):
            return None
        arguments = dict(request.arguments)
        audio = self._audio_for(str(arguments.pop("audio_id", "") or audio_alias(0)))
        return cache_key(audio.id, tool.name, arguments, tool.model) if audio else None

    async def _prime_cache(self, requests: list[ToolCallRequest], tools: list[Tool]) -> None:
        """Look up a turn's calls in one read instead of one per call (the cache's
        ``get_many``; without it, each call asks on its own as before)."""
        get_many = getattr(self.cache, "get_many", None)
        keys = [k for r in requests if (k := self._call_key(r, tools)) is not None]
        keys = [k for k in keys if k not in self._prefetched]
        if get_many is None or len(keys) < 2:
            return
        peek = getattr(self.cache, "peek", None)
        found = {k: hit for k in keys if peek is not None and (hit := peek(k)) is not None}
        rest = [k for k in keys if k not in found]
        if rest and getattr(self.cache, "blocking", True):
            found.update(await asyncio.to_thread(get_many, rest))
        elif rest:
            found.update(get_many(rest))
        self._looked_up = {k: found.get(k) for k in keys}

    async def _fetch(
        self,
        tool: Tool,
        audio: AudioRef,
        arguments: dict[str, Any],
        tools: list[Tool],
        use_cache: bool,
    ) -> tuple[ToolResult, bool]:
        """From the cache, by joining the identical call already running, or by running it.

        The flag is True when this run did not pay for the result (cached or joined)."""
        key = cache_key(audio.id, tool.name, arguments, tool.model)
        # A composite tool's result depends on the tools it combines; its inner calls are
        # cached one by one instead.
        use_cache = use_cache and not getattr(tool, "composite", False)
        if use_cache:
            hit = await self._cache_get(key)
            if hit is not None:
                return hit, True
        return await inflight.CALLS.run(
            self._flight_key(key),
            lambda: self._execute(tool, audio, arguments, tools, key, use_cache),
        )

    async def _execute(
        self,
        tool: Tool,
        audio: AudioRef,
        arguments: dict[str, Any],
        tools: list[Tool],
        key: str,
        use_cache: bool,
    ) -> ToolResult:
        try:
            samples = self.store.cached_samples(audio)
            if samples is None:
                samples = await asyncio.to_thread(self.store.samples, audio)
            everything = {t.name: t for t in [*self.req.tools, *tools]}
            ctx = ToolContext(audio=audio, samples=samples, tools=everything)
            ctx.runner = lambda inner, args: self._cached(ctx, inner, args)
            # The timeout counts the tool's own execution, not its wait for a model worker;
            # a remote tool's is at least one call with its retries.
            result, _ = await run_timed(tool(ctx, arguments), tool_timeout(self.req, tool))
        except TimeoutError:
            timeout = tool_timeout(self.req, tool)
            result = ToolResult(output="", error=f"{tool.name} timed out after {timeout:.0f} s.")
        except ToolError as exc:
            result = ToolResult(output="", error=f"{tool.name}: {exc}")
        except Exception as exc:  # the tool's failure goes to the planner, never swallowed
            error = f"{tool.name} failed: {type(exc).__name__}: {exc}"
            result = ToolResult(output="", error=error)
        if result.model is None and tool.model:
            result = result.model_copy(update={"model": tool.model})
        if result.error is None and use_cache:
            await self._cache_put(key, tool.name, audio.id, result)
        return result

    def _flight_key(self, key: str) -> str:
        """Calls in flight are joined only within the cache's scope (one owner): joining
        another owner's call would tell, by its speed, that someone has the same recording."""
        scoped = getattr(self.cache, "scoped", None)
        return scoped(key) if scoped is not None else key

    async def _cache_get(self, key: str) -> ToolResult | None:
        if key in self._looked_up:  # read with the rest of this turn's calls
            return self._looked_up.pop(key)
        peek = getattr(self.cache, "peek", None)  # in memory: no thread, no database read
        if peek is not None and (hit := peek(key)) is not None:
            return hit
        if not getattr(self.cache, "blocking", True):
            return self.cache.get(key)
        return await asyncio.to_thread(self.cache.get, key)

    async def _cache_put(self, key: str, tool: str, audio_id: str, result: ToolResult) -> None:
        if not getattr(self.cache, "put_blocks", getattr(self.cache, "blocking", True)):
            self.cache.put(key, tool, audio_id, result)
        else:
            await asyncio.to_thread(self.cache.put, key, tool, audio_id, result)

    async def _cached(self, ctx: ToolContext, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        """A tool run inside another (caption, ask_audio) on the whole recording, cached."""
        key = cache_key(ctx.audio.id, tool.name, arguments, tool.model)
        hit = await self._cache_get(key)
        if hit is not None:  # paid for once already
            return hit.model_copy(update={"cost": 0.0, "usage": ev.Usage()})

        async def compute() -> ToolResult:
            result = await tool(ctx, arguments)
            if result.error is None:
                await self._cache_put(key, tool.name, ctx.audio.id, result)
            return result

        result, joined = await inflight.CALLS.run(self._flight_key(key), compute)
        if joined:  # another run paid for it
            return result.model_copy(update={"cost": 0.0, "usage": ev.Usage()})
        return result
