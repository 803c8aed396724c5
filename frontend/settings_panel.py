"""Handlers of the settings drawer and the compare pickers: the planner's note, presets and
hand-picked planners and tools kept in step, the strategy's line, the tab that decides what
the send button does, and Check models."""

from __future__ import annotations

from typing import Any

import gradio as gr

from frontend.asking import send_label
from frontend.catalogue import checks_markdown, planner_note, strategy_info
from frontend.context import PageContext


class SettingsHandlers:
    def __init__(self, ctx: PageContext) -> None:
        self.ctx = ctx
        self.catalogue = ctx.catalogue

    async def check_models(self) -> str:
        """Check models: the doctor's checks as a list (shared by every visitor and repeated
        at most every few minutes: each check is a small paid call)."""
        service = self.ctx.service
        return checks_markdown(await service.model_checks.get(service.registry))

    def on_planner(self, name: str | None) -> str:
        return planner_note(self.catalogue.planners.get(name or ""))

    def on_strategy(self, name: str | None) -> Any:
        return gr.update(info=strategy_info(self.catalogue.raw, name))

    def on_preset(self, name: str | None) -> tuple[Any, ...]:
        found = self.catalogue.preset(name)
        if found is None:
            return gr.skip(), gr.skip()
        planner, tools = found
        return gr.update(value=planner), gr.update(value=tools)

    def on_selection(self, planner: str | None, tools: list[str] | None) -> Any:
        """A planner or tool picked by hand: the preset shows whether it still matches."""
        return gr.update(value=self.catalogue.matching_preset(planner, tools))

    def restore(self, saved: Any) -> tuple[Any, ...]:
        """The planner, strategy and tools this browser chose last time (kept in its local
        storage), those of them that are still offered; the preset that matches them."""
        if not isinstance(saved, dict):
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        catalogue = self.catalogue
        offered = {p["name"] for p in catalogue.available_planners}
        planner = saved.get("planner") if saved.get("planner") in offered else None
        strategy = saved.get("strategy")
        strategy = strategy if strategy in catalogue.strategy_names else None
        tools = saved.get("tools")
        known = {t["name"] for t in catalogue.available_tools}  # web search too, once chosen
        tools = [t for t in tools if t in known] if isinstance(tools, list) else None
        preset = catalogue.matching_preset(
            planner or catalogue.default_planner,
            tools if tools is not None else catalogue.default_tools,
        )
        return (
            gr.update(value=planner) if planner else gr.skip(),
            gr.update(value=strategy) if strategy else gr.skip(),
            gr.update(value=tools) if tools is not None else gr.skip(),
            gr.update(value=preset),
        )

    @staticmethod
    def remember(planner: str | None, strategy: str | None, tools: list[str] | None) -> dict:
        """What the browser keeps for the next visit."""
        return {"planner": planner, "strategy": strategy, "tools": list(tools or [])}

    def on_tab(
        self, mode: str, planners: list[str] | None, strategies: list[str] | None
    ) -> tuple[Any, ...]:
        """The Chat or Compare tab chosen: what the send button does; compare mode picks its
        own planners and strategies, so the single-run ones are greyed out."""
        single = mode == "chat"
        return (
            mode,
            gr.update(value=send_label(mode, planners, strategies)),
            gr.update(interactive=single and bool(self.catalogue.available_planners)),
            gr.update(interactive=single),
        )

    def on_contenders(
        self, mode: str | None, planners: list[str] | None, strategies: list[str] | None
    ) -> tuple[Any, ...]:
        # Only in the compare tab: the pickers mount (and may fire) when that tab is first
        # shown, racing its select event, which must win.
        label = send_label(mode, planners, strategies) if mode == "compare" else None
        return (
            self.catalogue.compare_note(planners, strategies),
            gr.update(value=label) if label else gr.skip(),
        )
