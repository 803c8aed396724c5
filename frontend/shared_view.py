"""The read-only page of a share link.

``/shared/{token}`` redirects to this small Gradio app (mounted at ``/view``) with the token
in the query. It shows the shared conversation as its owner sees it (the chat with every
tool panel, each recording playable in its question, each run's trace and timeline) and
nothing to change it with. It reads through ``frontend.reads`` for the conversation's owner,
as the main page does, so both look alike.

Every update checks the link again: a timer refreshes the page while it is open (new
questions, a run still answering), and once the owner stops sharing (or deletes the
conversation) the page shows one message and nothing else.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from backend.errors import ServiceError
from backend.service import AgentService
from backend.service.owned import OwnedService
from frontend import answer_text
from frontend.assets import CSS, PAGE_JS
from frontend.reads import ConversationReads, trace_of
from frontend.trace_html import trace_table
from frontend.views import chat_messages, player_html

VIEW_PATH = "/view"
REFRESH_S = 4.0  # how often an open shared page checks its link and looks for news
REVOKED = (
    "### This share link no longer works\n"
    "Its owner stopped sharing the conversation, or deleted it. Ask them for a new link."
)


def view_url(root_path: str, token: str) -> str:
    return f"{root_path}{VIEW_PATH}/?token={token}"


def shared_audio_url(token: str) -> Any:
    return lambda audio_id: f"/api/shared/{token}/audio/{audio_id}"


class SharedView:
    """The handlers of the shared page; each checks the share token first."""

    def __init__(self, service: AgentService) -> None:
        self.service = service

    def reads(self, token: str) -> tuple[ConversationReads, str] | None:
        """The owner's reads and the conversation a live token opens; None once revoked."""
        try:
            conv = self.service.shared_conversation(token)
        except ServiceError:
            return None
        return ConversationReads(OwnedService(self.service, conv.owner)), conv.id

    def revoked(self, components: dict[str, Any]) -> dict[Any, Any]:
        """One clear message and nothing else."""
        return {
            components["heading"]: REVOKED,
            components["content"]: gr.update(visible=False),
            components["chat"]: [],
            components["timer"]: gr.Timer(active=False),
            components["state"]: None,
        }

    def page(
        self, components: dict[str, Any], token: str, run_id: str | None = None
    ) -> dict[Any, Any]:
        """The whole shared page (``run_id``: the run whose trace to show; default the
        latest)."""
        found = self.reads(token)
        opened = found[0].opened(found[1], full_last=None) if found else None
        if found is None or opened is None:
            return self.revoked(components)
        reads = found[0]
        runs = opened.runs
        chosen = run_id if any(r == run_id for _, r in runs) else (runs[-1][1] if runs else None)
        heading = (
            f"## {answer_text.md_escape(opened.conversation.title)}\n"
            "Shared conversation, **read-only**: every step of every run is shown as it happened."
        )
        return {
            components["heading"]: heading,
            components["content"]: gr.update(visible=True),
            components["chat"]: chat_messages(
                opened.views, opened.recordings, url=shared_audio_url(token)
            ),
            components["run_select"]: gr.update(choices=runs, value=chosen),
            **self.trace(components, token, reads, chosen),
            components["timer"]: gr.Timer(active=True),
            components["state"]: {
                "token": token,
                "updated": opened.conversation.updated_at.isoformat(),
                "live": opened.live,
            },
        }

    def trace(
        self, components: dict[str, Any], token: str, reads: ConversationReads, run_id: str | None
    ) -> dict[Any, Any]:
        events = reads.run_events(run_id)
        found = trace_of(events)
        audio = reads.run_audio(events)
        return {
            components["player"]: player_html(audio, shared_audio_url(token)) if audio else "",
            components["timeline"]: reads.timeline_figure(events) if events else None,
            components["totals"]: found.totals,
            components["table"]: trace_table(found.rows),
        }

    def load(self, components: dict[str, Any], request: gr.Request) -> dict[Any, Any]:
        token = dict(request.query_params).get("token", "")
        return self.page(components, token)

    def pick_run(
        self, components: dict[str, Any], run_id: str | None, state: dict[str, Any] | None
    ) -> dict[Any, Any]:
        token = (state or {}).get("token", "")
        found = self.reads(token)
        if found is None:
            return self.revoked(components)
        reads, conversation_id = found
        runs = {r.info.id for v in reads.views(conversation_id, events=False) for r in v.runs}
        return self.trace(components, token, reads, run_id if run_id in runs else None)

    def refresh(
        self, components: dict[str, Any], run_id: str | None, state: dict[str, Any] | None
    ) -> dict[Any, Any]:
        """The timer: the link checked again; the page drawn again when the conversation
        changed or a run of it is still answering."""
        token = (state or {}).get("token", "")
        found = self.reads(token)
        if found is None:
            return self.revoked(components)
        reads, conversation_id = found
        conv = reads.conversation(conversation_id)
        changed = conv is not None and conv.updated_at.isoformat() != (state or {}).get("updated")
        if not changed and not (state or {}).get("live"):
            return {components["state"]: gr.skip()}  # (an empty dict would be a value)
        return self.page(components, token, run_id)


def build_shared_view(service: AgentService) -> gr.Blocks:
    handlers = SharedView(service)
    with gr.Blocks(title="Shared conversation · Ask about audio", fill_width=True) as view:
        state = gr.State(None)
        heading = gr.Markdown(
            "Loading the shared conversation…",
            elem_id="shared-heading",
        )
        gr.HTML("", head=f"<style>{CSS}</style>", js_on_load=PAGE_JS, elem_id="shared-assets")
        with gr.Column(visible=False, elem_id="shared-content") as content:
            chat = gr.Chatbot(
                label="Shared conversation",
                show_label=False,
                elem_id="shared-chat",
                buttons=["copy", "copy_all"],
                feedback_options=None,
            )
            gr.Markdown("### Trace of a run", elem_id="shared-trace-heading")
            run_select = gr.Dropdown(choices=[], label="Run", elem_id="shared-run-select")
            player = gr.HTML("", elem_id="shared-audio")
            timeline = gr.Plot(
                show_label=False,
                elem_id="shared-timeline",
                elem_classes=["timeline-plot"],
                label="Timeline of the run",
            )
            totals = gr.Markdown("", elem_id="shared-trace-totals")
            table = gr.HTML(trace_table([]), elem_id="shared-trace-table")
        timer = gr.Timer(REFRESH_S, active=False)
        components = {
            "state": state,
            "heading": heading,
            "content": content,
            "chat": chat,
            "run_select": run_select,
            "player": player,
            "timeline": timeline,
            "totals": totals,
            "table": table,
            "timer": timer,
        }
        outputs = list(components.values())

        def load(request: gr.Request) -> dict[Any, Any]:
            return handlers.load(components, request)

        view.load(load, outputs=outputs)

        def pick_run(run_id: str | None, shared: dict[str, Any] | None) -> dict[Any, Any]:
            return handlers.pick_run(components, run_id, shared)

        def refresh(run_id: str | None, shared: dict[str, Any] | None) -> dict[Any, Any]:
            return handlers.refresh(components, run_id, shared)

        run_select.input(pick_run, inputs=[run_select, state], outputs=outputs)
        timer.tick(refresh, inputs=[run_select, state], outputs=outputs, show_progress="hidden")
    return view
