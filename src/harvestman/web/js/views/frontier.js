// Frontier: URLs of a crawl by status and host (sortable by priority and depth), its
// figures, and seeding new URLs (admin).

import { api, describe, latestOnly } from "../api.js";
import { field, fill, h, showFieldErrors } from "../dom.js";
import { num, relative, words } from "../format.js";
import { Pager } from "../pager.js";
import { isAdmin } from "../session.js";
import { dataTable } from "../table.js";
import { CRAWL_COLUMN, crawlNames, crawlOf, crawlPicker, emptyFor, hashQuery, keepInHash, scopeText } from "../crawls.js";

const PRIORITY = { 3: "high", 2: "normal", 1: "low" };
const URL_STATES = ["pending", "in_progress", "completed", "failed", "blocked"];

/** A crawl chooser. To browse (`remember`, the default): the select of crawls.js, "All
 * crawls" or one, kept in the address. To name a crawl to write into (seeding): a text input
 * offering the known names, where a new name starts a new crawl. */
export function crawlInput(name = "crawl", { remember = true, onChange = null } = {}) {
  if (remember) return crawlPicker({ name, onChange });
  const list = h("datalist", { id: `${name}-names` });
  crawlNames().then((crawls) => list.append(...crawls.map((c) => h("option", { value: c.name })))).catch(() => {});
  const input = h("input", { name, type: "text", list: list.id, placeholder: "serve's crawl (default)" });
  return { input, list };
}

/** The message for a list of a crawl that does not exist (yet). */
export function crawlProblem(exc) {
  return exc.status === 404 && exc.details?.crawl
    ? `${describe(exc)}: choose another crawl, or “All crawls”.`
    : describe(exc);
}

export function render(main) {
  const latest = latestOnly(); // a filter's read drawn only if no later one started
  const pager = new Pager(50);
  let sort = { key: "id", dir: "asc" };
  let rows = [];
  let crawls = [];
  const crawl = crawlInput("crawl", { onChange: () => { pager.reset(); load(); } });
  crawl.input.ready.then((found) => { crawls = found; });
  // Pending URLs unless the address says otherwise ("status=any" for every status).
  const asked = hashQuery().get("status");
  const wanted = asked === "any" ? "" : asked || "pending";
  const status = h("select", { name: "status" },
    h("option", { value: "" }, "any status"), URL_STATES.map((v) => h("option", { value: v, selected: v === wanted }, words(v))));
  const host = h("input", { name: "host", type: "search", placeholder: "exact host, e.g. example.com" });
  const statsBox = h("div", { class: "cards", "data-testid": "frontier-stats" });
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const filters = h("form", {
    class: "row", role: "search",
    onsubmit: (e) => { e.preventDefault(); pager.reset(); load(); },
  }, field("Crawl", crawl.input), crawl.list, field("Status", status), field("Host", host),
  h("button", { type: "submit" }, "Show"));
  const scope = h("p", { class: "muted", "data-testid": "crawl-scope" });
  fill(main,
    h("h1", {}, "Frontier"),
    scope,
    statsBox,
    h("section", { class: "panel", "aria-labelledby": "urls-title" },
      h("h2", { id: "urls-title" }, "URLs"), filters, box),
    // Below the list: browsing a job's frontier is the common visit, seeding the rarer one.
    isAdmin() ? seedPanel(() => { pager.reset(); load(); }) : null,
  );
  status.addEventListener("change", () => { pager.reset(); load(); });

  function draw() {
    fill(box, dataTable({
      testid: "frontier-table",
      rows,
      sort,
      onSort: (next) => { sort = next; draw(); },
      caption: "Sorting applies to the rows shown.",
      emptyText: emptyFor(status.value ? `${words(status.value)} URL` : "URL", crawl.input.value, crawls, Boolean(host.value.trim())),
      columns: [
        { key: "url", label: "URL", url: true, sortable: true },
        rows.some(crawlOf) && !crawl.input.value ? CRAWL_COLUMN : null,
        { key: "host", label: "Host", sortable: true },
        { key: "status", label: "Status", sortable: true, render: (u) => words(u.status) },
        { key: "priority", label: "Priority", sortable: true, render: (u) => PRIORITY[u.priority] || u.priority },
        { key: "depth", label: "Depth", numeric: true, sortable: true },
        { key: "next_crawl_at", label: "Due", nowrap: true, sortable: true, render: (u) => relative(u.next_crawl_at) },
        { key: "attempts", label: "Retries", numeric: true, sortable: true }, // not fetches: 0 on a first try
        { key: "error_class", label: "Error", render: (u) => u.error_class && `${u.error_class}: ${u.error || ""}` },
      ].filter(Boolean),
    }), pager.controls(load));
  }

  async function load() {
    const name = crawl.input.value.trim();
    scope.textContent = scopeText(name);
    keepInHash({ status: status.value || "any", host: host.value.trim() });
    try {
      const [answer, stats] = await latest(Promise.all([
        api("/api/frontier/urls", { query: { crawl: name, status: status.value, host: host.value.trim(), ...pager.params() } }),
        api("/api/frontier/stats", { query: { crawl: name } }),
      ]));
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
