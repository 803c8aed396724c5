// Page behaviour of the chat UI, run once when the page loads (frontend/ui.py passes it to
// the header's js_on_load). Plain DOM code; every part is guarded so a missing element is
// never an error.
(() => {
  if (window.__askAudio) return;
  const $ = (sel, root = document) => root.querySelector(sel);
  const narrow = () => window.matchMedia("(max-width: 700px)").matches;

  // -- Enter sends, Shift+Enter adds a line (in the question box) ------------------------
  document.addEventListener(
    "keydown",
    (event) => {
      const target = event.target;
      if (!(target instanceof HTMLTextAreaElement) || !target.closest("#question")) return;
      if (event.key !== "Enter" || event.isComposing) return;
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      event.preventDefault();
      event.stopPropagation(); // Gradio's own handler would send on Shift+Enter
      if (event.shiftKey) {
        if (!document.execCommand("insertText", false, "\n")) {
          const at = target.selectionStart;
          target.setRangeText("\n", at, target.selectionEnd, "end");
          target.dispatchEvent(new Event("input", { bubbles: true }));
        }
        return;
      }
      const ask = $("#ask");
      if (ask && !ask.disabled) ask.click();
    },
    true,
  );

  // -- After Ask: the chat in view (phones), the chat following the newest text -----------
  document.addEventListener(
    "click",
    (event) => {
      if (!(event.target instanceof Element) || !event.target.closest("#ask")) return;
      if (narrow()) {
        const chat = $("#chat");
        if (chat) chat.scrollIntoView({ block: "start", behavior: "instant" });
      }
    },
    true,
  );

  // -- The sidebar: closed on narrow screens, and after a conversation is opened there ----
  function sidebarOpen() {
    const bar = $(".sidebar");
    return !!bar && bar.classList.contains("open");
  }
  function closeSidebar() {
    if (!sidebarOpen()) return;
    const toggle = $(".sidebar .toggle-button") || $("button.toggle-button");
    if (toggle) toggle.click();
  }
  window.askAudioCloseSidebarOnPhone = () => {
    if (narrow()) closeSidebar();
  };
  // a window made narrow (a phone turned, a window resized) gets its page back too
  window.matchMedia("(max-width: 700px)").addEventListener("change", (event) => {
    if (event.matches) closeSidebar();
  });
  let sidebarTries = 0;
  const sidebarTimer = setInterval(() => {
    sidebarTries += 1;
    if ($(".sidebar") || sidebarTries > 50) {
      clearInterval(sidebarTimer);
      if (narrow()) closeSidebar();
    }
  }, 100);

  // -- Timeline: a click plays the recording from that time -------------------------------
  function seek(seconds) {
    const player = $("#player-chip audio");
    if (!player || !Number.isFinite(seconds)) return;
    player.currentTime = Math.max(0, seconds);
    const note = $("#player-chip .chip-status");
    if (note) note.textContent = `Playing from ${seconds.toFixed(2)} s`;
    const playing = player.play();
    if (playing && playing.catch) playing.catch(() => {});
  }
  window.askAudioSeek = seek;
  function hookPlots() {
    document.querySelectorAll(".timeline-plot .js-plotly-plot").forEach((plot) => {
      if (plot.__askAudioSeek || typeof plot.on !== "function") return;
      plot.__askAudioSeek = true;
      plot.on("plotly_click", (data) => {
        const point = data && data.points && data.points[0];
        if (!point) return;
        const start = Array.isArray(point.customdata) ? point.customdata[0] : point.x;
        seek(Number(start));
      });
    });
  }

  // -- Labels: Gradio's panel toggles come with empty aria-labels --------------------------
  function labelControls() {
    // A panel's title is the (focusable) toggle; the arrow button inside it is decoration, a
    // second Tab stop and a control nested in a control: take it out of the keyboard order.
    document.querySelectorAll('.thought-group .title[role="button"] button').forEach((el) => {
      if (el.disabled) return;
      el.disabled = true; // not focusable; the title around it takes the clicks (page.css)
      el.setAttribute("tabindex", "-1");
      el.setAttribute("aria-hidden", "true");
    });
    document.querySelectorAll('button[aria-label=""], [role="button"][aria-label=""]').forEach((el) => {
      const text = (el.innerText || el.textContent || "").trim().split("\n")[0];
      el.setAttribute("aria-label", text || "Show or hide details");
    });
  }

  let pending = false;
  const observer = new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      hookPlots();
      labelControls();
    });
  });
  observer.observe(document.body, { childList: true, subtree: true });
  window.__askAudio = true;
})();
