"""The Gradio UI: a thin translation of the service's events into a chat page.

``build_ui(service)`` makes the page (``frontend.page``: a typed page object), binds the
handlers (``conversations``, ``conversation_actions``, ``asking`` with ``comparing``,
``settings_panel``; all reading through the owner-scoped ``frontend.reads``) and wires them
to the page's events here, in one place. Rendering lives in ``frontend.render`` (chat
messages), ``frontend.timeline`` (the figure), ``frontend.history`` (the sidebar list) and
``frontend.trace_html`` (the table of calls); ``page.css``, ``page.js`` and ``history.js``
are the page's styles and behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from backend.service import AgentService
from frontend import benchmarks_tab, files, tool_states
from frontend.asking import AskingHandlers
from frontend.catalogue import Catalogue
from frontend.context import PageContext
from frontend.conversation_actions import COPY_JS, ConversationActions
from frontend.conversations import ConversationHandlers
from frontend.echo import ECHO_JS
from frontend.page import Page, build_page
from frontend.settings_panel import SettingsHandlers

SETTINGS_KEY = "ask-about-audio-settings"  # the browser keeps the planner, strategy, tools
START_RECORDING_JS = """() => { setTimeout(() => {
  const mic = document.querySelector('#mic');
  const button = mic && mic.querySelector('button.record-button, button[aria-label*="ecord"]');
  if (button) button.click();
}, 300); }"""


def focus(selector: str) -> str:
    return f"() => document.querySelector({selector!r})?.focus()"


@dataclass
class Ui:
    """The page and its handlers (tests call the handlers directly)."""

    page: Page
    context: PageContext
    conversations: ConversationHandlers
    actions: ConversationActions
    asking: AskingHandlers
    settings: SettingsHandlers

    @property
    def blocks(self) -> gr.Blocks:
        return self.page.blocks


def build(service: AgentService) -> Ui:
    if files.forget not in service.deletion_hooks:
        service.deletion_hooks.append(files.forget)
    catalogue = Catalogue.of(service.catalogue())
    page = build_page(
        catalogue,
        service.audio.max_bytes,
        more_tabs=lambda blocks, tabs: benchmarks_tab.add_tab(service, blocks, tabs),
        notice=service.storage_notice(),  # on a Space without persistent storage
    )
    ctx = PageContext(service, page, catalogue)
    ui = Ui(
        page=page,
        context=ctx,
        conversations=ConversationHandlers(ctx),
        actions=ConversationActions(ctx),
        asking=AskingHandlers(ctx),
        settings=SettingsHandlers(ctx),
    )
    with page.blocks:
        following = wire_conversations(ui)
        wire_settings(ui)
        wire_asking(ui, following)
    return ui


def build_ui(service: AgentService) -> gr.Blocks:
    return build(service).blocks


def wire_conversations(ui: Ui) -> list[Any]:
    """Opening, leaving, renaming, deleting and sharing conversations; returns the events
    that follow a live run (asking and Stop cancel them)."""
    page, handlers, actions = ui.page, ui.conversations, ui.actions
    s, views = page.sidebar, page.view_outputs()
    # generators that follow a run still going: any number at once (they mostly wait)
    load = page.blocks.load(
        handlers.load, inputs=page.route, outputs=[*views, s.account],
        js="(route) => location.pathname", concurrency_limit=None, show_progress="hidden",
    )  # fmt: skip
    # every pick runs (the default drops a click while an earlier open still follows a run);
    # of several, the latest is shown (frontend.live)
    pick = s.conv_list.click(
        handlers.pick, outputs=views, concurrency_limit=None, show_progress="hidden",
        trigger_mode="multiple",
    )  # fmt: skip
    s.new_btn.click(handlers.new, outputs=views, cancels=[pick, load])
    s.list_timer.tick(
        handlers.refresh_list, inputs=page.conversation, outputs=[s.conv_list, s.list_timer],
        show_progress="hidden",
    )  # fmt: skip
    page.full_btn.click(
        handlers.show_all, inputs=page.conversation, outputs=[page.chatbot, page.full_btn]
    )
    page.trace.run_select.input(
        handlers.select_run, inputs=page.trace.run_select, outputs=page.trace.outputs()
    )
    renamed = [s.conv_list, s.list_timer, s.export]
    s.rename_btn.click(actions.rename, inputs=[page.conversation, s.rename_box], outputs=renamed)
    s.rename_box.submit(actions.rename, inputs=[page.conversation, s.rename_box], outputs=renamed)
    s.delete_btn.click(
        actions.ask_delete, inputs=page.conversation, outputs=[s.delete_confirm, s.delete_question]
    )
    s.cancel_delete_btn.click(lambda: gr.update(visible=False), outputs=s.delete_confirm)
    u = page.undo_bar
    undo_outputs = [page.undo, u.bar, u.text, u.timer]
    deleted = [*views, *undo_outputs]
    s.confirm_delete_btn.click(
        actions.delete, inputs=page.conversation, outputs=deleted, cancels=[pick, load]
    )
    # the chat's trash icon deletes the conversation (Undo brings it back)
    page.chatbot.clear(
        actions.delete, inputs=page.conversation, outputs=deleted, cancels=[pick, load]
    )
    # one queue for Undo and the window's end: an Undo clicked in time is handled first
    u.button.click(actions.undo, inputs=page.undo, outputs=deleted, concurrency_id="undo")
    u.timer.tick(
        actions.undo_expired, inputs=page.undo, outputs=undo_outputs, concurrency_id="undo"
    )
    s.share_btn.click(actions.share, inputs=page.conversation, outputs=s.share_link).then(
        None, inputs=s.share_link, js=COPY_JS
    )
    s.unshare_btn.click(actions.unshare, inputs=page.conversation, outputs=s.share_link)
    return [pick, load]


def wire_settings(ui: Ui) -> None:
    """The settings drawer and the compare pickers; the browser remembers the choices."""
    page, handlers = ui.page, ui.settings
    p, c = page.settings, page.compare
    p.check_btn.click(handlers.check_models, outputs=p.check_out)
    tools = ui.context.catalogue.available_tools
    p.tool_timer.tick(
        lambda: tool_states.refresh(tools), outputs=[p.tool_states, p.tool_timer],
        concurrency_limit=None, show_progress="hidden",
    )  # fmt: skip
    p.planner.change(handlers.on_planner, inputs=p.planner, outputs=p.planner_note)
    p.strategy.change(
        handlers.on_strategy, inputs=p.strategy, outputs=p.strategy, show_progress="hidden"
    )
    p.preset.input(handlers.on_preset, inputs=p.preset, outputs=[p.planner, p.tools])
    p.planner.input(handlers.on_selection, inputs=[p.planner, p.tools], outputs=p.preset)
    p.tools.input(handlers.on_selection, inputs=[p.planner, p.tools], outputs=p.preset)
    remembered = gr.BrowserState(None, storage_key=SETTINGS_KEY)
    page.blocks.load(
        handlers.restore,
        inputs=remembered,
        outputs=[p.planner, p.strategy, p.tools, p.preset],
        show_progress="hidden",
    )
    for picker in (p.planner, p.strategy, p.tools):
        picker.input(handlers.remember, inputs=[p.planner, p.strategy, p.tools], outputs=remembered)
    contenders = [c.planners, c.strategies]
    tab_outputs = [page.mode, page.composer.ask_btn, p.planner, p.strategy]
    page.chat_tab.select(lambda a, b: handlers.on_tab("chat", a, b), contenders, tab_outputs)
    page.compare_tab.select(lambda a, b: handlers.on_tab("compare", a, b), contenders, tab_outputs)
    for picker in contenders:
        picker.change(
            handlers.on_contenders, inputs=[page.mode, *contenders],
            outputs=[c.note, page.composer.ask_btn],
        )  # fmt: skip


def wire_asking(ui: Ui, following: list[Any]) -> None:
    """The composer: the recording, asking (and comparing), examples, Retry, Edit, Stop."""
    page, handlers = ui.page, ui.asking
    c, p, k = page.composer, page.settings, page.compare
    attached = [page.attachment, c.attachment_row, c.attachment, c.status, c.mic_panel, c.mic]
    c.attach_btn.upload(handlers.attach, inputs=c.attach_btn, outputs=attached)
    c.mic.stop_recording(handlers.attach, inputs=c.mic, outputs=attached)
    c.remove_btn.click(
        handlers.remove_attachment, outputs=[page.attachment, c.attachment_row, c.attachment]
    )
    c.record_btn.click(lambda: gr.update(visible=True), outputs=c.mic_panel).then(
        None, js=START_RECORDING_JS
    )
    c.choices_btn.click(lambda: gr.update(visible=True), outputs=c.choices).then(
        None, js=focus("#choices input")
    )
    options: dict[str, Any] = {
        "outputs": page.run_outputs(),
        # the handler only follows runs; the run manager admits and queues them
        "concurrency_limit": None,
        "show_progress": "hidden",  # the chat shows progress: pending panels
        "cancels": following,  # a followed run stops drawing over the new question
    }
    settings = [p.planner, p.tools, p.strategy]
    contenders = [k.planners, k.strategies]
    idle = {"fn": handlers.idle, "inputs": [page.mode, *contenders], "outputs": page.idle_outputs()}
    ask = c.ask_btn.click(
        handlers.submit,
        inputs=[page.mode, page.conversation, page.attachment, c.question, c.choices, *settings,
                *contenders],
        js=ECHO_JS,  # the question in the chat at once (frontend.echo)
        **options,
    )  # fmt: skip
    ask.then(**idle)
    retry = c.retry_btn.click(
        handlers.retry, inputs=[page.mode, page.conversation, *settings, *contenders], **options
    )
    retry.then(**idle)
    example = page.chatbot.example_select(handlers.example, inputs=settings, **options)
    example.then(**idle)
    c.edit_btn.click(handlers.edit, inputs=page.conversation, outputs=[c.question, c.choices]).then(
        None, js=focus("#question textarea")
    )
    # Gradio cancels after the handler of this click; the stored end is read in the next step.
    c.stop_btn.click(None, cancels=[ask, retry, example, *following]).then(
        handlers.stop, inputs=page.conversation, outputs=page.view_outputs()
    ).then(**idle)
