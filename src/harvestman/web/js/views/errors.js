// Errors: the dead letters of a crawl (URLs that failed for good) with their error class,
// filtered by host and class, re-queued one by one or all those the filters match (after a
// confirmation that counts them); and the recent error log.

import { api, describe, latestOnly } from "../api.js";
import { confirmAction } from "../confirm.js";
import { field, fill, h } from "../dom.js";
import { num, relative, time } from "../format.js";
import { Pager } from "../pager.js";
import { isAdmin } from "../session.js";
import { dataTable } from "../table.js";
import { crawlInput, crawlProblem } from "./frontier.js";

export function render(main) {
  const pager = new Pager(50);
  const crawl = crawlInput("errors-crawl", { onChange: () => { pager.reset(); load(); } });
  const host = h("input", { name: "host", type: "search", placeholder: "exact host, e.g. example.com" });
  const kind = h("select", { name: "type" }, h("option", { value: "" }, "any error class"));
  const notice = h("p", { role: "status", "data-testid": "errors-status" });
  const summary = h("p", { class: "muted", "data-testid": "dead-summary" });
  const requeueAll = h("button", { type: "button", "data-testid": "requeue-filtered", hidden: true, onclick: requeueFiltered });
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const logBox = h("div", { "data-testid": "error-log" });
  let answer = null;
  const latestList = latestOnly(); // each read drawn only if no later one started
  const latestLog = latestOnly();

  fill(main,
    h("h1", {}, "Errors"),
    h("section", { class: "panel", "aria-labelledby": "dead-title" },
      h("h2", { id: "dead-title" }, "Failed URLs (dead letters)"),
      h("form", { class: "row", role: "search", onsubmit: (e) => { e.preventDefault(); pager.reset(); load(); } },
        field("Crawl", crawl.input), crawl.list, field("Host", host), field("Error class", kind),
        h("button", { type: "submit" }, "Show")),
      summary,
      isAdmin() ? h("div", { class: "actions" }, requeueAll) : null,
      notice, box),
    h("section", { class: "panel", "aria-labelledby": "log-title" },
      h("h2", { id: "log-title" }, "Recent errors"), logBox));
  kind.addEventListener("change", () => { pager.reset(); load(); });

  function say(text, tone = "notice") {
    notice.textContent = text;
    notice.className = tone;
  }

  /** Where the listed URLs are: one crawl, or every crawl when none is chosen. */
  function where() {
    return answer.crawl ? answer.crawl : "every crawl";
  }

  /** " on HOST" when the list is filtered by a host, else nothing. */
  function onHost() {
    const named = host.value.trim();
    return named ? ` on ${named}` : "";
  }

  /** The selector of the requeue endpoint for the current filters (of one crawl). */
  function filters() {
    const chosen = { crawl: answer.crawl };
    if (host.value.trim()) chosen.host = host.value.trim();
    else chosen.all = true;
    if (kind.value) chosen.type = kind.value;
    return chosen;
  }

  async function requeue(body) {
    try {
      const done = await api("/api/admin/dead-letter/requeue", { method: "POST", body });
      // The noun follows what was re-queued, not the count asked about before (the list may
      // have grown since).
      const what = done.requeued === 1 ? "URL" : "URLs";
      say(`${num(done.requeued)} ${what} back in the frontier of ${done.crawl}, due now.`);
      load();
    } catch (exc) {
      say(describe(exc), "error-text");
    }
  }

  async function requeueFiltered() {
    // Counted now by a dry run, not taken from the list as it was loaded: URLs that failed
    // since then match too, and the question says how many will go back.
    let total;
    try {
      const counted = await api("/api/admin/dead-letter/requeue", {
        method: "POST", body: { ...filters(), dry_run: true },
      });
      total = counted.matched;
    } catch (exc) {
      say(describe(exc), "error-text");
      return;
    }
    const sure = await confirmAction({
      question: `Re-queue ${num(total)} failed URL${total === 1 ? "" : "s"}?`,
      detail: `Every failed URL of ${where()}${onHost()}`
        + `${kind.value ? ` that failed with ${kind.value}` : ""} goes back to the frontier, due now, its retries reset.`,
      confirmLabel: `Yes, re-queue ${num(total)}`,
      keepLabel: "Not now",
      danger: false,
    });
    if (sure) requeue(filters());
  }

  function drawClasses() {
    const chosen = kind.value;
    fill(kind, h("option", { value: "" }, "any error class"),
      answer.by_type.map((t) => h("option", { value: t.type ?? "", selected: t.type === chosen }, `${t.type ?? "unknown"} (${num(t.count)})`)));
    if (chosen && !answer.by_type.some((t) => t.type === chosen)) {
      kind.append(h("option", { value: chosen, selected: true }, `${chosen} (0)`));
    }
  }

  function draw() {
    const classes = answer.by_type.map((t) => `${t.type ?? "unknown"} ${num(t.count)}`).join(", ");
    const all = answer.by_type.reduce((sum, t) => sum + t.count, 0);
    summary.textContent = all
      ? `${num(all)} failed URL${all === 1 ? "" : "s"} in ${where()}${onHost()}: ${classes}.`
      : `No failed URL in ${answer.crawl || "any crawl"}${onHost()}.`;
    // The API re-queues within one crawl: a bulk re-queue needs one chosen.
    requeueAll.hidden = !answer.total || !answer.crawl;
    if (answer.total && !answer.crawl) summary.textContent += " Choose a crawl to re-queue all that match at once.";
    requeueAll.textContent = `Re-queue the ${num(answer.total)} matching`;
    // With nothing failed at all the summary says so; an empty table under it would repeat it.
    fill(box, all === 0 && !answer.items.length ? null : dataTable({
      testid: "dead-table",
      rowKey: (r) => r.id,
      rows: answer.items,
      emptyText: "No failed URL for these filters.",
      columns: [
        { key: "url", label: "URL", url: true },
        answer.crawl ? null : { key: "crawl", label: "Crawl", nowrap: true, render: (r) => h("code", {}, r.crawl) },
        { key: "error_class", label: "Error class", render: (r) => h("code", {}, r.error_class || "unknown") },
        { key: "error", label: "Error", render: (r) => r.error },
        { key: "status_code", label: "HTTP", numeric: true },
        // The retries its transient failures earned (a 404 fails at once: 0), not its fetches.
        { key: "attempts", label: "Retries", numeric: true, render: (r) => num(r.attempts) },
        { key: "last_fetched_at", label: "Last try", render: (r) => time(r.last_fetched_at ?? r.updated_at) },
        // A dead letter comes due again like a fetched page: the first run past this time asks.
        {
          key: "next_crawl_at", label: "Next try", nowrap: true,
          render: (r) => h("span", { title: "asked for again by the first run after this time; Re-queue asks now" },
            r.next_crawl_at <= Date.now() / 1000 ? "next run" : relative(r.next_crawl_at)),
        },
        isAdmin() ? {
          key: "actions", label: "Actions",
          render: (r) => h("button", {
            type: "button", "aria-label": `Re-queue ${r.url}`,
            onclick: () => requeue({ crawl: r.crawl || answer.crawl, ids: [r.id] }),
          }, "Re-queue"),
        } : null,
      ].filter(Boolean),
    }), pager.controls(load));
  }

  async function load() {
    try {
      answer = await latestList(api("/api/dead-letter", {
        query: { crawl: crawl.input.value.trim(), host: host.value.trim(), type: kind.value, ...pager.params() },
      }));
      pager.update(answer);
      drawClasses();
      draw();
    } catch (exc) {
      answer = null;
      summary.textContent = "";
      requeueAll.hidden = true;
      fill(box, h("p", { class: "error-text" }, crawlProblem(exc)));
    }
    loadLog();
  }

  async function loadLog() {
    try {
      const query = { crawl: crawl.input.value.trim(), host: host.value.trim() };
      const log = await latestLog(api("/api/errors", { query: { ...query, limit: 20 } }));
      fill(logBox, dataTable({
        testid: "error-log-table",
        rows: log.items,
        // "for these filters" only when there are some: an empty store has recorded nothing.
        emptyText: query.crawl || query.host ? "No error recorded for these filters." : "No error recorded.",
        columns: [
          { key: "created_at", label: "When", render: (e) => time(e.created_at) },
          { key: "category", label: "Category" },
          { key: "type", label: "Class", render: (e) => h("code", {}, e.type) },
          // What failed: a crawl's URL, or the task of the service that logged it.
          { key: "task", label: "URL or task", render: (e) => e.task || "—" },
          { key: "message", label: "Message" },
        ],
      }));
    } catch (exc) {
      fill(logBox, h("p", { class: "error-text" }, crawlProblem(exc)));
    }
  }

  load();
}
