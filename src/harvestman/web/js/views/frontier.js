// Frontier: URLs of a crawl by status and host (sortable by priority and depth), its
// figures, and seeding new URLs (admin).

import { api, describe } from "../api.js";
import { field, fill, h, showFieldErrors } from "../dom.js";
import { num, relative } from "../format.js";
import { Pager } from "../pager.js";
import { isAdmin } from "../session.js";
import { dataTable } from "../table.js";

const PRIORITY = { 3: "high", 2: "normal", 1: "low" };
const URL_STATES = ["pending", "in_progress", "completed", "failed", "blocked"];

const CRAWL_KEY = "harvestman.crawl";

/** A crawl-name input offering "default" and each source's namespace; `remember`: the name
 * browsed last is filled in again (the frontier and pages views share it). */
export function crawlInput(name = "crawl", { remember = true } = {}) {
  const list = h("datalist", { id: `${name}-names` }, h("option", { value: "default" }));
  api("/api/v1/sources", { query: { limit: 500 } })
    .then((page) => list.append(...page.items.map((src) => h("option", { value: src.crawl || `source-${src.id}` }, src.name))))
    .catch(() => {});
  const input = h("input", {
    name, type: "text", list: list.id, placeholder: "default",
    value: remember ? sessionStorage.getItem(CRAWL_KEY) || "" : "",
  });
  if (remember) input.addEventListener("change", () => sessionStorage.setItem(CRAWL_KEY, input.value.trim()));
  return { input, list };
}

/** The message for a list of a crawl that does not exist (yet). */
export function crawlProblem(exc) {
  return exc.status === 404 && exc.details?.crawl
    ? `${describe(exc)}: choose a crawl (a source's jobs crawl into source-<id>), or seed a URL to start it.`
    : describe(exc);
}

export function render(main) {
  const pager = new Pager(50);
  let sort = { key: "id", dir: "asc" };
  let rows = [];
  const crawl = crawlInput();
  const status = h("select", { name: "status" },
    h("option", { value: "" }, "any status"), URL_STATES.map((v) => h("option", { value: v, selected: v === "pending" }, v)));
  const host = h("input", { name: "host", type: "search", placeholder: "exact host, e.g. example.com" });
  const statsBox = h("div", { class: "cards", "data-testid": "frontier-stats" });
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const filters = h("form", {
    class: "row", role: "search",
    onsubmit: (e) => { e.preventDefault(); pager.reset(); load(); },
  }, field("Crawl", crawl.input), crawl.list, field("Status", status), field("Host", host),
  h("button", { type: "submit" }, "Show"));
  fill(main,
    h("h1", {}, "Frontier"),
    statsBox,
    isAdmin() ? seedPanel(() => { pager.reset(); load(); }) : null,
    h("section", { class: "panel", "aria-labelledby": "urls-title" },
      h("h2", { id: "urls-title" }, "URLs"), filters, box),
  );
  status.addEventListener("change", () => { pager.reset(); load(); });

  function draw() {
    fill(box, dataTable({
      testid: "frontier-table",
      rows,
      sort,
      onSort: (next) => { sort = next; draw(); },
      caption: "Sorting applies to the rows shown.",
      emptyText: "No URL matches: the frontier of this crawl is empty for these filters.",
      columns: [
        { key: "url", label: "URL", url: true, sortable: true },
        { key: "host", label: "Host", sortable: true },
        { key: "status", label: "Status", sortable: true },
        { key: "priority", label: "Priority", sortable: true, render: (u) => PRIORITY[u.priority] || u.priority },
        { key: "depth", label: "Depth", numeric: true, sortable: true },
        { key: "next_crawl_at", label: "Due", sortable: true, render: (u) => relative(u.next_crawl_at) },
        { key: "attempts", label: "Attempts", numeric: true, sortable: true },
        { key: "error_class", label: "Error", render: (u) => u.error_class && `${u.error_class}: ${u.error || ""}` },
      ],
    }), pager.controls(load));
  }

  async function load() {
    const name = crawl.input.value.trim();
    try {
      const [answer, stats] = await Promise.all([
        api("/api/frontier/urls", { query: { crawl: name, status: status.value, host: host.value.trim(), ...pager.params() } }),
        api("/api/frontier/stats", { query: { crawl: name } }),
      ]);
      pager.update(answer);
      rows = answer.items;
      fill(statsBox,
        [["Pending", stats.pending], ["Due now", stats.due_now], ["In progress", stats.in_progress], ["Hosts pending", stats.pending_hosts]]
          .map(([label, value]) => h("div", { class: "card" }, h("div", { class: "label" }, label), h("div", { class: "value" }, num(value)))));
      draw();
    } catch (exc) {
      fill(statsBox);
      fill(box, h("p", { class: "error-text" }, crawlProblem(exc)));
    }
  }

  load();
}

function seedPanel(reload) {
  const urls = h("textarea", { name: "urls", rows: 3, placeholder: "https://example.com/\nhttps://example.org/start" });
  const crawl = crawlInput("seed-crawl", { remember: false });
  crawl.input.name = "crawl";
  const priority = h("select", { name: "priority" },
    ["high", "normal", "low"].map((p) => h("option", { value: p }, p)));
  const result = h("p", { role: "status", "data-testid": "seed-result" });
  const form = h("form", {
    novalidate: true, "aria-labelledby": "seed-title",
    onsubmit: async (event) => {
      event.preventDefault();
      result.textContent = "";
      result.className = "";
      showFieldErrors(form, {});
      try {
        const done = await api("/api/frontier/seed", {
          method: "POST",
          body: { urls: urls.value.split(/\s+/).filter(Boolean), crawl: crawl.input.value.trim() || null, priority: priority.value },
        });
        const rejected = done.rejected.map((r) => `${r.url}: ${r.reason}`).join("; ");
        result.textContent = `${num(done.added)} URL(s) seeded into ${done.crawl}.${rejected ? ` Rejected: ${rejected}` : ""}`;
        result.className = "notice";
        urls.value = "";
        reload();
      } catch (exc) {
        showFieldErrors(form, exc.fieldErrors ? exc.fieldErrors() : {});
        result.textContent = describe(exc);
        result.className = "error-text";
      }
    },
  },
  h("h2", { id: "seed-title" }, "Seed URLs"),
  field("URLs (one per line)", urls),
  h("div", { class: "row" }, field("Crawl", crawl.input), crawl.list, field("Priority", priority),
    h("button", { type: "submit", class: "primary" }, "Seed")),
  result);
  return h("section", { class: "panel" }, form);
}
