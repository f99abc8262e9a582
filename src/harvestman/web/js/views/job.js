// One job: its settings and state, the actions its state allows, the edit form, and its runs
// with their logs (runlog.js).

import { api, describe } from "../api.js";
import { fill, h } from "../dom.js";
import { relative, time } from "../format.js";
import { isAdmin } from "../session.js";
import { jobActions } from "./jobactions.js";
import { jobForm } from "./jobform.js";
import { adaptedText, intervalText, lastResult, stateBadge } from "./jobs.js";
import { runLog } from "./runlog.js";

export function render(main, { match }) {
  const id = Number(match[1]);
  const title = h("h1", {}, `Job #${id}`);
  const notice = h("p", { role: "status", "data-testid": "job-status" });
  const facts = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const actions = h("div");
  const formBox = h("div");
  const runs = runLog(id, { onRunEnded: () => loadJob() });
  let job = null;
  let closed = false;
  let refresh = null;

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
      h("dt", {}, "Source"), h("dd", {}, `#${job.source_id}`),
      h("dt", {}, "Next run"), h("dd", {}, `${time(job.next_run_at)} (${relative(job.next_run_at)})`),
      h("dt", {}, "Interval"), h("dd", {}, `${intervalText(job)}${job.adaptive_scheduling ? ", adaptive" : ""}`),
      h("dt", {}, "Adapted interval"), h("dd", {}, adaptedText(job)),
      h("dt", {}, "Last run"), h("dd", {}, time(job.last_run_at)),
      h("dt", {}, "Last result"), h("dd", {}, lastResult(job)),
      h("dt", {}, "Retries"), h("dd", {}, `${job.current_retry_count} of ${job.max_retries} (backoff ${job.retry_backoff_seconds} s)`)));
    fill(actions, h("div", { class: "actions" },
      jobActions(job, { onChange: (changed) => { job = { ...job, ...changed }; drawJob(); runs.reload(); }, onError: showError }),
      isAdmin() ? h("button", { type: "button", onclick: openEdit }, "Edit") : null));
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
      if (closed) return;
      drawJob();
      runs.refresh(job.status === "running");
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
