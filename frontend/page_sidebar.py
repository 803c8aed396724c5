"""The page's sidebar: past conversations (search, spinners on the ones still answering),
the open conversation's actions (rename, delete, share, export) and the account menu; and the
Undo bar that a deletion shows."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass

import gradio as gr

from backend.access import hf_oauth
from frontend import history
from frontend.assets import HISTORY_JS

UNDO_S = 8.0  # a deleted conversation can be brought back for this long


@dataclass
class Sidebar:
    new_btn: gr.Button
    search: gr.Textbox
    conv_list: gr.HTML
    list_timer: gr.Timer  # refreshes the spinners while something runs
    rename_box: gr.Textbox
    rename_btn: gr.Button
    delete_btn: gr.Button
    delete_confirm: gr.Column
    delete_question: gr.Markdown
    confirm_delete_btn: gr.Button
    cancel_delete_btn: gr.Button
    export: gr.HTML
    share_btn: gr.Button
    unshare_btn: gr.Button
    share_link: gr.Textbox
    account: gr.HTML


@dataclass
class UndoBar:
    bar: gr.Column
    text: gr.Markdown
    button: gr.Button
    timer: gr.Timer


def build_sidebar() -> Sidebar:
    with gr.Sidebar(label="Conversations", open=True, width=280, elem_id="sidebar"):
        if hf_oauth.enabled(os.environ):  # on a Space with OAuth: your history on any device
            gr.LoginButton(elem_id="hf-login")
        new_btn = gr.Button("New conversation", elem_id="new-conversation", variant="primary")
        search = gr.Textbox(
            label="Search conversations",
            placeholder="Words of a question or a file name",
            max_lines=1,
            elem_id="conv-search",
        )
        conv_list = gr.HTML(
            history.history_html([], pending=True),
            js_on_load=HISTORY_JS,
            elem_id="conversation-list",
            apply_default_css=False,
        )
        list_timer = gr.Timer(3.0, active=False)
        with gr.Accordion("This conversation", open=True, elem_id="conversation-panel"):
            rename_box = gr.Textbox(
                label="Title",
                placeholder="Open a conversation to rename it",
                max_lines=1,
                elem_id="rename-box",
            )
            with gr.Row(elem_id="conversation-actions"):
                rename_btn = gr.Button("Rename", size="sm", min_width=60, elem_id="rename")
                delete_btn = gr.Button("Delete", size="sm", min_width=60, elem_id="delete")
            with gr.Column(visible=False, elem_id="delete-confirm") as delete_confirm:
                delete_question = gr.Markdown("")
                with gr.Row():
                    confirm_delete_btn = gr.Button(
                        "Yes, delete", size="sm", variant="stop", elem_id="confirm-delete"
                    )
                    cancel_delete_btn = gr.Button("Cancel", size="sm", elem_id="cancel-delete")
            with gr.Row(elem_id="share-actions"):
                share_btn = gr.Button("Share", size="sm", min_width=60, elem_id="share-btn")
                unshare_btn = gr.Button(
                    "Stop sharing", size="sm", min_width=60, elem_id="unshare-btn"
                )
            share_link = gr.Textbox(
                label="Read-only link (copied; Share again makes a new one and ends this one)",
                interactive=False,
                visible=False,
                elem_id="share-link",
                buttons=["copy"],
            )
            export = gr.HTML(render_export_link(None), elem_id="export-json")
        account = gr.HTML("", elem_id="account")
    return Sidebar(
        new_btn=new_btn,
        search=search,
        conv_list=conv_list,
        list_timer=list_timer,
        rename_box=rename_box,
        rename_btn=rename_btn,
        delete_btn=delete_btn,
        delete_confirm=delete_confirm,
        delete_question=delete_question,
        confirm_delete_btn=confirm_delete_btn,
        cancel_delete_btn=cancel_delete_btn,
        export=export,
        share_btn=share_btn,
        unshare_btn=unshare_btn,
        share_link=share_link,
        account=account,
    )


def render_export_link(conversation_id: str | None) -> str:
    """The Export link: the API's export of the conversation (``GET /api/conversations/
    {id}/export``, of the visitor's own conversations only), made when it is clicked."""
    if not conversation_id:
        return '<span class="export-link" role="link" aria-disabled="true">Export as JSON</span>'
    url = f"/api/conversations/{html.escape(conversation_id)}/export"
    return f'<a class="export-link" href="{url}" download>Export as JSON</a>'
