// Jobs: the list (state, next run, interval and adapted interval, last result), the
// actions each state allows, and the create form.

import { api, describe, latestOnly } from "../api.js";
import { field, fill, h } from "../dom.js";
import { relative, span } from "../format.js";
import { Pager } from "../pager.js";
import { isAdmin, takeNotice } from "../session.js";
import { dataTable } from "../table.js";
import { jobActions } from "./jobactions.js";
import { jobForm } from "./jobform.js";

export const STATES = ["pending", "scheduled", "running", "completed", "failed", "paused", "cancelled"];
const TONES = { scheduled: "ok", running: "ok", completed: "ok", failed: "bad", cancelled: "bad", paused: "warn" };
const UNIT = { minutes: 60, hours: 3600, days: 86400 };

export function stateBadge(status, testid = "job-state") {
  return h("span", { class: `badge ${TONES[status] || ""}`, "data-testid": testid }, status);
}

export function intervalText(job) {
  if (job.interval_minutes === null) return "once";
  return span(job.interval_minutes * (UNIT[job.interval_type] || 60));
}

/** The interval adaptive scheduling chose after the source's last run (from the API). */
export function adaptedText(job) {
  if (!job.adaptive_scheduling || job.interval_minutes === null) return "—";
  if (job.adapted_interval_seconds === null || job.adapted_interval_seconds === undefined) return "—";
  return span(job.adapted_interval_seconds);
}

/** When the job runs next (the list; the job page adds the time): a cancelled job has none. */
export function nextRun(job) {
  if (job.status === "cancelled") return "none";
  if (job.status === "running") return "after this run";
  return whenDue(job);
}

/**
 * When a job waiting to run is due, relative to `now`: one whose time has come is "due now"
 * (the scheduler takes it at its next poll) or "overdue by 2 h", not "12 s ago"; a paused
 * job's time is only a time.
 */
export function whenDue(job, now = Date.now() / 1000) {
  const waiting = job.status === "scheduled" || job.status === "pending";
  if (!waiting || job.next_run_at === null || job.next_run_at === undefined || job.next_run_at > now) {
    return relative(job.next_run_at, now);
  }
  const late = now - job.next_run_at;
  return late < 60 ? "due now" : `overdue by ${span(late)}`;
}

export function lastResult(job) {
  if (job.status === "running") return "running now";
  if (job.last_error) return h("span", { class: "error-text", title: job.last_error }, `error: ${job.last_error.slice(0, 80)}`);
  if (job.last_run_at) return `ok, ${relative(job.last_run_at)}`;
  return "not run yet";
}

export function render(main) {
  const latest = latestOnly(); // a filter's read drawn only if no later one started
  const pager = new Pager(50);
  const stateFilter = h("select", { name: "status" },
    h("option", { value: "" }, "any state"), STATES.map((s) => h("option", { value: s }, s)));
  const notice = h("p", { role: "status", "data-testid": "jobs-status" });
  const formBox = h("div");
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const newButton = isAdmin()
    ? h("button", { type: "button", class: "primary", onclick: () => openForm() }, "New job")
    : null;
  fill(main,
    h("div", { class: "spread" }, h("h1", {}, "Jobs"), newButton),
    formBox,
    h("section", { class: "panel" },
      h("form", { class: "row", role: "search", onsubmit: (e) => e.preventDefault() }, field("State", stateFilter)),
      notice, box),
    h("p", { class: "muted" }, "A job crawls a source: ", h("a", { href: "#/sources" }, "create or edit sources"), "."),
  );
  stateFilter.addEventListener("change", () => { pager.reset(); load(); });

  function openForm() {
    fill(formBox, jobForm(null, {
      onSaved: (job, duplicates) => {
        fill(formBox);
        const twin = duplicates.length
          ? ` Its source already had ${duplicates.map((d) => `job #${d.id}`).join(", ")}: both crawl into the same namespace.`
          : "";
        notice.textContent = `Job ${job.id} created: ${job.status}.${twin}`;
        notice.className = duplicates.length ? "warn-text" : "notice";
        pager.reset();
        load();
      },
      onCancel: () => fill(formBox),
    }));
    formBox.querySelector("select, input")?.focus();
  }

  function showError(text) {
    notice.textContent = text;
    notice.className = text ? "error-text" : "";
  }

  let rows = [];
  function draw() {
    fill(box,
      dataTable({
        testid: "jobs-table",
        rowKey: (j) => j.id,
        rows,
        emptyText: stateFilter.value ? `No ${stateFilter.value} job.` : "No job yet.",
        columns: [
          { key: "id", label: "Job", render: (j) => h("a", { href: `#/jobs/${j.id}` }, `#${j.id}`) },
          { key: "url", label: "URL", url: true },
          { key: "status", label: "State", render: (j) => stateBadge(j.status) },
          { key: "next_run_at", label: "Next run", render: nextRun },
          { key: "interval", label: "Interval", render: intervalText },
          { key: "adapted", label: "Adapted", render: adaptedText },
          { key: "last", label: "Last result", render: lastResult },
          isAdmin() ? {
            key: "actions", label: "Actions",
            render: (j) => jobActions(j, {
              onChange: (changed) => { rows = rows.map((r) => (r.id === changed.id ? { ...r, ...changed } : r)); draw(); },
              onError: showError,
            }),
          } : null,
        ].filter(Boolean),
      }),
      pager.controls(load));
  }

  async function load() {
    try {
      const answer = await latest(api("/api/v1/jobs", { query: { status: stateFilter.value, ...pager.params() } }));
      pager.update(answer);
      rows = answer.items;
      draw();
    } catch (exc) {
      fill(box, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  const flash = takeNotice();
  if (flash) {
    notice.textContent = flash;
    notice.className = "notice";
  }
  load();
}
