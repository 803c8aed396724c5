// Page behaviour of the chat UI and the shared view, run once when the page loads (the
// header's js_on_load; frontend/assets.py). Plain DOM code; every part is guarded so a
// missing element is never an error.
(() => {
  if (window.__askAudio) return;
  window.__askAudio = true;
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
  const narrow = () => window.matchMedia("(max-width: 700px)").matches;
  const settings = () => $("#header [data-max-upload]")?.dataset || {};

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

  // -- The sidebars: the history closed on narrow screens and after any choice there;
  //    the settings drawer opened by the header's Settings button -----------------------
  const sidebar = (right) => $(right ? ".sidebar.right" : ".sidebar:not(.right)");
  function toggle(right) {
    const button = sidebar(right)?.querySelector(".toggle-button");
    if (button) button.click();
  }
  function closeSidebar() {
    if (sidebar(false)?.classList.contains("open")) toggle(false);
  }
  window.askAudioCloseSidebarOnPhone = () => {
    if (narrow()) closeSidebar();
  };
  window.matchMedia("(max-width: 700px)").addEventListener("change", (event) => {
    if (event.matches) closeSidebar(); // a phone turned, a window made narrow
  });
  let sidebarTries = 0;
  const sidebarTimer = setInterval(() => {
    sidebarTries += 1;
    if (sidebar(false) || sidebarTries > 50) {
      clearInterval(sidebarTimer);
      if (narrow()) closeSidebar();
    }
  }, 100);
  const CHOICES = "#new-conversation, #confirm-delete, #undo, #share-btn, #unshare-btn, #rename";
  document.addEventListener("click", (event) => {
    if (!(event.target instanceof Element)) return;
    if (event.target.closest("#settings-btn")) {
      if (narrow()) closeSidebar();
      toggle(true);
    } else if (event.target.closest(CHOICES)) {
      window.askAudioCloseSidebarOnPhone();
    }
  });

  // -- Escape closes the settings drawer (unless it closes an open list inside it first),
  //    and the focus goes back to the button that opened it ------------------------------
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || event.isComposing) return;
    const drawer = sidebar(true);
    if (!drawer?.classList.contains("open")) return;
    if (drawer.querySelector("ul.options")) return; // a dropdown's list: Escape is its own
    toggle(true);
    $("#settings-btn")?.focus();
  });

  // -- Uploads: a file over the size limit is refused here, with our own message --------
  function note(text) {
    const box = $("#client-note");
    if (box) box.textContent = text;
  }
  document.addEventListener(
    "change",
    (event) => {
      const input = event.target;
      if (!(input instanceof HTMLInputElement) || input.type !== "file") return;
      if (!input.closest("#composer")) return;
      const limit = Number(settings().maxUpload || 0);
      const file = input.files && input.files[0];
      if (!file || !limit || file.size <= limit) {
        note("");
        return;
      }
      event.stopImmediatePropagation(); // never sent: Gradio's own check would say it
      input.value = "";
      const mb = (bytes) => Math.round(bytes / 1e6);
      note(`${file.name} is ${mb(file.size)} MB; the limit is ${mb(limit)} MB. Nothing was uploaded.`);
    },
    true,
  );

  // The same file can be attached again (a browser fires no change for the file it holds).
  document.addEventListener("change", (event) => {
    const input = event.target;
    if (input instanceof HTMLInputElement && input.type === "file" && input.closest("#composer")) {
      setTimeout(() => (input.value = ""), 0);
    }
  });

  // -- Log out: a POST that ends the session on the server; a plain visit where the
  //    server only has GET /logout ---------------------------------------------------------
  document.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.matches(".account-logout")) return;
    event.preventDefault();
    try {
      const response = await fetch(form.action, { method: "POST", credentials: "same-origin" });
      if (response.status === 405 || response.status === 404) window.location.href = form.action;
      else window.location.href = response.url || form.action;
    } catch (error) {
      window.location.href = form.action;
    }
  });

  // -- Playing a recording: timelines seek it, transcript segments seek it, a playhead ----
  const audioId = (audio) => (audio.currentSrc || audio.src || "").split("/").pop();
  const plotAudio = (plot) => plot?.layout?.meta?.audio || plot?._fullLayout?.meta?.audio || "";
  function playerFor(id, near) {
    const players = $$("audio").filter((a) => audioId(a) === id);
    const shown = players.filter((a) => a.offsetParent !== null);
    if (near) {
      const tab = near.closest(".tabitem");
      const inTab = shown.find((a) => tab && tab.contains(a));
      if (inTab) return inTab;
    }
    return shown[0] || players[0] || null;
  }
  function seek(player, seconds) {
    if (!player || !Number.isFinite(seconds)) return;
    player.currentTime = Math.max(0, seconds);
    const playing = player.play();
    if (playing && playing.catch) playing.catch(() => {});
    drawPlayheads(player);
  }
  window.askAudioSeek = (seconds) => seek($("#trace-player audio") || $("audio"), seconds);

  function drawPlayheads(player) {
    const id = audioId(player);
    $$(".timeline-plot .js-plotly-plot").forEach((plot) => {
      if (plotAudio(plot) !== id) return;
      const layout = plot._fullLayout;
      const axis = layout && layout.xaxis;
      if (!axis || typeof axis.l2p !== "function") return;
      let line = plot.querySelector(":scope > .playhead");
      if (!line) {
        line = document.createElement("div");
        line.className = "playhead";
        line.setAttribute("aria-hidden", "true");
        plot.style.position = "relative";
        plot.appendChild(line);
      }
      const [start, end] = axis.range;
      const t = player.currentTime;
      line.hidden = !(t >= start && t <= end) || (player.paused && t === 0);
      line.style.left = `${axis._offset + axis.l2p(t)}px`;
      line.style.top = `${layout._size.t}px`;
      line.style.height = `${layout._size.h}px`;
      line.dataset.time = t.toFixed(2);
    });
  }
  const lastPlayed = new Map(); // recording id -> the player last used for it
  let animating = null;
  function follow(player) {
    if (animating === player) return;
    animating = player;
    const step = () => {
      if (animating !== player) return;
      drawPlayheads(player);
      if (player.paused || player.ended) animating = null;
      else requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  }
  for (const type of ["play", "seeked", "timeupdate", "pause"]) {
    document.addEventListener(
      type,
      (event) => {
        if (!(event.target instanceof HTMLAudioElement)) return;
        lastPlayed.set(audioId(event.target), event.target);
        drawPlayheads(event.target);
        if (type === "play") follow(event.target);
      },
      true,
    );
  }

  function hookPlots() {
    $$(".timeline-plot .js-plotly-plot").forEach((plot) => {
      if (plot.__askAudio || typeof plot.on !== "function") return;
      plot.__askAudio = true;
      plot.on("plotly_click", (data) => {
        const point = data && data.points && data.points[0];
        if (!point) return;
        const start = Array.isArray(point.customdata) ? point.customdata[0] : point.x;
        seek(playerFor(plotAudio(plot), plot), Number(start));
      });
      plot.on("plotly_relayout", () => {
        const player = lastPlayed.get(plotAudio(plot)) || playerFor(plotAudio(plot), plot);
        if (player) drawPlayheads(player);
      });
      // a timeline drawn after its recording was played (another tab): where it stands now
      const played = lastPlayed.get(plotAudio(plot));
      if (played && played.isConnected) drawPlayheads(played);
    });
  }

  // Transcript segments ("[1.20–3.40 s] words") in the chat's tool panels: buttons that
  // play the question's recording from there (and move the timeline's playhead with it).
  const SEGMENT = /\[(\d+(?:\.\d+)?)–(\d+(?:\.\d+)?) s\]/g;
  function markSegments() {
    $$("#chat .message-content, #shared-chat .message-content, .compare-column .message-content").forEach(
      (content) => {
        if (!SEGMENT.test(content.textContent || "")) return;
        SEGMENT.lastIndex = 0;
        const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT);
        const nodes = [];
        while (walker.nextNode()) {
          const node = walker.currentNode;
          if (node.parentElement?.closest("button.seek, code, pre")) continue;
          SEGMENT.lastIndex = 0;
          if (SEGMENT.test(node.nodeValue)) nodes.push(node);
        }
        nodes.forEach((node) => {
          const text = node.nodeValue;
          const parts = document.createDocumentFragment();
          let last = 0;
          SEGMENT.lastIndex = 0;
          for (const match of text.matchAll(SEGMENT)) {
            parts.append(text.slice(last, match.index));
            const button = document.createElement("button");
            button.type = "button";
            button.className = "seek";
            button.dataset.start = match[1];
            button.textContent = match[0];
            button.setAttribute("aria-label", `Play the recording from ${match[1]} s`);
            parts.append(button);
            last = match.index + match[0].length;
          }
          parts.append(text.slice(last));
          node.replaceWith(parts);
        });
      },
    );
  }
  document.addEventListener("click", (event) => {
    const button = event.target instanceof Element && event.target.closest("button.seek");
    if (!button) return;
    event.preventDefault();
    event.stopPropagation(); // not the panel's own toggle
    const chat = button.closest("#chat, #shared-chat, .compare-column") || document.body;
    const before = $$("audio", chat).filter(
      (a) => a.compareDocumentPosition(button) & Node.DOCUMENT_POSITION_FOLLOWING,
    );
    const player = before[before.length - 1] || $("audio", chat) || $("#trace-player audio");
    seek(player, Number(button.dataset.start));
  });

  // -- Timelines on a phone: fewer ticks, upright labels, a short axis title ---------------
  function xTitle(plot, key) {
    const title = plot.layout?.[key]?.title;
    const text = typeof title === "string" ? title : title?.text || "";
    if (!text || text.length <= 12) return {};
    return { [`${key}.title.text`]: "time (s) · drag: zoom", [`${key}.title.font.size`]: 11 };
  }
  function fitPlots() {
    if (!narrow() || !window.Plotly) return;
    $$(".timeline-plot .js-plotly-plot").forEach((plot) => {
      if (!plot.data || plot.__askAudioNarrow === plot.data) return; // once per figure
      plot.__askAudioNarrow = plot.data;
      const update = { "margin.l": 92, "margin.r": 8, "title.font.size": 12 };
      Object.keys(plot._fullLayout || {})
        .filter((key) => /^[xy]axis\d*$/.test(key))
        .forEach((key) =>
          Object.assign(
            update,
            key.startsWith("x")
              ? {
                  [`${key}.nticks`]: 5,
                  [`${key}.tickangle`]: 0,
                  [`${key}.dtick`]: null,
                  ...xTitle(plot, key), // the desktop's long axis title is cut on a phone
                }
              : { [`${key}.tickfont.size`]: 10, [`${key}.title.font.size`]: 10 },
          ),
        );
      window.Plotly.relayout(plot, update).catch(() => {});
    });
  }

  // -- Labels: Gradio's panel toggles come with empty aria-labels; icon buttons get a tip --
  function labelControls() {
    // A panel's title is the (focusable) toggle; the arrow button inside it is decoration, a
    // second Tab stop and a control nested in a control: take it out of the keyboard order.
    $$('.thought-group .title[role="button"] button').forEach((el) => {
      if (el.disabled) return;
      el.disabled = true; // not focusable; the title around it takes the clicks (page.css)
      el.setAttribute("tabindex", "-1");
      el.setAttribute("aria-hidden", "true");
    });
    $$('button[aria-label=""], [role="button"][aria-label=""]').forEach((el) => {
      const text = (el.innerText || el.textContent || "").trim().split("\n")[0];
      el.setAttribute("aria-label", text || "Show or hide details");
    });
    $$(".icon-btn").forEach((el) => {
      const name = (el.textContent || "").trim();
      if (name && el.title !== name) el.title = name;
    });
    // The two sidebars' handles: say which is which
    const left = $("#sidebar .toggle-button");
    if (left) left.setAttribute("aria-label", "Show or hide the conversations");
    const right = $("#settings-drawer .toggle-button");
    if (right) right.setAttribute("aria-label", "Close the settings");
    // The chat's examples: a list of buttons with no list items in it; a group is what it is
    $$('.examples[role="list"]').forEach((el) => {
      el.setAttribute("role", "group");
      el.setAttribute("aria-label", "Examples: one click asks");
    });
    // Toasts: their header is a button (it folds the message) with the close button in it,
    // a control in a control; the close button is the one control
    $$(".toast-header[role='button']").forEach((el) => {
      el.removeAttribute("role");
      el.removeAttribute("tabindex");
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
      markSegments();
      fitPlots();
    });
  });
  observer.observe(document.body, { childList: true, subtree: true, characterData: true });
})();
