// Scheduler: jobs per 15-minute slot over the next 24 h, the distribution score, the
// scheduler's metrics, and rebalancing (preview, then apply).

import { api, describe } from "../api.js";
import { columnChart } from "../charts.js";
import { fill, h } from "../dom.js";
import { clock, decimal, num, pct, time } from "../format.js";
import { isAdmin } from "../session.js";
import { dataTable } from "../table.js";

export function render(main) {
  const chart = h("div", { "data-testid": "slot-chart" }, h("p", { class: "muted" }, "Loading…"));
  const score = h("div", { class: "cards" });
  const metricsBox = h("div");
  const planBox = h("div", { "data-testid": "rebalance-plan" });
  const apply = h("button", { type: "button", class: "primary", disabled: true, onclick: () => rebalance(false) }, "Apply rebalance");
  const preview = h("button", { type: "button", onclick: () => rebalance(true) }, "Preview rebalance");
  fill(main,
    h("h1", {}, "Scheduler"),
    score,
    h("section", { class: "panel", "aria-labelledby": "slots-title" },
      h("h2", { id: "slots-title" }, "Next runs per 15-minute slot, next 24 h"), chart),
    isAdmin() ? h("section", { class: "panel", "aria-labelledby": "rebalance-title" },
      h("h2", { id: "rebalance-title" }, "Rebalance"),
      h("p", { class: "muted" }, "Moves jobs out of overloaded slots (never one due within 30 min or moved in the last hour)."),
      h("div", { class: "actions" }, preview, apply), planBox) : null,
    h("section", { class: "panel", "aria-labelledby": "metrics-title" },
      h("h2", { id: "metrics-title" }, "Metrics"), metricsBox),
  );

  async function loadDistribution() {
    try {
      const dist = await api("/api/v1/scheduler/distribution");
      const step = dist.slot_seconds;
      const x0 = Math.floor(Date.now() / 1000 / step) * step;
      fill(score,
        [["Distribution score", decimal(dist.distribution_score, 2), "1.00: no slot above its fair share"],
          ["Jobs in the next 24 h", num(dist.total_jobs), ""],
          ["Busiest slot", num(dist.peak_count), dist.peak_start ? `at ${clock(dist.peak_start)}` : ""]]
          .map(([label, value, sub]) => h("div", { class: "card" }, h("div", { class: "label" }, label),
            h("div", { class: "value", "data-testid": label === "Distribution score" ? "distribution-score" : null }, value),
            h("div", { class: "sub" }, sub))));
      const fair = dist.total_jobs ? Math.ceil(dist.total_jobs / Math.round(dist.window_seconds / step)) : 0;
      fill(chart, dist.slots.length
        ? columnChart(dist.slots.map((slot) => ({ x: slot.start, value: slot.count })), {
          // Drawn across the page: a wide view box keeps its labels at the text's size.
          x0, x1: x0 + dist.window_seconds, step, xLabel: clock, mark: fair + 1, width: 1200, height: 240,
          title: "Jobs per 15-minute slot over the next 24 hours",
        })
        : h("p", { class: "empty" }, "No job is due in the next 24 hours."),
      h("p", { class: "legend" }, `Fair share: ${fair} per slot; slots above it are marked.`));
    } catch (exc) {
      fill(chart, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  async function loadMetrics() {
    try {
      const m = await api("/api/v1/scheduler/metrics");
      const jobs = m.jobs || {};
      const runs = m.executions || {};
      fill(metricsBox, h("dl", { class: "facts" },
        h("dt", {}, "Jobs"), h("dd", {}, Object.entries(jobs).filter(([k]) => k !== "total").map(([k, v]) => `${k} ${v}`).join(", ")),
        h("dt", {}, "Executions kept"), h("dd", {}, num(runs.total)),
        h("dt", {}, "Success rate"), h("dd", {}, pct(runs.success_rate ?? null)),
        h("dt", {}, "Stale locks cleared"), h("dd", {}, num(m.stale_locks_cleared ?? 0)),
        h("dt", {}, "Last poll"), h("dd", {}, m.last_poll_ms === undefined ? "—" : `${m.last_poll_ms} ms`)));
    } catch (exc) {
      fill(metricsBox, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  async function rebalance(dryRun) {
    preview.disabled = true;
    apply.disabled = true;
    try {
      const plan = await api(dryRun ? "/api/v1/scheduler/rebalance/preview" : "/api/v1/scheduler/rebalance", { method: "POST" });
      const skipped = Object.entries(plan.skipped || {});
      fill(planBox,
        h("p", { role: "status" }, dryRun
          ? `Preview: ${plan.moves.length} move(s), score ${decimal(plan.score_before, 2)} → ${decimal(plan.score_after, 2)}.`
          : `Applied: ${plan.moves.length} job(s) moved, score ${decimal(plan.score_before, 2)} → ${decimal(plan.score_after, 2)}.`),
        dataTable({
          rows: plan.moves,
          emptyText: "Nothing to move: no slot is overloaded.",
          columns: [
            { key: "job_id", label: "Job", render: (m) => h("a", { href: `#/jobs/${m.job_id}` }, `#${m.job_id}`) },
            { key: "old_run_at", label: "From", render: (m) => time(m.old_run_at) },
            { key: "new_run_at", label: "To", render: (m) => time(m.new_run_at) },
          ],
        }),
        skipped.length ? h("p", { class: "muted" }, `Skipped: ${skipped.map(([id, why]) => `#${id} (${why})`).join(", ")}`) : null);
      apply.disabled = !(dryRun && plan.moves.length);
      if (!dryRun) loadDistribution();
    } catch (exc) {
      fill(planBox, h("p", { class: "error-text" }, describe(exc)));
    } finally {
      preview.disabled = false;
    }
  }

  loadDistribution();
  loadMetrics();
  const timer = setInterval(() => { if (!document.hidden) { loadDistribution(); loadMetrics(); } }, 30_000);
  return () => clearInterval(timer);
}
