"""The composer pinned under the chat: the recording attached for the next question (a chip
with its player), the microphone, answer choices as chips, the question, and the icon buttons
(attach, record, choices, retry, edit, stop, send)."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

AUDIO_TYPES = ["audio", ".wav", ".mp3", ".ogg", ".flac", ".m4a", ".webm"]


def icon_button(label: str, icon: str, elem_id: str, **kwargs: object) -> gr.Button:
    """A button drawn as an icon (``page.css``); its label stays its accessible name."""
    return gr.Button(
        label,
        elem_id=elem_id,
        elem_classes=["icon-btn", f"icon-{icon}"],
        min_width=44,
        scale=0,
        **kwargs,  # type: ignore[arg-type]
    )


@dataclass
class Composer:
    attachment_row: gr.Row
    attachment: gr.HTML  # the recording the next question uses: name, player
    remove_btn: gr.Button
    audio_note: gr.Markdown  # "Follow-up questions use ..."
    mic_panel: gr.Column
    mic: gr.Audio
    choices: gr.Dropdown  # answer choices as chips
    question: gr.Textbox
    attach_btn: gr.UploadButton
    record_btn: gr.Button
    choices_btn: gr.Button
    retry_btn: gr.Button
    edit_btn: gr.Button
    stop_btn: gr.Button
    ask_btn: gr.Button
    status: gr.Markdown


def build_composer() -> Composer:
    with gr.Column(elem_id="composer"):
        with gr.Row(visible=False, elem_id="attachment-row", equal_height=True) as attachment_row:
            attachment = gr.HTML("", elem_id="attachment")
            remove_btn = icon_button("Remove the recording", "close", "remove-audio")
        audio_note = gr.Markdown("", elem_id="audio-note")
        with gr.Column(visible=False, elem_id="mic-panel") as mic_panel:
            mic = gr.Audio(
                sources=["microphone"],
                type="filepath",
                label="Record a question's audio",
                elem_id="mic",
            )
        choices = gr.Dropdown(
            choices=[],
            value=[],
            multiselect=True,
            allow_custom_value=True,
            visible=False,
            label="Answer choices (optional): type one, press Enter",
            elem_id="choices",
        )
        question = gr.Textbox(
            label="Question",
            show_label=False,
            placeholder="Ask about the recording…",
            lines=1,
            max_lines=6,
            elem_id="question",
        )
        with gr.Row(elem_id="composer-tools", equal_height=True):
            attach_btn = gr.UploadButton(
                "Attach a recording",
                file_types=AUDIO_TYPES,
                type="filepath",
                elem_id="attach",
                elem_classes=["icon-btn", "icon-attach"],
                min_width=44,
                scale=0,
            )
            record_btn = icon_button("Record with the microphone", "mic", "record")
            choices_btn = icon_button("Answer choices", "choices", "choices-btn")
            retry_btn = icon_button("Retry last question", "retry", "retry")
            edit_btn = icon_button("Edit last question", "edit", "edit")
            gr.Markdown("**Enter** sends · **Shift+Enter** adds a line", elem_id="input-hint")
            stop_btn = icon_button("Stop", "stop", "stop", interactive=False)
            ask_btn = icon_button("Ask", "send", "ask", variant="primary")
        status = gr.Markdown("", elem_id="status", visible=False)
        # the page's own messages (a file too large to send): written by page.js
        gr.HTML('<p id="client-note" role="alert"></p>', elem_id="client-note-box")
    return Composer(
        attachment_row=attachment_row,
        attachment=attachment,
        remove_btn=remove_btn,
        audio_note=audio_note,
        mic_panel=mic_panel,
        mic=mic,
        choices=choices,
        question=question,
        attach_btn=attach_btn,
        record_btn=record_btn,
        choices_btn=choices_btn,
        retry_btn=retry_btn,
        edit_btn=edit_btn,
        stop_btn=stop_btn,
        ask_btn=ask_btn,
        status=status,
    )
