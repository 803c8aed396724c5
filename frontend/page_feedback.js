// What the page shows at once, before the server answers (its answers come through Gradio's
// queue and can take seconds on a loaded machine): the Undo bar of a deletion and an upload's
// progress (the question just asked: frontend/echo.py); and copies of a message as plain
// text. Run with page.js
// (frontend/assets.py); every part is guarded so a missing element is never an error.
(() => {
  if (window.__askAudioFeedback) return;
  window.__askAudioFeedback = true;
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const shownEl = (el) => !!el && el.offsetParent !== null;

  // -- Delete: an Undo bar at once. The server's own bar (#undo-bar) replaces it when its
  //    answer arrives; its window starts then (frontend/conversation_actions.py). An Undo
  //    pressed before that is passed on to the server's bar as soon as it is there. ---------
  const DELETES = "#confirm-delete, #chat .top-panel button[aria-label='Clear']";
  let early = null; // { bar, undone, since, toasts }
  const toastCount = () => $$('[data-testid="toast-body"]').length;
  function dropEarly() {
    if (!early) return;
    const hadFocus = early.bar.contains(document.activeElement);
    early.bar.remove();
    early = null;
    return hadFocus;
  }
  function showEarly() {
    dropEarly();
    const title = $('#conversation-list .conv-item[aria-selected="true"] .conv-title');
    const bar = document.createElement("div");
    bar.id = "undo-early";
    bar.setAttribute("role", "status");
    const text = document.createElement("p");
    text.textContent = title ? `Deleted “${title.textContent.trim()}”.` : "Deleted.";
    const button = document.createElement("button");
    button.type = "button";
    button.id = "undo-early-btn";
    button.textContent = "Undo";
    bar.append(text, button);
    document.body.append(bar);
    early = { bar, undone: false, since: Date.now(), toasts: toastCount() };
  }
  function earlyUndo() {
    if (!early || early.undone) return;
    early.undone = true;
    early.bar.querySelector("p").textContent = "Restoring…";
    early.bar.querySelector("button").disabled = true;
    passUndo();
  }
  function passUndo() {
    // the server's bar is there: it takes over (and an early Undo is pressed on it)
    const real = $("#undo");
    if (!early || !real) {
      // no bar comes: the server refused (its message is a toast)
      if (early && (toastCount() > early.toasts || Date.now() - early.since > 120_000)) dropEarly();
      return;
    }
    const undone = early.undone;
    const hadFocus = dropEarly();
    if (undone) real.click();
    else if (hadFocus) real.focus();
  }
  document.addEventListener(
    "click",
    (event) => {
      if (!(event.target instanceof Element)) return;
      if (event.target.closest("#undo-early-btn")) earlyUndo();
      else if (event.target.closest(DELETES)) showEarly();
    },
    true,
  );

  // -- Uploads: "Uploading name (size)…" under the composer until the recording is attached.
  //    (No percentage: Gradio's client sends the file with the fetch it kept at its start.)
  let uploading = null; // { name, size, since }
  function uploadNote(text) {
    let note = $("#upload-note");
    const home = $("#client-note")?.parentElement;
    if (!note && home && text) {
      note = document.createElement("p");
      note.id = "upload-note";
      note.setAttribute("role", "status");
      home.append(note);
    }
    if (note) {
      note.textContent = text;
      note.hidden = !text;
    }
  }
  const kb = (bytes) => (bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${Math.ceil(bytes / 1e3)} KB`);
  function showUpload() {
    if (uploading) uploadNote(`Uploading ${uploading.name} (${kb(uploading.size)})…`);
  }
  function settleUpload() {
    if (!uploading) return;
    const chip = ($("#attachment")?.innerText || "").includes(uploading.name);
    const status = ($("#status")?.innerText || "").trim() !== "" && shownEl($("#status"));
    const refused = ($("#client-note")?.textContent || "").trim() !== "";
    if (chip || status || refused || Date.now() - uploading.since > 600_000) {
      uploading = null;
      uploadNote("");
    }
  }
  document.addEventListener(
    "change",
    (event) => {
      const input = event.target;
      if (!(input instanceof HTMLInputElement) || input.type !== "file") return;
      if (!input.closest("#composer")) return;
      const file = input.files && input.files[0];
      if (!file) return;
      uploading = { name: file.name, size: file.size, since: Date.now() };
      showUpload();
      setTimeout(settleUpload, 0); // refused at once by the size check (page.js)
    },
    false, // after page.js's size check, which stops a refused file before this
  );
  // -- Copy of a message: its text as shown (and its HTML), not its markdown source ---------
  function shownText(row) {
    const parts = $$('[data-testid="bot"], [data-testid="user"]', row).filter(
      (el) => !el.querySelector(".thought-group"), // a tool's or a reasoning panel
    );
    const contents = (parts.length ? parts : [row]).map(
      (el) => $(".message-content", el) || el,
    );
    return {
      text: contents.map((el) => el.innerText.trim()).filter(Boolean).join("\n\n"),
      html: contents.map((el) => el.innerHTML).join("\n"),
    };
  }
  function messageOf(button) {
    const buttons = button.closest(".message-buttons");
    let row = buttons && buttons.previousElementSibling;
    while (row && !row.matches(".message-row")) row = row.previousElementSibling;
    return row;
  }
  document.addEventListener(
    "click",
    (event) => {
      const button =
        event.target instanceof Element && event.target.closest('button[aria-label="Copy message"]');
      const clipboard = navigator.clipboard;
      if (!button || !clipboard) return;
      const row = messageOf(button);
      if (!row) return;
      const { text, html } = shownText(row);
      if (!text) return;
      // Gradio's own handler writes the markdown (and shows its tick): this click writes ours
      const own = Object.prototype.hasOwnProperty.call(clipboard, "writeText");
      clipboard.writeText = () => {
        const plain = new Blob([text], { type: "text/plain" });
        const rich = new Blob([html], { type: "text/html" });
        if (window.ClipboardItem && clipboard.write) {
          return clipboard
            .write([new ClipboardItem({ "text/plain": plain, "text/html": rich })])
            .catch(() => Object.getPrototypeOf(clipboard).writeText.call(clipboard, text));
        }
        return Object.getPrototypeOf(clipboard).writeText.call(clipboard, text);
      };
      setTimeout(() => {
        if (!own) delete clipboard.writeText;
      }, 0);
    },
    true,
  );

  // -- The settings drawer on a phone closes after a choice in one of its lists -------------
  const narrow = () => window.matchMedia("(max-width: 700px)").matches;
  document.addEventListener(
    "pointerdown",
    (event) => {
      if (!(event.target instanceof Element) || !narrow()) return;
      const option = event.target.closest('#settings-drawer [role="option"]');
      if (!option || option.closest("#tools")) return; // tools: several may be picked
      let tries = 0;
      const close = setInterval(() => {
        // once the list has closed on the choice (a slow page takes a while)
        tries += 1;
        const drawer = $("#settings-drawer.open");
        if (!drawer || tries > 50) clearInterval(close);
        else if (!drawer.querySelector('[role="listbox"]')) {
          clearInterval(close);
          drawer.querySelector(".toggle-button")?.click();
          $("#settings-btn")?.focus();
        }
      }, 150);
    },
    true,
  );

  // -- The microphone: without one, say so in full (Gradio's picker shows it cut) ---------
  const NO_MIC =
    "No microphone found. Connect one and allow this page to use it, or attach a recording.";
  function micNote() {
    const select = $("#mic select.mic-select");
    let note = $("#mic-note");
    const missing = !!select && select.disabled && /no microphone/i.test(select.innerText || "");
    if (missing && !note) {
      note = document.createElement("p");
      note.id = "mic-note";
      note.setAttribute("role", "alert");
      note.textContent = NO_MIC;
      select.closest(".controls")?.after(note);
    } else if (!missing && note) note.remove();
  }

  let pending = false;
  new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      passUndo();
      settleUpload();
      micNote();
    });
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
})();
