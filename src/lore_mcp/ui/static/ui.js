// The quick switcher: Ctrl+K (or the button) opens it; type a title or an alias,
// arrows choose, Enter opens the page.
"use strict";

(function () {
  const dialog = document.getElementById("switcher");
  const input = document.getElementById("switch-input");
  const list = document.getElementById("switch-results");
  const button = document.getElementById("switch-open");
  if (!dialog || !input || !list) return;
  let results = [], chosen = 0, timer = null, asked = 0;

  function pageUrl(slug) {
    return "/page/" + slug.split("/").map(encodeURIComponent).join("/");
  }

  function open() {
    input.value = "";
    list.replaceChildren();
    results = [];
    dialog.showModal();
    input.focus();
  }

  function show() {
    list.replaceChildren(...results.map((m, i) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.href = pageUrl(m.slug);
      link.textContent = m.title;
      if (m.placeholder) link.className = "placeholder";
      const note = document.createElement("span");
      note.className = "muted";
      note.textContent = " " + m.slug + " · " + m.match;
      item.append(link, note);
      if (i === chosen) item.className = "chosen";
      return item;
    }));
  }

  async function find() {
    const query = input.value.trim();
    const mine = ++asked;
    if (!query) { results = []; show(); return; }
    const answer = await fetch("/api/titles?q=" + encodeURIComponent(query), { credentials: "same-origin" });
    if (mine !== asked || !answer.ok) return;
    results = await answer.json();
    chosen = 0;
    show();
  }

  input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(find, 60); });
  input.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown") { chosen = Math.min(chosen + 1, results.length - 1); show(); e.preventDefault(); }
    else if (e.key === "ArrowUp") { chosen = Math.max(chosen - 1, 0); show(); e.preventDefault(); }
    else if (e.key === "Enter" && results[chosen]) { window.location.href = pageUrl(results[chosen].slug); }
  });
  document.addEventListener("keydown", (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === "k") { e.preventDefault(); open(); }
  });
  if (button) button.addEventListener("click", open);
  dialog.addEventListener("click", (e) => { if (e.target === dialog) dialog.close(); });
})();
