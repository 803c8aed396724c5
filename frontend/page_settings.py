"""The settings drawer (on the right): the preset, planner, strategy and tools, what is
unavailable and why, and Check models."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from backend.host import warm_up
from frontend.catalogue import Catalogue, planner_note, strategy_info, unavailable_table
from frontend.tool_states import REFRESH_S, states_html


@dataclass
class SettingsPanel:
    planner_note: gr.Markdown
    preset: gr.Dropdown
    planner: gr.Dropdown
    strategy: gr.Dropdown
    tools: gr.CheckboxGroup
    check_btn: gr.Button
    check_out: gr.Markdown
    tool_states: gr.HTML  # the local tools' warm-up: warming up, ready, failed
    tool_timer: gr.Timer  # refreshes it while the warm-up goes on


def build_settings(catalogue: Catalogue) -> SettingsPanel:
    """The settings drawer: who answers and how."""
    with gr.Sidebar(
        label="Settings", open=False, width=360, position="right", elem_id="settings-drawer"
    ):
        gr.Markdown("### Settings", elem_id="settings-heading")
        planner_info = gr.Markdown(
            planner_note(catalogue.planners.get(catalogue.default_planner or "")),
            elem_id="planner-note",
        )
        preset = gr.Dropdown(
            choices=[(p["label"], p["name"]) for p in catalogue.presets],
            value=catalogue.matching_preset(catalogue.default_planner, catalogue.default_tools),
            label="Preset: sets the planner and the tools",
            interactive=bool(catalogue.presets),
            elem_id="preset",
        )
        planner = gr.Dropdown(
            choices=[(p["label"] or p["name"], p["name"]) for p in catalogue.available_planners],
            value=catalogue.default_planner,
            label="Planner",
            interactive=bool(catalogue.available_planners),
            elem_id="planner",
        )
        strategy = gr.Dropdown(
            choices=catalogue.strategies,
            value=catalogue.default_strategy,
            label="Strategy",
            info=strategy_info(catalogue.raw, catalogue.default_strategy),
            visible=bool(catalogue.strategies),
            elem_id="strategy",
        )
        # the local tools' warm-up (warming up, ready, failed), refreshed while it goes on
        tool_states = gr.HTML(
            states_html(warm_up.status(), catalogue.available_tools), elem_id="tool-states"
        )
        tool_timer = gr.Timer(REFRESH_S, active=True)
        with gr.Accordion(f"Tools ({len(catalogue.available_tools)} available)", open=False):
            tools = gr.CheckboxGroup(
                choices=[
                    (f"{t['label'] or t['name']} · {t['name']}", t["name"])
                    for t in catalogue.available_tools
                ],
                value=catalogue.default_tools,
                label="Tools the planner may call",
                elem_id="tools",
            )
        with gr.Accordion("Unavailable planners, tools and presets", open=False):
            gr.Markdown(unavailable_table(catalogue.raw), elem_id="unavailable")
        with gr.Accordion("Check models", open=False):
            check_btn = gr.Button("Check models", size="sm", elem_id="check-models")
            check_out = gr.Markdown(
                "One tiny real call to each configured remote planner and tool "
                "(a short text turn, one second of audio).",
                elem_id="check-models-result",
            )
    return SettingsPanel(
        planner_info, preset, planner, strategy, tools, check_btn, check_out, tool_states,
        tool_timer,
    )  # fmt: skip
