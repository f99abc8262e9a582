// One job: its settings and state, the actions its state allows, the edit form, and its runs
// with their logs (runlog.js).

import { api, describe } from "../api.js";
import { confirmAction } from "../confirm.js";
import { viewLink } from "../crawls.js";
import { fill, h } from "../dom.js";
import { time } from "../format.js";
import { isAdmin, leaveNotice } from "../session.js";
import { jobActions } from "./jobactions.js";
import { jobForm } from "./jobform.js";
import { adaptedText, intervalText, lastResult, nextRun, stateBadge } from "./jobs.js";
import { runLog } from "./runlog.js";

/** When the job runs next; a cancelled or finished job has no next run. */
export function nextRunText(job) {
  if (job.status === "cancelled") return "none: cancelled (resume it or run it now)";
  // A running job's due time is past: its next one is set when this run ends.
  if (job.status === "running") return nextRun(job);
  if (job.next_run_at === null || job.next_run_at === undefined) return "none";
  return `${time(job.next_run_at)} (${nextRun(job)})`;
}

/** A job's crawl and the views opened on it: where its results are, one click away. */
function resultLinks(crawl) {
  const to = (path, label, extra = {}) => h("a", { href: viewLink(path, crawl, extra), "data-testid": `job-${label.toLowerCase()}` }, label);
  return h("span", {}, h("code", { "data-testid": "job-namespace" }, crawl), " — its ",
    to("/pages", "Pages"), " · ", to("/products", "Products"), " · ", to("/errors", "Errors"), " · ",
    to("/frontier", "Frontier", { status: "any" }));
}

export function render(main, { match }) {
  const id = Number(match[1]);
  const title = h("h1", {}, `Job #${id}`);
  const notice = h("p", { role: "status", "data-testid": "job-status" });
  const facts = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const actions = h("div");
  const formBox = h("div");
  const runs = runLog(id, { onRunEnded: () => loadJob() });
  let job = null;
  let source = null; // the job's source, for its name
  let closed = false;
  let refresh = null;
  let runSeen = null; // the job's state and last run when it was last looked at

  fill(main,
    h("p", {}, h("a", { href: "#/jobs" }, "← All jobs")),
    title,
    h("section", { class: "panel", "aria-label": "Job" }, facts, actions, notice),
    formBox,
    // Stacked: the run table has ten columns, the log wants the width for its URLs.
    h("div", { class: "runs" }, runs.runsPanel, runs.logPanel),
  );

  function showError(text) {
    notice.textContent = text;
    notice.className = text ? "error-text" : "";
  }

  function drawJob() {
    fill(facts, h("dl", { class: "facts" },
      h("dt", {}, "URL"), h("dd", {}, job.url),
      h("dt", {}, "State"), h("dd", {}, stateBadge(job.status)),
      h("dt", {}, "Source"), h("dd", {}, h("a", { href: source ? `#/sources?name=${encodeURIComponent(source.name)}` : "#/sources", "data-testid": "job-source" }, source ? `${source.name} (#${job.source_id})` : `#${job.source_id}`)),
      job.crawl ? [h("dt", {}, "Crawl"), h("dd", { "data-testid": "job-crawl" }, resultLinks(job.crawl))] : null,
      h("dt", {}, "Next run"), h("dd", { "data-testid": "job-next-run" }, nextRunText(job)),
      h("dt", {}, "Interval"), h("dd", {}, `${intervalText(job)}${job.adaptive_scheduling ? ", adaptive" : ""}`),
      h("dt", {}, "Adapted interval"), h("dd", {}, adaptedText(job)),
      h("dt", {}, "Last run"), h("dd", {}, time(job.last_run_at)),
      h("dt", {}, "Last result"), h("dd", {}, lastResult(job)),
      h("dt", {}, "Retries"), h("dd", {}, `${job.current_retry_count} of ${job.max_retries} (backoff ${job.retry_backoff_seconds} s)`)));
    fill(actions, h("div", { class: "actions" },
      jobActions(job, { onChange: (changed) => { job = { ...job, ...changed }; drawJob(); runs.reload(); }, onError: showError }),
      isAdmin() ? h("button", { type: "button", onclick: openEdit }, "Edit") : null,
      isAdmin() && job.status !== "running"
        ? h("button", { type: "button", class: "danger", onclick: deleteJob }, "Delete job")
        : null));
  }

  async function deleteJob() {
    const sure = await confirmAction({
      question: `Delete job ${id}?`,
      detail: `The job and its run history and logs are deleted. The pages it stored stay in its crawl${job?.crawl ? ` ${job.crawl}` : ""}.`,
      confirmLabel: `Yes, delete job ${id}`,
      keepLabel: "Keep the job",
    });
    if (!sure) return;
    try {
      await api(`/api/v1/jobs/${id}`, { method: "DELETE" });
      leaveNotice(`Job ${id} deleted.`);
      location.hash = "#/jobs";
    } catch (exc) {
      showError(describe(exc));
    }
  }

  function openEdit() {
    fill(formBox, jobForm(job, {
      onSaved: (saved) => { job = saved; fill(formBox); drawJob(); notice.textContent = "Saved."; notice.className = "notice"; },
      onCancel: () => fill(formBox),
    }));
    formBox.querySelector("input")?.focus();
  }

  async function loadJob() {
    try {
      job = await api(`/api/v1/jobs/${id}`);
      if (source?.id !== job.source_id) source = await api(`/api/v1/sources/${job.source_id}`).catch(() => null);
      if (closed) return;
      drawJob();
      // A run may start and end between two looks (a small site takes a second): the runs
      // are read again whenever the job's state or last run moved.
      const seen = `${job.status} ${job.last_run_at}`;
      const moved = runSeen !== null && seen !== runSeen;
      runSeen = seen;
      if (moved) runs.reload();
      else runs.refresh(job.status === "running");
    } catch (exc) {
      fill(facts, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  loadJob();
  // The job's state and its runs' counters change under us (the scheduler runs it): look
  // again every 5 s (the runs only while one goes).
  refresh = setInterval(() => { if (!document.hidden) loadJob(); }, 5000);
  return () => {
    closed = true;
    clearInterval(refresh);
    runs.close();
  };
}
