"""The main page's layout, as a typed page object: every component a handler reads or updates
is a named field of ``Page`` (grouped: sidebar, composer, compare, trace, settings), built
once by ``build_page``. Handlers live in their own modules (``conversations``,
``conversation_actions``, ``asking``, ``settings_panel``); ``frontend.ui`` wires them.

Layout, as in the chat front ends people know: a sidebar of past conversations (search,
spinners on the ones still answering, the open conversation's actions, the account); the
chat filling the window's height with one composer pinned under it (the question, the
recording as a chip with its player, answer choices as chips; attach, record and send as
icon buttons); the settings (planner, strategy, tools) in a drawer on the right. Tabs over
the chat: Chat, Compare, Trace; further tabs are built in ``build_tabs``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gradio as gr

from frontend.assets import CSS, PAGE_JS
from frontend.catalogue import Catalogue
from frontend.page_composer import Composer, build_composer
from frontend.page_settings import SettingsPanel, build_settings
from frontend.page_sidebar import UNDO_S, Sidebar, UndoBar, build_sidebar
from frontend.page_tabs import ComparePanel, TracePanel, build_tabs

TITLE = "Ask about audio"
HELP_TEXT = (
    "Give a recording, ask about it: watch a planner reason and call audio tools, step by step."
)


@dataclass
class Page:
    blocks: gr.Blocks
    conversation: gr.State  # the open conversation's id (None: a new one)
    attachment: gr.State  # the recording attached for the next question: its audio id
    mode: gr.State  # "chat" or "compare": what the send button does
    undo: gr.State  # the conversation that Undo brings back
    route: gr.Textbox  # the page's address at load (hidden; filled by the page's script)
    sidebar: Sidebar
    undo_bar: UndoBar
    tabs: gr.Tabs
    chat_tab: gr.Tab
    compare_tab: gr.Tab
    trace_tab: gr.Tab
    chatbot: gr.Chatbot
    full_btn: gr.Button
    compare: ComparePanel
    trace: TracePanel
    composer: Composer
    settings: SettingsPanel

    def view_outputs(self) -> list[gr.components.Component]:
        """What opening (or leaving) a conversation updates."""
        s, c = self.sidebar, self.composer
        return [
            self.conversation,
            self.attachment,
            self.chatbot,
            self.full_btn,
            c.attachment_row,
            c.attachment,
            c.audio_note,
            c.status,
            c.stop_btn,
            s.rename_box,
            s.export,
            s.delete_confirm,
            s.share_link,
            s.conv_list,
            s.list_timer,
            self.trace.run_select,
            *self.trace.outputs(),
            *self.compare.outputs(),
        ]

    def run_outputs(self) -> list[gr.components.Component]:
        """What asking updates: the view, the composer and the tabs."""
        c = self.composer
        asking = [c.question, c.choices, c.ask_btn, c.retry_btn, c.mic_panel, self.tabs]
        return [*self.view_outputs(), *asking]

    def idle_outputs(self) -> list[gr.components.Component]:
        return [self.composer.ask_btn, self.composer.stop_btn, self.composer.retry_btn]


def build_page(
    catalogue: Catalogue,
    max_upload_bytes: int = 0,
    more_tabs: Callable[[gr.Blocks, gr.Tabs], None] | None = None,
    notice: str | None = None,
) -> Page:
    """The page's components (no events: ``frontend.ui`` wires them, except those of the
    tabs ``more_tabs`` builds). ``max_upload_bytes``: the page refuses a larger file itself,
    before sending it. ``notice``: a line every visitor should read first (on a Space without
    persistent storage: history is temporary)."""
    with gr.Blocks(title=TITLE, fill_width=True, fill_height=True) as blocks:
        conversation, attachment = gr.State(None), gr.State(None)
        mode, undo = gr.State("chat"), gr.State(None)
        route = gr.Textbox(visible=False, elem_id="route")
        sidebar = build_sidebar()
        settings = build_settings(catalogue)
        with gr.Column(elem_id="main"):
            with gr.Row(equal_height=True, elem_id="header-row"):
                gr.HTML(
                    f'<h1 data-max-upload="{int(max_upload_bytes)}">{TITLE}</h1><p>{HELP_TEXT}</p>',
                    head=f"<style>{CSS}</style>",
                    elem_id="header",
                    js_on_load=PAGE_JS,
                )
                gr.Button(
                    "Settings",
                    elem_id="settings-btn",
                    elem_classes=["icon-btn", "icon-settings", "with-text"],
                    scale=0,
                    min_width=44,
                )
            if notice:
                gr.Markdown(f"**Note:** {notice}", elem_id="page-notice")
            tabs, (chat_tab, compare_tab, trace_tab), chatbot, full_btn, compare, trace = (
                build_tabs(catalogue, more_tabs and (lambda tabs: more_tabs(blocks, tabs)))
            )
            composer = build_composer()
        with gr.Column(visible=False, elem_id="undo-bar") as bar:
            undo_text = gr.Markdown("", elem_id="undo-text")
            undo_btn = gr.Button("Undo", size="sm", variant="primary", elem_id="undo")
        undo_timer = gr.Timer(UNDO_S, active=False)
    return Page(
        blocks=blocks,
        conversation=conversation,
        attachment=attachment,
        mode=mode,
        undo=undo,
        route=route,
        sidebar=sidebar,
        undo_bar=UndoBar(bar, undo_text, undo_btn, undo_timer),
        tabs=tabs,
        chat_tab=chat_tab,
        compare_tab=compare_tab,
        trace_tab=trace_tab,
        chatbot=chatbot,
        full_btn=full_btn,
        compare=compare,
        trace=trace,
        composer=composer,
        settings=settings,
    )
