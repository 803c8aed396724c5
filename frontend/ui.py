"""The Gradio Blocks UI: a thin translation of the service's events into chat messages.

Layout: a sidebar with past conversations (open, rename, delete, export); the chat, where
every planner turn and tool call of a run appears live as a collapsible panel; the audio,
question and answer choices; the planner and tool toggles; a trace table per answer.
All rendering lives in ``frontend.render`` and is shared by live runs and reopened ones.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gradio as gr

from agent import events as ev
from backend.service import AgentService, AskRequest, MessageView, ServiceError
from frontend import render

TITLE = "Ask about audio"
DEFAULT_STRATEGY = "react"
UPDATE_EVERY_S = 0.1  # at most this often for planner text deltas; structure always at once
FORMATS = "wav, mp3, ogg, flac, m4a, webm"

HELP_HTML = (
    "Upload a recording or record one with the microphone, type a question, optionally give "
    "answer choices (one per line) and press <b>Ask</b>. The planner's reasoning and each tool "
    "call appear live in the chat; click a panel to open it. A follow-up question in the same "
    "conversation reuses its audio."
)

# Gradio 6 takes page CSS only in launch()/mount_gradio_app(); so that build_ui alone makes the
# page tidy, the header component injects it into <head>.
CSS = """
#header h1 { margin: 0 0 2px 0; font-size: 1.55rem; }
#header p { margin: 0; font-size: 0.9rem; }
#conversation-list .wrap { flex-direction: column; gap: 4px; }
#conversation-list label { width: 100%; margin: 0; }
#conversation-list label span { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#audio-note p, #planner-note p { font-size: 0.85rem; margin: 0; }
#status p { color: var(--error-text-color); font-weight: 500; font-size: 0.9rem; margin: 0; }
"""


def _temp_dir(name: str) -> Path:
    path = Path(tempfile.gettempdir()) / "audio-agent-ui" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def parse_choices(text: str | None) -> list[str]:
    """Answer choices typed one per line; blank lines are ignored."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _markdown_cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def unavailable_table(catalogue: dict[str, list[dict[str, Any]]]) -> str:
    rows = [
        f"| {kind} | {_markdown_cell(entry['label'] or entry['name'])} | "
        f"{_markdown_cell(entry.get('reason'))} |"
        for kind, key in (("planner", "planners"), ("tool", "tools"))
        for entry in catalogue.get(key, [])
        if not entry["available"]
    ]
    if not rows:
        return "Every configured planner and tool is available."
    return "| kind | name | how to enable |\n|---|---|---|\n" + "\n".join(rows)


def strategy_choices(catalogue: dict[str, Any]) -> list[tuple[str, str]]:
    """The strategies to offer: from the catalogue when it lists them, else the agent's own."""
    entries = catalogue.get("strategies")
    if entries:
        return [
            (e.get("label") or e["name"], e["name"]) for e in entries if e.get("available", True)
        ]
    try:
        from agent.strategies import STRATEGY_LABELS
    except ImportError:
        return []
    return [(f"{label.split(' (')[0]} · {name}", name) for name, label in STRATEGY_LABELS.items()]


