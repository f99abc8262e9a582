// Domains: a sortable, filterable table with each host's robots.txt (viewable), politeness
// and the admin's reset and per-domain settings (domainsettings.js).

import { api, describe, latestOnly } from "../api.js";
import { confirmAction } from "../confirm.js";
import { crawlPicker } from "../crawls.js";
import { field, fill, h } from "../dom.js";
import { num, relative, time } from "../format.js";
import { Pager } from "../pager.js";
import { isAdmin } from "../session.js";
import { dataTable } from "../table.js";
import { editDomainSettings } from "./domainsettings.js";

function breaker(row) {
  if (row.paused) return "paused";
  if (row.breaker_state || row.breaker) return row.breaker_state || row.breaker;
  return row.allowed === false ? "disabled" : "allowed";
}

// What each state means to a person: the circuit breaker's own words ("closed" for a host
// that is fine) read as the opposite of what they say.
const STATES = {
  allowed: ["crawling", "ok", "Requests to this host go through."],
  closed: ["crawling", "ok", "Requests to this host go through (its circuit breaker is closed)."],
  open: ["resting after errors", "bad", "Failures in a row: no request to this host until the breaker's wait is over (circuit breaker open)."],
  half_open: ["trying again", "warn", "The wait after errors is over: a few requests test the host before it is crawled as before (circuit breaker half-open)."],
  paused: ["paused", "bad", "Paused by an admin: change it in Settings."],
  disabled: ["disabled", "bad", "Crawling this host is not allowed."],
};

function stateBadge(row) {
  const state = breaker(row);
  const [word, tone, meaning] = STATES[state] || [state, "bad", ""];
  return h("span", { class: `badge ${tone}`, title: meaning || null }, word);
}

async function showRobots(host) {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const close = h("button", { type: "button", onclick: () => dialog.close() }, "Close");
  const dialog = h("dialog", { "aria-labelledby": "robots-title", "data-testid": "robots-dialog" },
    h("h2", { id: "robots-title" }, `robots.txt of ${host}`), body, h("div", { class: "actions" }, close));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
  try {
    const robots = await api(`/api/domains/${encodeURIComponent(host)}/robots`);
    fill(body,
      h("dl", { class: "facts" },
        h("dt", {}, "HTTP status"), h("dd", {}, robots.robots_status ?? "—"),
        h("dt", {}, "Fetched"), h("dd", {}, time(robots.robots_fetched_at)),
        h("dt", {}, "Crawl delay"), h("dd", {}, robots.crawl_delay === null ? "—" : `${robots.crawl_delay} s`),
        h("dt", {}, "Allowed"), h("dd", {}, robots.allowed ? "yes" : "no")),
      robots.robots_txt
        ? h("pre", { "data-testid": "robots-text" }, robots.robots_txt)
        : h("p", { class: "empty" }, "No robots.txt body is cached for this host."));
  } catch (exc) {
    fill(body, h("p", { class: "error-text" }, describe(exc)));
  }
}

export function render(main) {
  const latest = latestOnly(); // a filter's read drawn only if no later one started
  const pager = new Pager(100);
  let sort = { key: "host", dir: "asc" };
  let rows = [];
  let answer = null;
  let timer = null;
  const filter = h("input", { name: "host", type: "search", placeholder: "part of a host name" });
  // Which crawl's failed URLs the Errors column counts (a domain is shared by every crawl).
  const crawl = crawlPicker({ name: "crawl", onChange: () => { pager.reset(); load(); } });
  const status = h("p", { role: "status", "data-testid": "domains-status" });
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  fill(main,
    h("h1", {}, "Domains"),
    h("section", { class: "panel" },
      h("form", { class: "row", role: "search", onsubmit: (e) => { e.preventDefault(); pager.reset(); load(); } },
        field("Filter by host", filter), field("Errors of", crawl.input)),
      status, box),
  );
  filter.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { pager.reset(); load(); }, 300);
  });

  async function reset(host) {
    const sure = await confirmAction({
      question: `Reset ${host}?`,
      detail: "Its robots.txt is fetched again, its politeness gate and breaker start over, and its failed and blocked URLs go back to the frontier.",
      confirmLabel: `Yes, reset ${host}`,
      keepLabel: "Leave it as it is",
    });
    if (!sure) return;
    try {
      const done = await api(`/api/admin/domains/${encodeURIComponent(host)}/reset`, { method: "POST" });
      status.textContent = `${host} reset: ${num(done.urls_requeued)} URLs back in the frontier.`;
      status.className = "notice";
      load();
    } catch (exc) {
      status.textContent = describe(exc);
      status.className = "error-text";
    }
  }

  function draw() {
    const hasErrors = rows.some((r) => r.errors !== undefined || r.error_count !== undefined);
    const columns = [
      { key: "host", label: "Host", sortable: true },
      { key: "page_count", label: "Pages", numeric: true, sortable: true, render: (r) => num(r.page_count) },
      hasErrors ? { key: "errors", label: "Errors", numeric: true, sortable: true, value: (r) => r.errors ?? r.error_count, render: (r) => num(r.errors ?? r.error_count) } : null,
      { key: "crawl_delay", label: "Crawl delay", numeric: true, sortable: true, render: (r) => (r.crawl_delay === null
        ? h("span", { title: "robots.txt sets no Crawl-delay: each crawl's own delay applies (the source's, or the crawl_delay setting)" }, "default")
        : `${r.crawl_delay} s`) },
      { key: "robots_status", label: "robots.txt", sortable: true, render: (r) => h("button", { type: "button", onclick: () => showRobots(r.host), "aria-label": `View robots.txt of ${r.host}` }, r.robots_status ? `${r.robots_status} · view` : "view") },
      { key: "breaker", label: "State", sortable: true, value: breaker, render: stateBadge },
      { key: "next_allowed_at", label: "Next allowed", sortable: true, render: (r) => relative(r.next_allowed_at) },
      isAdmin() ? { key: "actions", label: "Actions", render: (r) => h("span", {},
        h("button", { type: "button", onclick: () => editDomainSettings(r.host, load), "aria-label": `Settings of ${r.host}` }, "Settings"), " ",
        h("button", { type: "button", class: "danger", onclick: () => reset(r.host), "aria-label": `Reset ${r.host}` }, "Reset")) } : null,
    ].filter(Boolean);
    fill(box,
      dataTable({
        columns, rows, sort, testid: "domains-table", rowKey: (r) => r.host,
        caption: "Sorting applies to the rows shown; the filter asks the API.",
        emptyText: filter.value ? `No domain matches “${filter.value}”.` : "No domain has been contacted yet.",
        onSort: (next) => { sort = next; draw(); },
      }),
      pager.controls(load));
  }

  async function load() {
    try {
      answer = await latest(api("/api/domains", { query: { host: filter.value.trim(), crawl: crawl.input.value, ...pager.params() } }));
      pager.update(answer);
      rows = answer.items;
      draw();
    } catch (exc) {
      fill(box, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  load();
  return () => clearTimeout(timer);
}
