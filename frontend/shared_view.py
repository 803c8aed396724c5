"""The read-only page of a share link, and the Share control of the main page.

``/shared/{token}`` redirects to this small Gradio app (mounted at ``/view``) with the token
in the query. It shows the shared conversation as its owner sees it — the chat with every
tool panel, the recording (playable), each run's trace and timeline — and nothing to change
it with: no question box, no rename, no delete. The same helpers as the main page draw it
(``frontend.ui._Ui``, scoped to the conversation's owner), so both look alike.

``share_controls(ui, conv_state)`` adds the main page's Share button: it makes a link (a new
one each time; the old one stops working), shows it and copies it to the clipboard; and Stop
sharing, which ends the link.
"""

from __future__ import annotations

import logging
from typing import Any

import gradio as gr

from backend.errors import ServiceError
from backend.service import AgentService
from backend.sharing import SHARED_PAGE
from frontend import render

log = logging.getLogger("audio_agent.shared_view")

VIEW_PATH = "/view"
COPY_JS = """(link) => {
  if (link && navigator.clipboard) { navigator.clipboard.writeText(link).catch(() => {}); }
  return link;
}"""


def view_url(root_path: str, token: str) -> str:
    return f"{root_path}{VIEW_PATH}/?token={token}"


def build_shared_view(service: AgentService) -> gr.Blocks:
    from frontend.ui import _Ui

    base = _Ui(service)

    def load(request: gr.Request) -> tuple[Any, ...]:
        token = dict(request.query_params).get("token", "")
        try:
            conv = service.shared_conversation(token)
        except ServiceError as exc:
            return (
                f"### {render.md_escape(str(exc))}",
                [],
                None,
                gr.update(choices=[], value=None),
                [],
                "",
                None,
                None,
            )
        ui = base.for_owner(conv.owner)
        views = ui.service.conversation_view(conv.id)
        runs = ui.run_choices(views)
        latest = runs[-1][1] if runs else None
        events = ui.store.run_events(latest) if latest else []
        rows, totals = ui.trace(events)
        heading = (
            f"## {render.md_escape(conv.title)}\n"
            "Shared conversation, **read-only**: every step of every run is shown as it "
            "happened."
        )
        return (
            heading,
            render.render_conversation(views, ui.audio_labels(views)),
            _player(ui, conv.id, token),
            gr.update(choices=runs, value=latest),
            rows,
            totals,
            ui.timeline_figure(events),
            {"owner": conv.owner, "conversation": conv.id},
        )

    def pick_run(run_id: str | None, shared: dict[str, str] | None) -> tuple[Any, ...]:
        if not shared or not run_id:
            return [], "", None
        ui = base.for_owner(shared["owner"])
        run = ui.store.get_run(run_id)
        views = ui.service.conversation_view(shared["conversation"], events=False)  # rows only
        if run is None or all(r.info.id != run_id for v in views for r in v.runs):
            return [], "", None
        events = ui.store.run_events(run_id)
        rows, totals = ui.trace(events)
        return rows, totals, ui.timeline_figure(events)

    with gr.Blocks(title="Shared conversation · Ask about audio") as view:
        shared_state = gr.State(None)
        heading = gr.Markdown("Loading the shared conversation…", elem_id="shared-heading")
        chatbot = gr.Chatbot(
            label="Conversation", height=590, elem_id="shared-chat", buttons=["copy", "copy_all"]
        )
        audio = gr.HTML("", elem_id="shared-audio")
        run_select = gr.Dropdown(
            choices=[], label="Run", interactive=True, elem_id="shared-run-select"
        )
        timeline_image = gr.Plot(show_label=False, elem_id="shared-timeline")
        trace_totals = gr.Markdown("", elem_id="shared-trace-totals")
        trace_df = gr.Dataframe(
            value=[],
            headers=render.TRACE_COLUMNS,
            interactive=False,
            wrap=True,
            elem_id="shared-trace-table",
        )
        view.load(
            load,
            outputs=[
                heading,
                chatbot,
                audio,
                run_select,
                trace_df,
                trace_totals,
                timeline_image,
                shared_state,
            ],
        )
        run_select.input(
            pick_run,
            inputs=[run_select, shared_state],
            outputs=[trace_df, trace_totals, timeline_image],
        )
    return view


def _player(ui: Any, conversation_id: str, token: str) -> str:
    """The shared conversation's recording, played through the share link's own route."""
    import html

    audio_id = ui.service.latest_audio_id(conversation_id)
    info = ui.store.get_audio(audio_id) if audio_id else None
    if info is None:
        return ""
    url = html.escape(f"/api/shared/{token}/audio/{info.id}")
    name = html.escape(render.audio_label(info.name or "recording", info.duration_s))
    return (
        f"<span>Recording: {name}</span> "
        f'<audio controls preload="metadata" src="{url}" aria-label="Play {name}"></audio>'
    )


def share_controls(ui: Any, conv_state: Any) -> None:
    """The Share button and the link it made (in the main page, near Rename/Export)."""

    def make_link(conversation_id: str | None, request: gr.Request | None = None) -> Any:
        scoped = ui.scoped(request)
        if not conversation_id or scoped.store.get_conversation(conversation_id) is None:
            gr.Warning("Open or start a conversation first, then share it.")
            return gr.update(value="", visible=False)
        token = scoped.service.share(conversation_id)
        base = ""
        inner = getattr(request, "request", None)
        if inner is not None and hasattr(inner, "base_url"):
            base = str(inner.base_url).rstrip("/")
        link = f"{base}{SHARED_PAGE}/{token}"
        gr.Info("Share link copied: anyone with it can read this conversation.")
        return gr.update(value=link, visible=True)

    def stop_sharing(conversation_id: str | None, request: gr.Request | None = None) -> Any:
        scoped = ui.scoped(request)
        if not conversation_id or scoped.store.get_conversation(conversation_id) is None:
            return gr.update(value="", visible=False)
        if scoped.service.unshare(conversation_id):
            gr.Info("Sharing stopped: the link no longer opens this conversation.")
        else:
            gr.Info("This conversation has no share link.")
        return gr.update(value="", visible=False)

    with gr.Row():
        share_btn = gr.Button("Share", size="sm", min_width=60, elem_id="share-btn")
        unshare_btn = gr.Button("Stop sharing", size="sm", min_width=60, elem_id="unshare-btn")
    link_box = gr.Textbox(
        label="Read-only link (copied; Share again makes a new one and ends this one)",
        interactive=False,
        visible=False,
        elem_id="share-link",
        buttons=["copy"],
    )
    share_btn.click(make_link, inputs=conv_state, outputs=link_box).then(
        None, inputs=link_box, js=COPY_JS
    )
    unshare_btn.click(stop_sharing, inputs=conv_state, outputs=link_box)
