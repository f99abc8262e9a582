// A host's operator settings (admin): pause, crawl delay, concurrency, re-crawl interval and
// priority, read and replaced over /api/domains/{host}/settings. Workers take them within
// domain_settings_ttl (5 s by default).

import { api, describe } from "../api.js";
import { field, fill, h } from "../dom.js";

function numberInput(name, value, { min, max, step = "any" } = {}) {
  return h("input", { name, type: "number", min, max, step, value: value ?? "", placeholder: "the crawl's" });
}

function numberOrNull(input) {
  return input.value.trim() === "" ? null : Number(input.value);
}

/** Opens the settings dialog of ``host``; ``onSaved(settings)`` after a successful save. */
export async function editDomainSettings(host, onSaved) {
  const path = `/api/domains/${encodeURIComponent(host)}/settings`;
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const status = h("p", { role: "status", "data-testid": "domain-settings-status" });
  const cancel = h("button", { type: "button", onclick: () => dialog.close() }, "Close");
  const dialog = h("dialog", { "aria-labelledby": "domain-settings-title", "data-testid": "domain-settings-dialog" },
    h("h2", { id: "domain-settings-title" }, `Settings of ${host}`), body, status);
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  let current;
  try {
    current = await api(path);
  } catch (exc) {
    fill(body, h("p", { class: "error-text" }, describe(exc)), h("div", { class: "actions" }, cancel));
    return;
  }
  const paused = h("input", { name: "paused", type: "checkbox" });
  paused.checked = current.paused;
  const delay = numberInput("crawl_delay", current.crawl_delay, { min: 0, max: 3600 });
  const concurrency = numberInput("concurrency", current.concurrency, { min: 1, max: 1024, step: 1 });
  const recrawl = numberInput("recrawl_interval", current.recrawl_interval, { min: 1 });
  const priority = numberInput("priority", current.priority, { min: -100, max: 100, step: 1 });
  const save = h("button", { type: "submit", class: "primary" }, "Save");
  const form = h("form", {
    onsubmit: async (event) => {
      event.preventDefault();
      const sent = {
        paused: paused.checked,
        crawl_delay: numberOrNull(delay),
        concurrency: numberOrNull(concurrency),
        recrawl_interval: numberOrNull(recrawl),
        priority: numberOrNull(priority) ?? 0,
      };
      try {
        const saved = await api(path, { method: "PUT", body: sent });
        status.textContent = `Saved: workers apply it within a few seconds.`;
        status.className = "notice";
        if (onSaved) onSaved(saved);
      } catch (exc) {
        status.textContent = describe(exc);
        status.className = "error-text";
      }
    },
  },
    h("div", { class: "field", "data-field": "paused" }, h("label", { class: "check" }, paused, "Paused (its URLs stay pending)")),
    field("Crawl delay (s)", delay, "Empty: robots.txt's or the crawl's; never below robots.txt's."),
    field("Concurrency", concurrency, "Requests in flight to this host; empty: the crawl's."),
    field("Re-crawl interval (s)", recrawl, "Empty: the crawl's visited TTL."),
    field("Priority", priority, "Higher hosts are leased first (-100..100)."),
    h("div", { class: "actions" }, save, cancel));
  fill(body, form);
  paused.focus();
}