def planner_note(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "⚠️ No planner is available; see *Unavailable planners and tools* below."
    text = f"**{entry['label'] or entry['name']}**"
    if entry.get("model"):
        text += f" · `{entry['model']}`"
    if entry.get("description"):
        text += f"<br>{entry['description']}"
    return text


class _Ui:
    """The handlers, bound to one service."""

    def __init__(self, service: AgentService) -> None:
        self.service = service
        self.store = service.store
        catalogue = service.catalogue()
        self.catalogue = catalogue
        self.planners = {p["name"]: p for p in catalogue["planners"]}
        self.available_planners = [p for p in catalogue["planners"] if p["available"]]
        self.available_tools = [t for t in catalogue["tools"] if t["available"]]
        self.components: dict[str, Any] = {}

    # -- helpers ------------------------------------------------------------------------------
    def conversation_choices(self) -> list[tuple[str, str]]:
        return [(c.title, c.id) for c in self.store.list_conversations()]

    def list_update(self, selected: str | None) -> dict[str, Any]:
        return gr.update(choices=self.conversation_choices(), value=selected)

    def audio_labels(self, views: list[MessageView]) -> dict[str, str]:
        labels = {}
        for view in views:
            audio_id = view.message.audio_id
            if audio_id and audio_id not in labels:
                info = self.store.get_audio(audio_id)
                labels[audio_id] = (
                    render.audio_label(info.name, info.duration_s) if info else "recording"
                )
        return labels

    def audio_note(self, conversation_id: str | None) -> str:
        if not conversation_id:
            return ""
        audio_id = self.service.latest_audio_id(conversation_id)
        info = self.store.get_audio(audio_id) if audio_id else None
        if info is None:
            return ""
        return (
            f"🎧 This conversation's audio: **{render.md_escape(info.name or 'recording')}** "
            f"({info.duration_s:.1f} s). A follow-up question uses it unless you give another."
        )

    def audio_copy(self, conversation_id: str) -> str | None:
        """The conversation's latest recording, copied where Gradio may serve it from."""
        audio_id = self.service.latest_audio_id(conversation_id)
        info = self.store.get_audio(audio_id) if audio_id else None
        if info is None or not Path(info.original_path).is_file():
            return None
        original = Path(info.original_path)
        folder = _temp_dir("audio") / info.id
        name = Path(info.name).stem if info.name else "recording"
        target = folder / f"{_safe_name(name)}{original.suffix}"
        if not target.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(original, target)
        return str(target)

    def export_file(self, conversation_id: str) -> str | None:
        try:
            data = self.store.conversation_export(conversation_id)
        except LookupError:
            return None
        title = _safe_name(data["conversation"]["title"])[:40] or "conversation"
        path = _temp_dir("exports") / f"{title}-{conversation_id[:8]}.json"
        path.write_text(json.dumps(data, ensure_ascii=False, indent=2))
        return str(path)

    def export_update(self, conversation_id: str | None) -> dict[str, Any]:
        path = self.export_file(conversation_id) if conversation_id else None
        return gr.update(value=path, interactive=path is not None)

    def run_choices(self, views: list[MessageView]) -> list[tuple[str, str]]:
        options = []
        number = 0
        for view in views:
            for run in view.runs:
                number += 1
                question = view.message.text.strip().replace("\n", " ")
                if len(question) > 48:
                    question = question[:47] + "…"
                options.append((f"{number}. {question} · {run.info.planner}", run.info.id))
        return options

    def trace(self, events: list[ev.Event]) -> tuple[list[list[str]], str]:
        rows = render.trace_rows(events)
        return rows, render.trace_totals(events) if events else ""

    # -- handlers -----------------------------------------------------------------------------
    def on_load(self) -> dict[str, Any]:
        return self.list_update(None)

    def open_conversation(self, conversation_id: str | None) -> tuple[Any, ...]:
        if not conversation_id or self.store.get_conversation(conversation_id) is None:
            gr.Warning("That conversation no longer exists.")
            return self.new_conversation()
        conv = self.store.get_conversation(conversation_id)
        assert conv is not None
        views = self.service.conversation_view(conversation_id)
        chat = render.render_conversation(views, self.audio_labels(views))
        runs = self.run_choices(views)
        latest = runs[-1][1] if runs else None
        rows, totals = self.trace(self.store.run_events(latest) if latest else [])
        return (
            conversation_id,
            {"conversation": conversation_id, "path": None},
            chat,
            self.audio_copy(conversation_id),
            self.audio_note(conversation_id),
            gr.update(value=conv.title),
            self.export_update(conversation_id),
            gr.update(choices=runs, value=latest),
            rows,
            totals,
            _status(""),
        )

    def new_conversation(self) -> tuple[Any, ...]:
        return (
            None,
            None,
            [],
            None,
            "",
            gr.update(value=""),
            gr.update(value=None, interactive=False),
            gr.update(choices=[], value=None),
            [],
            "",
            _status(""),
        )

    def new_and_list(self) -> tuple[Any, ...]:
        return (*self.new_conversation(), self.list_update(None))

    def select_run(self, run_id: str | None) -> tuple[list[list[str]], str]:
        return self.trace(self.store.run_events(run_id) if run_id else [])

    def rename(self, conversation_id: str | None, title: str) -> tuple[Any, ...]:
        title = (title or "").strip()
        if not conversation_id:
            gr.Warning("Open a conversation first.")
            return gr.skip(), gr.skip()
        if not title:
            gr.Warning("Type a title first.")
            return gr.skip(), gr.skip()
        self.store.rename_conversation(conversation_id, title[:200])
        return self.list_update(conversation_id), self.export_update(conversation_id)

    def delete(self, conversation_id: str | None) -> tuple[Any, ...]:
        if not conversation_id:
            gr.Warning("Open a conversation first.")
            return tuple(gr.skip() for _ in range(12))
        self.store.delete_conversation(conversation_id)
        gr.Info("Conversation deleted.")
        return self.new_and_list()

    def on_planner(self, name: str | None) -> str:
        return planner_note(self.planners.get(name or ""))

    async def ask(
        self,
        conversation_id: str | None,
        uploaded: dict[str, Any] | None,
        audio_path: str | None,
        question: str,
        choices_text: str,
        planner: str | None,
        tools: list[str] | None,
        strategy: str | None = None,
    ) -> AsyncIterator[dict[Any, Any]]:
        c = self.components

        def problem(message: str) -> dict[Any, Any]:
            gr.Warning(html.escape(message))
            return {c["status"]: _status(f"⚠️ {render.md_escape(message)}")}

        question = question or ""
        if not question.strip():
            yield problem("Type a question first.")
            return
        created = False
        try:
            audio_id: str | None = None
            if audio_path and not (
                uploaded
                and uploaded.get("conversation") == conversation_id
                and uploaded.get("path") == audio_path
            ):
                info = await asyncio.to_thread(self.service.upload_file, audio_path)
                audio_id = info.id
            if conversation_id is None or self.store.get_conversation(conversation_id) is None:
                conversation_id = self.store.create_conversation().id
                created = True
            previous_audio = self.service.latest_audio_id(conversation_id)
            views = self.service.conversation_view(conversation_id)
            request, message = self.service.prepare(
                conversation_id,
                AskRequest(
                    question=question,
                    choices=parse_choices(choices_text),
                    audio_id=audio_id,
                    planner=planner or None,
                    strategy=strategy or DEFAULT_STRATEGY,
                    tools=list(tools or []),
                ),
            )
        except ServiceError as exc:
            if created and conversation_id:
                self.store.delete_conversation(conversation_id)
            yield problem(str(exc))
            return

        labels = self.audio_labels([*views, MessageView(message)])
        prefix = render.render_conversation(views, labels)
        new_audio = message.audio_id if message.audio_id != previous_audio else None
        user = render.render_user(
            message.text, message.choices, labels.get(new_audio) if new_audio else None
        )
        uploaded = {"conversation": conversation_id, "path": audio_path}
        events: list[ev.Event] = []

        def view(final: bool = False) -> dict[Any, Any]:
            rows, totals = self.trace(events)
            update: dict[Any, Any] = {
                c["chatbot"]: [*prefix, user, *render.render_run(events)],
                c["trace_df"]: rows,
                c["trace_totals"]: totals,
            }
            if final:
                update[c["ask_btn"]] = self.idle()
                conv = self.store.get_conversation(conversation_id)
                update[c["conv_list"]] = self.list_update(conversation_id)
                update[c["rename_box"]] = gr.update(value=conv.title if conv else "")
                update[c["export_btn"]] = self.export_update(conversation_id)
                views_now = self.service.conversation_view(conversation_id)
                update[c["run_select"]] = gr.update(
                    choices=self.run_choices(views_now), value=request.run_id
                )
            return update

        first = view()
        first.update(
            {
                c["conv_state"]: conversation_id,
                c["uploaded_state"]: uploaded,
                c["question"]: "",
                c["choices"]: "",
                c["status"]: _status(""),
                c["audio_note"]: self.audio_note(conversation_id),
                c["ask_btn"]: gr.update(value="Asking…", interactive=False),
                c["conv_list"]: self.list_update(conversation_id),
                c["run_select"]: gr.update(
                    choices=self.run_choices([*views, MessageView(message)])
                    + [(f"Running: {message.text[:48]}", request.run_id)],
                    value=request.run_id,
                ),
            }
        )
        yield first
        last = time.monotonic()
        try:
            async for event in self.service.stream(conversation_id, request):
                events.append(event)
                now = time.monotonic()
                if not isinstance(event, ev.PlannerDelta) or now - last >= UPDATE_EVERY_S:
                    last = now
                    yield view()
        except Exception as exc:  # shown in the chat; the service has stored the run's end
            events.append(
                ev.RunFailed(
                    run_id=request.run_id,
                    seq=(events[-1].seq + 1) if events else 1,
                    kind="internal_error",
                    message=f"{type(exc).__name__}: {exc}",
                )
            )
        yield view(final=True)

    def idle(self) -> dict[str, Any]:
        return gr.update(value="Ask", interactive=True)

    async def after_stop(self, conversation_id: str | None) -> tuple[Any, ...]:
        """After Stop: wait until the cancelled run has stored its end, then show it."""
        if not conversation_id or self.store.get_conversation(conversation_id) is None:
            return tuple(gr.skip() for _ in range(11))
        runs = [r for v in self.service.conversation_view(conversation_id) for r in v.runs]
        if runs:
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                run = self.store.get_run(runs[-1].info.id)
                if run is None or run.status != "running":
                    break
                await asyncio.sleep(0.1)
        return self.open_conversation(conversation_id)


def _status(message: str) -> dict[str, Any]:
    return gr.update(value=message, visible=bool(message))


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "file"


def build_ui(service: AgentService) -> gr.Blocks:
    ui = _Ui(service)
    default_planner = ui.available_planners[0]["name"] if ui.available_planners else None

    with gr.Blocks(title=TITLE, fill_width=True) as demo:
        conv_state = gr.State(None)
        uploaded_state = gr.State(None)

        with gr.Sidebar(label="Conversations", open=True, width=290, elem_id="sidebar"):
            gr.Markdown("### Conversations")
            new_btn = gr.Button("+ New conversation", variant="secondary", size="sm")
            conv_list = gr.Radio(
                choices=[],
                label="Past conversations (newest first)",
                elem_id="conversation-list",
            )
            with gr.Accordion("This conversation", open=True):
                rename_box = gr.Textbox(
                    label="Title", placeholder="Open a conversation to rename it", max_lines=1
                )
                with gr.Row():
                    rename_btn = gr.Button("Rename", size="sm", min_width=60)
                    delete_btn = gr.Button("Delete", size="sm", variant="stop", min_width=60)
                export_btn = gr.DownloadButton(
                    "Export as JSON",
                    value=None,
                    size="sm",
                    interactive=False,
                    elem_id="export-json",
                )

        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=460):
                gr.HTML(
                    f"<h1>{TITLE}</h1><p>{HELP_HTML}</p>",
                    head=f"<style>{CSS}</style>",
                    elem_id="header",
                    js_on_load=None,
                )
            with gr.Column(scale=2, min_width=340):
                planner = gr.Dropdown(
                    choices=[(p["label"] or p["name"], p["name"]) for p in ui.available_planners],
                    value=default_planner,
                    label="Planner",
                    interactive=bool(ui.available_planners),
                    elem_id="planner",
                )
                planner_info = gr.Markdown(ui.on_planner(default_planner), elem_id="planner-note")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=460):
                chatbot = gr.Chatbot(
                    label="Conversation",
                    height=640,
                    elem_id="chat",
                    placeholder=(
                        "**No question yet.** Give a recording and a question on the right; "
                        "the answer forms here, step by step."
                    ),
                    feedback_options=None,
                    buttons=["copy"],
                )
            with gr.Column(scale=2, min_width=340):
                audio = gr.Audio(
                    sources=["upload", "microphone"],
                    type="filepath",
                    label=f"Recording ({FORMATS})",
                    elem_id="audio-input",
                )
                audio_note = gr.Markdown("", elem_id="audio-note")
                question = gr.Textbox(
                    label="Question",
                    placeholder="e.g. Which sound is this?",
                    lines=2,
                    max_lines=6,
                    elem_id="question",
                )
                choices = gr.Textbox(
                    label="Answer choices (optional, one per line)",
                    placeholder="Dog barking\nRain\nChurch bells\nSiren",
                    lines=3,
                    max_lines=10,
                    elem_id="choices",
                )
                with gr.Row():
                    ask_btn = gr.Button("Ask", variant="primary", elem_id="ask", scale=4)
                    stop_btn = gr.Button(
                        "Stop", variant="secondary", elem_id="stop", scale=1, min_width=70
                    )
                status = gr.Markdown("", elem_id="status", visible=False)
                strategies = strategy_choices(ui.catalogue)
                strategy = gr.Dropdown(
                    choices=strategies,
                    value=next(
                        (n for _, n in strategies if n == DEFAULT_STRATEGY),
                        strategies[0][1] if strategies else None,
                    ),
                    label="Strategy",
                    info="The method the planner follows; each comes from a published agent.",
                    visible=bool(strategies),
                    elem_id="strategy",
                )
                with gr.Accordion(f"Tools ({len(ui.available_tools)} available)", open=False):
                    tools = gr.CheckboxGroup(
                        choices=[
                            (f"{t['label'] or t['name']} · {t['name']}", t["name"])
                            for t in ui.available_tools
                        ],
                        value=[t["name"] for t in ui.available_tools],
                        label="Tools the planner may call",
                        elem_id="tools",
                    )
                with gr.Accordion("Unavailable planners and tools", open=False):
                    gr.Markdown(unavailable_table(ui.catalogue))

        with gr.Accordion("Trace of an answer", open=False, elem_id="trace"):
            run_select = gr.Dropdown(
                choices=[], value=None, label="Run (latest by default)", elem_id="run-select"
            )
            trace_df = gr.Dataframe(
                value=[],
                headers=render.TRACE_COLUMNS,
                interactive=False,
                wrap=True,
                column_widths=["15%", "20%", "9%", "8%", "28%", "10%", "10%"],
                elem_id="trace-table",
            )
            trace_totals = gr.Markdown("", elem_id="trace-totals")

        ui.components = {
            "chatbot": chatbot,
            "conv_state": conv_state,
            "uploaded_state": uploaded_state,
            "question": question,
            "choices": choices,
            "status": status,
            "audio_note": audio_note,
            "conv_list": conv_list,
            "rename_box": rename_box,
            "export_btn": export_btn,
            "run_select": run_select,
            "trace_df": trace_df,
            "trace_totals": trace_totals,
            "ask_btn": ask_btn,
        }
        view_outputs = [
            conv_state,
            uploaded_state,
            chatbot,
            audio,
            audio_note,
            rename_box,
            export_btn,
            run_select,
            trace_df,
            trace_totals,
            status,
        ]

        demo.load(ui.on_load, outputs=conv_list)
        conv_list.input(ui.open_conversation, inputs=conv_list, outputs=view_outputs)
        new_btn.click(ui.new_and_list, outputs=[*view_outputs, conv_list])
        chatbot.clear(ui.new_and_list, outputs=[*view_outputs, conv_list])  # its trash icon
        rename_btn.click(
            ui.rename, inputs=[conv_state, rename_box], outputs=[conv_list, export_btn]
        )
        rename_box.submit(
            ui.rename, inputs=[conv_state, rename_box], outputs=[conv_list, export_btn]
        )
        delete_btn.click(ui.delete, inputs=conv_state, outputs=[*view_outputs, conv_list])
        run_select.input(ui.select_run, inputs=run_select, outputs=[trace_df, trace_totals])
        planner.change(ui.on_planner, inputs=planner, outputs=planner_info)

        ask_inputs = [
            conv_state, uploaded_state, audio, question, choices, planner, tools, strategy,
        ]  # fmt: skip
        ask_outputs = list(ui.components.values())
        ask_options: dict[str, Any] = {
            "inputs": ask_inputs,
            "outputs": ask_outputs,
            "concurrency_limit": 4,
            "show_progress": "hidden",  # the chat shows progress: pending panels
        }
        ask_event = ask_btn.click(ui.ask, **ask_options)
        ask_event.then(ui.idle, outputs=ask_btn)
        submit_event = question.submit(ui.ask, **ask_options)
        submit_event.then(ui.idle, outputs=ask_btn)
        # Gradio cancels after the handler of this click; the stored end is read in the next step.
        stop_btn.click(None, cancels=[ask_event, submit_event]).then(
            ui.after_stop, inputs=conv_state, outputs=view_outputs
        ).then(ui.idle, outputs=ask_btn)
    return demo
