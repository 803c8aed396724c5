// The sidebar's conversation list (the js_on_load of its gr.HTML; `element`, `trigger` and
// `watch` come from Gradio). One Tab stop: the arrow keys, Home and End move inside the list,
// Enter or Space opens; the search box filters it as you type. The address bar follows the
// open conversation (/c/{id}); back and forward open the conversation of the address.
const items = () => Array.from(element.querySelectorAll(".conv-item"));
const shown = () => items().filter((item) => !item.hidden);
let refocus = false;
const TITLE = "Ask about audio";
// the app's own root (it may be served under a prefix): the address without /c/{id}
const base = window.location.pathname.replace(/\/c\/[^/]+\/?$/, "/").replace(/\/?$/, "/");

function rove(target, focus) {
  items().forEach((item) => (item.tabIndex = -1));
  if (!target) return;
  target.tabIndex = 0;
  if (focus) target.focus();
}

function open(item) {
  refocus = element.contains(document.activeElement);
  trigger("click", { id: item.dataset.id });
  if (window.askAudioCloseSidebarOnPhone) window.askAudioCloseSidebarOnPhone();
}

function filter() {
  const box = document.querySelector("#conv-search input, #conv-search textarea");
  const words = (box ? box.value : "").toLowerCase().split(/\s+/).filter(Boolean);
  items().forEach((item) => {
    const text = item.dataset.search || "";
    item.hidden = !words.every((word) => text.includes(word));
  });
  element.querySelectorAll(".conv-group").forEach((group) => {
    group.hidden = !group.querySelector(".conv-item:not([hidden])");
  });
  const none = element.querySelector(".conv-nomatch");
  if (none) none.hidden = items().length === 0 || shown().length > 0;
  const current = items().find((item) => item.tabIndex === 0);
  if (!current || current.hidden) {
    const selected = shown().find((item) => item.getAttribute("aria-selected") === "true");
    rove(selected || shown()[0], false);
  }
}

function address() {
  // The open conversation (data-open) is the address: a new entry in the browser's history
  // when it changes, the same one replaced when the address named one that is not there.
  const root = element.querySelector(".conv-root");
  if (!root || root.dataset.pending === "1") return;
  const id = root.dataset.open || "";
  const wanted = id ? `${base}c/${id}` : base;
  if (window.location.pathname !== wanted) {
    if (root.dataset.missing === "1") window.history.replaceState({ id }, "", wanted);
    else window.history.pushState({ id }, "", wanted);
  }
  const selected = element.querySelector('.conv-item[aria-selected="true"] .conv-title');
  document.title = id && selected ? `${selected.textContent} · ${TITLE}` : TITLE;
}

window.addEventListener("popstate", () => {
  const match = window.location.pathname.match(/\/c\/([^/]+)\/?$/);
  trigger("click", { id: match ? match[1] : null });
});

element.addEventListener("click", (event) => {
  const item = event.target.closest(".conv-item");
  if (item) {
    rove(item, false);
    open(item);
  }
});

element.addEventListener("keydown", (event) => {
  const item = event.target.closest(".conv-item");
  if (!item) return;
  const list = shown();
  const at = list.indexOf(item);
  let next = null;
  if (event.key === "ArrowDown") next = list[Math.min(at + 1, list.length - 1)];
  else if (event.key === "ArrowUp") next = list[Math.max(at - 1, 0)];
  else if (event.key === "Home") next = list[0];
  else if (event.key === "End") next = list[list.length - 1];
  else if (event.key === "Enter" || event.key === " ") {
    event.preventDefault();
    open(item);
    return;
  }
  if (next) {
    event.preventDefault();
    rove(next, true);
  }
});

document.addEventListener("input", (event) => {
  if (event.target instanceof Element && event.target.closest("#conv-search")) filter();
});

watch("value", () => {
  filter();
  address();
  if (refocus) {
    refocus = false;
    const selected = element.querySelector('.conv-item[aria-selected="true"]');
    if (selected) selected.focus();
  }
});
filter();
