"""The question shown in the chat the moment it is sent, before the server has answered.

Asking goes through Gradio's queue, the question is stored, the conversation before it read
and rendered, and only then does the chat show it: 0.3 s on a quiet machine, up to 13 s
under load (issue 33). ``ECHO_JS`` runs in the browser on the send button's click, before the
request leaves: it adds the question as the last message of the chat (a plain bubble), and
takes it away as soon as the server's own copy is drawn, when the question is refused (the
composer's status line shows why), or after ``ECHO_MAX_S``. It passes the inputs on
unchanged. Compare mode has its own columns and is not echoed.
"""

from __future__ import annotations

ECHO_MAX_S = 120  # a question not drawn by then: the echo goes (the run shows when reopened)

ECHO_JS = (
    """(...args) => {
  try {
    const [mode, , , question] = args;
    const text = (question || "").trim();
    const log = document.querySelector("#chat [role=log]");
    if (!text || mode === "compare" || !log) return args;
    document.querySelectorAll("#chat .asking-echo").forEach((old) => old.remove());
    const userRows = () => log.querySelectorAll(".user-row:not(.asking-echo)").length;
    const before = userRows();
    const statusNow = () => {
      const status = document.querySelector("#status");
      return status && status.offsetParent !== null ? status.innerText.trim() : "";
    };
    const statusBefore = statusNow();
    const placeholder = log.querySelector(".placeholder-content");
    if (placeholder) placeholder.style.display = "none";
    const row = document.createElement("div");
    row.className = "asking-echo";
    row.setAttribute("style",
      "display:flex;justify-content:flex-end;margin:var(--spacing-xl, 12px) 0;");
    const bubble = document.createElement("div");
    bubble.setAttribute("style",
      "max-width:80%;padding:var(--spacing-lg, 8px) var(--spacing-xl, 12px);" +
      "border-radius:var(--radius-xl, 12px);background:var(--color-accent-soft, #eef2ff);" +
      "color:var(--body-text-color, inherit);white-space:pre-wrap;overflow-wrap:anywhere;");
    bubble.textContent = text;
    row.appendChild(bubble);
    (log.querySelector(".message-wrap") || log).appendChild(row);
    row.scrollIntoView({ block: "end" });
    const begun = Date.now();
    const done = (restore) => {
      observer.disconnect();
      clearInterval(timer);
      row.remove();
      if (restore && placeholder && placeholder.isConnected) placeholder.style.display = "";
    };
    const firstLine = text.split("\\n")[0];
    const lastRow = () => Array.from(log.querySelectorAll(".user-row:not(.asking-echo)")).pop();
    const lastBefore = lastRow();
    const drawn = () => {
      const last = lastRow();
      return !!last && last !== lastBefore && last.innerText.includes(firstLine);
    };
    const check = () => {
      if (userRows() > before || drawn()) return done(false);
      const said = statusNow();
      if (said && said !== statusBefore) return done(true);
      if (Date.now() - begun > """
    + str(ECHO_MAX_S * 1000)
    + """) done(true);
    };
    const observer = new MutationObserver(check);
    const what = { childList: true, subtree: true, characterData: true };
    for (const watched of document.querySelectorAll("#chat, #composer")) {
      observer.observe(watched, what);
    }
    const timer = setInterval(check, 500);
  } catch (error) {
    console.warn("question echo", error);
  }
  return args;
}"""
)
