// One job: its settings and state, the actions its state allows, the edit form, its
// execution history and the live log stream of its latest run.

import { api, describe, download } from "../api.js";
import { confirmAction } from "../confirm.js";
import { viewLink } from "../crawls.js";
import { fill, h } from "../dom.js";
import { clock, ms, num, pct, relative, time } from "../format.js";
import { Pager } from "../pager.js";
import { isAdmin, leaveNotice } from "../session.js";
import { readStream } from "../sse.js";
import { dataTable } from "../table.js";
import { jobActions } from "./jobactions.js";
import { jobForm } from "./jobform.js";
import { adaptedText, intervalText, lastResult, stateBadge } from "./jobs.js";

/** When the job runs next; a cancelled or finished job has no next run. */
function nextRunText(job) {
  if (job.status === "cancelled") return "none: cancelled (resume it or run it now)";
  if (job.next_run_at === null || job.next_run_at === undefined) return "none";
  return `${time(job.next_run_at)} (${relative(job.next_run_at)})`;
}

export function render(main, { match }) {
  const id = Number(match[1]);
  const title = h("h1", {}, `Job #${id}`);
  const notice = h("p", { role: "status", "data-testid": "job-status" });
  const facts = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const actions = h("div");
  const results = h("div", { class: "results", "data-testid": "job-results" });
  const formBox = h("div");
  const statsBox = h("div");
  const runs = h("div");
  const logState = h("p", { class: "muted", "data-testid": "log-state" }, "Waiting for a run…");
  const saveLog = h("button", { type: "button", "data-testid": "log-download", onclick: saveLatestLog }, "Download the log");
  const log = h("pre", { class: "log", role: "log", "aria-live": "polite", "aria-label": "Log of the latest run", "data-testid": "job-log", tabindex: "0" });
  const pager = new Pager(20);
  let job = null;
  let source = null; // the job's source, for its name
  let closed = false;
  let following = null; // AbortController of the log stream
  let refresh = null;
  let followedOnce = false;
  let runSeen = null; // the state and last run the history was drawn for

  fill(main,
    h("p", {}, h("a", { href: "#/jobs" }, "← All jobs")),
    title,
    h("section", { class: "panel", "aria-label": "Job" }, facts, results, actions, notice),
    formBox,
    h("div", { class: "grid2" },
      h("section", { class: "panel", "aria-labelledby": "runs-title" }, h("h2", { id: "runs-title" }, "Execution history"), statsBox, runs),
      h("section", { class: "panel", "aria-labelledby": "log-title" }, h("h2", { id: "log-title" }, "Live log"), logState, log, h("div", { class: "actions" }, saveLog))),
  );

  function showError(text) {
    notice.textContent = text;
    notice.className = text ? "error-text" : "";
  }

  function drawJob() {
    fill(facts, h("dl", { class: "facts" },
      h("dt", {}, "URL"), h("dd", {}, job.url),
      h("dt", {}, "State"), h("dd", {}, stateBadge(job.status)),
      h("dt", {}, "Source"), h("dd", {}, h("a", { href: "#/sources" }, source ? `${source.name} (#${job.source_id})` : `#${job.source_id}`)),
      h("dt", {}, "Next run"), h("dd", { "data-testid": "job-next-run" }, nextRunText(job)),
      h("dt", {}, "Interval"), h("dd", {}, `${intervalText(job)}${job.adaptive_scheduling ? ", adaptive" : ""}`),
      h("dt", {}, "Adapted interval"), h("dd", {}, adaptedText(job)),
      h("dt", {}, "Last run"), h("dd", {}, time(job.last_run_at)),
      h("dt", {}, "Last result"), h("dd", {}, lastResult(job)),
      h("dt", {}, "Retries"), h("dd", {}, `${job.current_retry_count} of ${job.max_retries} (backoff ${job.retry_backoff_seconds} s)`)));
    fill(actions, h("div", { class: "actions" },
      jobActions(job, { onChange: (changed) => { job = { ...job, ...changed }; drawJob(); loadRuns(); }, onError: showError }),
      isAdmin() ? h("button", { type: "button", onclick: openEdit }, "Edit") : null,
      isAdmin() && job.status !== "running"
        ? h("button", { type: "button", class: "danger", onclick: deleteJob }, "Delete job")
        : null));
  }

  async function deleteJob() {
    const sure = await confirmAction({
      question: `Delete job ${id}?`,
      detail: "The job and its run history and logs are deleted. The pages it stored stay in its crawl.",
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

  /** Where the job's results are: its crawl (namespace), and each view opened on it. */
  function drawResults() {
    const crawl = job.crawl;
    const to = (path, label, extra = {}) => h("a", { href: viewLink(path, crawl, extra), "data-testid": `job-${label.toLowerCase()}` }, label);
    fill(results, h("p", {},
      "Its results are in the crawl ", h("strong", { "data-testid": "job-namespace" }, crawl), ": ",
      to("/pages", "Pages"), " · ", to("/products", "Products"), " · ", to("/errors", "Errors"), " · ",
      to("/frontier", "Frontier", { status: "any" })));
  }

  function openEdit() {
    fill(formBox, jobForm(job, {
      onSaved: (saved) => { job = saved; fill(formBox); drawJob(); notice.textContent = "Saved."; notice.className = "notice"; },
      onCancel: () => fill(formBox),
    }));
    formBox.querySelector("input")?.focus();
  }

  /** `mayFollow`: start following the log when a run is under way (or, the first time, when
   * there is a past run to show). Not after a stream ended, or a finished run would be
   * followed again and again while the job's state lags. */
  async function loadJob(mayFollow = true) {
    try {
      job = await api(`/api/v1/jobs/${id}`);
      if (source?.id !== job.source_id) source = await api(`/api/v1/sources/${job.source_id}`).catch(() => null);
      if (closed) return;
      drawJob();
      drawResults();
      // A run may start and end between two looks (a small site takes a second): the history
      // is read again whenever the job's state or last run moved, not only after a followed log.
      const seen = `${job.status} ${job.last_run_at}`;
      const moved = runSeen !== null && seen !== runSeen;
      if (moved) loadRuns();
      runSeen = seen;
      const ran = job.last_run_at !== null || job.status === "running";
      if (mayFollow && !following && (followedOnce ? job.status === "running" || moved : ran)) followLog();
    } catch (exc) {
      fill(facts, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  async function loadRuns() {
    try {
      const [answer, stats] = await Promise.all([
        api(`/api/v1/jobs/${id}/executions`, { query: pager.params() }),
        api(`/api/v1/jobs/${id}/stats`),
      ]);
      if (closed) return;
      pager.update(answer);
      fill(statsBox, h("p", { class: "muted" },
        `Success rate ${pct(stats.success_rate ?? null)} over ${num(stats.total ?? answer.total)} kept runs.`));
      fill(runs, dataTable({
        testid: "executions-table",
        rows: answer.items,
        emptyText: "No run yet.",
        columns: [
          { key: "execution_number", label: "Run", render: (e) => `#${e.execution_number}` },
          { key: "status", label: "Status", render: (e) => stateBadge(e.status, "run-state") },
          { key: "started_at", label: "Started", render: (e) => time(e.started_at) },
          { key: "duration_ms", label: "Duration", numeric: true, render: (e) => ms(e.duration_ms) },
          { key: "items_crawled", label: "Fetched", numeric: true, render: (e) => num(e.items_crawled) },
          { key: "items_indexed", label: "Stored", numeric: true, render: (e) => num(e.items_indexed) },
          { key: "error_message", label: "Error", render: (e) => e.error_message },
        ],
      }), pager.controls(loadRuns));
    } catch (exc) {
      fill(runs, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  /** The latest run's whole log as a text file (GET …/logs?download=1). */
  async function saveLatestLog() {
    try {
      await download(`/api/v1/jobs/${id}/logs`, { query: { download: 1 } });
    } catch (exc) {
      logState.textContent = exc.status === 404 ? "This job has not run yet." : describe(exc);
    }
  }

  async function followLog() {
    following = new AbortController();
    followedOnce = true;
    log.textContent = "";
    logState.textContent = "Following the latest run…";
    try {
      await readStream(`/api/v1/jobs/${id}/logs/stream`, {}, (name, data) => {
        if (name === "log") {
          const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
          log.append(`${clock(data.created_at)} ${data.level.padEnd(7)} ${data.message}\n`);
          if (atBottom) log.scrollTop = log.scrollHeight;
        } else if (name === "end") {
          logState.textContent = `The run ended: ${data.status}.`;
        }
      }, following.signal);
      loadRuns();
      loadJob(false);
    } catch (exc) {
      if (exc.name === "AbortError") return;
      logState.textContent = exc.status === 404 ? "This job has not run yet." : describe(exc);
    } finally {
      following = null;
    }
  }

  loadJob();
  loadRuns();
  // The job's state and history change under us (the scheduler runs it): look again every 5 s.
  refresh = setInterval(() => { if (!document.hidden) loadJob(); }, 5000);
  return () => {
    closed = true;
    clearInterval(refresh);
    following?.abort();
  };
}
