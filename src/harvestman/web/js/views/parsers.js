// Parsers: site parsers' success rates per domain and version (the figures behind the
// harvestman_parser_success_ratio gauge and its alert), a line marked when its last day's rate
// is under half the days before; rollouts of new versions beside the stable one, with
// promote and roll back for an admin.

import { api, describe, latestOnly } from "../api.js";
import { crawlPicker, emptyFor, scopeText } from "../crawls.js";
import { field, fill, h } from "../dom.js";
import { num, pct, time } from "../format.js";
import { isAdmin } from "../session.js";
import { dataTable } from "../table.js";
import { crawlProblem } from "./frontier.js";

/** Whether a rate fell under half its baseline (what the alert rule fires on). */
function halved(rate, baseline) {
  return rate !== null && rate !== undefined && baseline ? rate < 0.5 * baseline : false;
}

export function render(main) {
  const latest = latestOnly(); // a filter's read drawn only if no later one started
  let crawls = [];
  const crawl = crawlPicker({ name: "crawl", onChange: () => load() });
  crawl.input.ready.then((found) => { crawls = found; });
  const scope = h("p", { class: "muted", "data-testid": "crawl-scope" });
  const statsBox = h("div", { "data-testid": "parser-stats" }, h("p", { class: "muted" }, "Loading…"));
  const rolloutsBox = h("div", { "data-testid": "parser-rollouts" });
  const status = h("p", { role: "status", class: "muted" });
  fill(main,
    h("h1", {}, "Parsers"),
    scope,
    h("form", { class: "row", role: "search", onsubmit: (event) => { event.preventDefault(); load(); } },
      field("Crawl", crawl.input)),
    h("section", { class: "panel", "aria-labelledby": "parser-rates-title" },
      h("h2", { id: "parser-rates-title" }, "Success rate per domain and version"), statsBox),
    h("section", { class: "panel", "aria-labelledby": "rollouts-title" },
      h("h2", { id: "rollouts-title" }, "Rollouts"), status, rolloutsBox),
  );

  async function act(rollout, action) {
    status.textContent = "";
    try {
      const done = await api(`/api/admin/parsers/${encodeURIComponent(rollout.parser)}/${action}`,
        { method: "POST", body: { domain: rollout.domain } });
      status.textContent = `${rollout.parser} ${done.version} on ${done.domain}: share ${pct(done.share)}.`;
      load();
    } catch (exc) {
      status.textContent = describe(exc);
    }
  }

  function rolloutTable(rollouts) {
    return rollouts.map((rollout) => {
      const stable = rollout.versions.find((v) => !v.candidate);
      return h("div", { class: "rollout", "data-parser": rollout.parser },
        h("h3", {}, `${rollout.parser} ${rollout.version} on ${rollout.domain}: ${pct(rollout.share)} of pages`),
        h("p", { class: "muted" }, `${rollout.origin === "store" ? "set" : "from the settings"}${rollout.updated_by ? ` by ${rollout.updated_by}` : ""}${rollout.updated_at ? ` ${time(rollout.updated_at)}` : ""}`),
        dataTable({
          rows: rollout.versions,
          emptyText: "No page parsed yet.",
          columns: [
            { key: "version", label: "Version", render: (v) => `${v.version}${v.candidate ? " (candidate)" : ""}` },
            { key: "attempts", label: "Pages", numeric: true, render: (v) => num(v.attempts) },
            { key: "success_rate", label: "Success rate", numeric: true, render: (v) => h("span", {
              class: v.candidate && stable && halved(v.success_rate, stable.success_rate) ? "bad" : null,
            }, pct(v.success_rate)) },
          ],
        }),
        isAdmin() ? h("div", { class: "actions" },
          h("button", { type: "button", class: "primary", onclick: () => act(rollout, "promote") }, "Promote (100%)"),
          h("button", { type: "button", onclick: () => act(rollout, "rollback") }, "Roll back (0%)")) : null);
    });
  }

  async function load() {
    const name = crawl.input.value;
    scope.textContent = scopeText(name);
    try {
      const stats = await latest(api("/api/parsers/stats", { query: name ? { crawl: name } : {} }));
      fill(statsBox, dataTable({
        rows: stats.items,
        testid: "parser-lines",
        emptyText: name ? emptyFor("site parser run", name, crawls) : "No site parser has run in any crawl.",
        rowKey: (l) => `${l.host} ${l.parser} ${l.version}`,
        columns: [
          { key: "host", label: "Domain" },
          { key: "parser", label: "Parser" },
          { key: "version", label: "Version" },
          { key: "attempts", label: "Pages", numeric: true, render: (l) => num(l.attempts) },
          { key: "success_rate", label: "Overall", numeric: true, render: (l) => pct(l.success_rate) },
          { key: "last_day_rate", label: "Last day", numeric: true, render: (l) => h("span", {
            class: halved(l.last_day_rate, l.earlier_rate) ? "bad" : null,
            title: halved(l.last_day_rate, l.earlier_rate) ? "under half the days before" : null,
          }, pct(l.last_day_rate)) },
          { key: "earlier_rate", label: "Days before", numeric: true, render: (l) => pct(l.earlier_rate) },
        ],
      }));
      fill(rolloutsBox, stats.rollouts.length ? rolloutTable(stats.rollouts) : h("p", { class: "empty" }, "No rollout: each parser runs its first loaded version."));
    } catch (exc) {
      fill(statsBox, h("p", { class: "error-text" }, crawlProblem(exc)));
      fill(rolloutsBox);
    }
  }

  load();
  const timer = setInterval(() => { if (!document.hidden) load(); }, 60_000);
  return () => clearInterval(timer);
}
