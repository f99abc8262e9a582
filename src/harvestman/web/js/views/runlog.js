// A job's runs and their logs, for the job page: the run table with its live counters, and one
// run's log — followed live while it runs, or read from the store; searched, filtered by
// level, downloaded — with a small chart of its pages over time.

import { api, describe, download, latestOnly } from "../api.js";
import { lineChart } from "../charts.js";
import { fill, h } from "../dom.js";
import { ms, num, pct, span, time } from "../format.js";
import { Pager } from "../pager.js";
import { readStream } from "../sse.js";
import { dataTable } from "../table.js";
import { stateBadge } from "./jobs.js";

const LEVELS = [
  ["", "All levels"],
  ["INFO", "Info and above"],
  ["WARNING", "Warnings and errors"],
  ["ERROR", "Errors only"],
];
const PAGE = 1000; // lines per read of a stored log

/** The job's success rate, said as the runs it is taken from: those that completed or
 * failed (a cancelled or running one counts for neither). */
export function successText(stats) {
  const by = stats.by_status || {};
  const completed = by.completed ?? 0;
  const done = completed + (by.failed ?? 0);
  if (!done) return "No run has ended yet.";
  const cancelled = by.cancelled ? `; ${num(by.cancelled)} cancelled, not counted` : "";
  return `${num(completed)} of ${num(done)} ${done === 1 ? "run" : "runs"} completed (${pct(stats.success_rate ?? null)})${cancelled}.`;
}

/**
 * `runLog(jobId, { onRunEnded })` -> { runsPanel, logPanel, refresh(running), close() }.
 * `refresh(running)`: look at the runs again (the job page's 5 s tick); while a run goes
 * (`running`), its counters are re-read each time. `onRunEnded` is called when a followed
 * run ends.
 */
export function runLog(jobId, { onRunEnded = () => {} } = {}) {
  const statsBox = h("div");
  const runsBox = h("div");
  const pager = new Pager(20);
  const title = h("h2", { id: "log-title" }, "Log");
  const logState = h("p", { class: "muted", "data-testid": "log-state" }, "Waiting for a run…");
  const search = h("input", { type: "search", id: "log-search", "data-testid": "log-search", placeholder: "Text in a line", autocomplete: "off" });
  const level = h("select", { id: "log-level", "data-testid": "log-level" },
    LEVELS.map(([value, label]) => h("option", { value }, label)));
  const chartBox = h("div", { class: "run-chart", "data-testid": "run-chart" });
  const log = h("pre", { class: "log", role: "log", "aria-live": "polite", "aria-labelledby": "log-title", "data-testid": "job-log", tabindex: "0" });
  const more = h("button", { type: "button", hidden: true, "data-testid": "log-more", onclick: () => readLines(true) }, "Show more lines");
  const saveLog = h("button", { type: "button", "data-testid": "log-download", onclick: saveShownLog }, "Download this log");

  const runsPanel = h("section", { class: "panel", "aria-labelledby": "runs-title" },
    h("h2", { id: "runs-title" }, "Execution history"), statsBox, runsBox);
  const logPanel = h("section", { class: "panel", "aria-labelledby": "log-title" },
    title,
    h("form", { class: "log-filters", role: "search", "aria-label": "Filter the log", onsubmit: (event) => { event.preventDefault(); showRun(shown); } },
      h("label", { for: "log-search" }, "Search"), search,
      h("label", { for: "log-level" }, "Level"), level),
    chartBox, logState, log, more,
    h("div", { class: "actions" }, saveLog));

  let closed = false;
  let chosen = null; // the run the user opened; null: the latest
  let shown = null; // the execution whose log is shown
  let latest = null;
  let runsLive = false; // a run listed is running: its counters are re-read each tick
  let following = null; // AbortController of a log stream
  let after = 0; // the last seq read of a stored log
  let count = 0; // lines shown
  let typing = null;
  const latestLines = latestOnly(); // a log read drawn only if no later one (or a follow) started

  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => showRun(shown), 300);
  });
  level.addEventListener("change", () => showRun(shown));

  function filters() {
    const query = {};
    if (search.value.trim()) query.q = search.value.trim();
    if (level.value) query.level = level.value;
    return query;
  }

  async function loadRuns({ withStats = true } = {}) {
    try {
      const [answer, stats] = await Promise.all([
        api(`/api/v1/jobs/${jobId}/executions`, { query: pager.params() }),
        withStats ? api(`/api/v1/jobs/${jobId}/stats`) : null,
      ]);
      if (closed) return;
      pager.update(answer);
      if (stats) {
        fill(statsBox, h("p", { class: "muted", "data-testid": "run-success" }, successText(stats)));
      }
      runsLive = answer.items.some((e) => e.status === "running");
      if (pager.page === 0) latest = answer.items[0] || null;
      drawRuns(answer.items);
      const wanted = chosen === null ? latest : answer.items.find((e) => e.id === chosen);
      if (wanted && (!shown || wanted.id !== shown.id)) showRun(wanted);
      else if (wanted && shown && (wanted.status !== shown.status || wanted.status === "running")) {
        shown = wanted; // it ended (its chart has its last sample now), or its chart grows
        drawChart(wanted);
      }
    } catch (exc) {
      fill(runsBox, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  function drawRuns(items) {
    fill(runsBox, dataTable({
      testid: "executions-table",
      rows: items,
      rowKey: (e) => e.id,
      emptyText: "No run yet.",
      columns: [
        { key: "execution_number", label: "Run", render: (e) => `#${e.execution_number}` },
        { key: "status", label: "Status", render: (e) => stateBadge(e.status, "run-state") },
        { key: "started_at", label: "Started", render: (e) => time(e.started_at) },
        { key: "duration_ms", label: "Duration", numeric: true, render: (e) => ms(e.duration_ms) },
        { key: "items_crawled", label: "Fetched", numeric: true, render: (e) => h("span", { "data-testid": "run-fetched" }, num(e.items_crawled)) },
        { key: "items_indexed", label: "Stored", numeric: true, render: (e) => num(e.items_indexed) },
        { key: "items_failed", label: "Failed", numeric: true, render: (e) => num(e.items_failed ?? null) },
        { key: "pages_per_second", label: "Pages/s", numeric: true, render: (e) => rate(e.pages_per_second) },
        { key: "error_message", label: "Error", render: (e) => e.error_message },
        { key: "log", label: "Log", render: (e) => logButton(e) },
      ],
    }), pager.controls(() => loadRuns()));
  }

  function logButton(execution) {
    const current = shown?.id === execution.id;
    return h("button", {
      type: "button",
      class: current ? "selected" : null,
      "aria-pressed": current ? "true" : "false",
      "aria-label": `Show the log of run #${execution.execution_number}`,
      "data-testid": `run-log-${execution.execution_number}`,
      onclick: () => {
        chosen = latest && execution.id === latest.id ? null : execution.id;
        showRun(execution);
        drawRuns(pager.last?.items || []);
      },
    }, current ? "Shown" : "Show");
  }

  /** Show `execution`'s log: followed live while it runs with no filter, else read. */
  function showRun(execution) {
    if (!execution || closed) return;
    following?.abort();
    following = null;
    shown = execution;
    after = 0;
    count = 0;
    log.textContent = "";
    more.hidden = true;
    title.textContent = `Log of run #${execution.execution_number}`;
    drawChart(execution);
    const filtered = Object.keys(filters()).length > 0;
    if (execution.status === "running" && !filtered) {
      latestLines.drop(); // a read still on its way (the filters were just cleared) adds no line
      follow(execution);
    } else readLines(false);
  }

  function appendLine(line) {
    const text = `${lineTime(line.created_at)} ${line.level.padEnd(7)} ${line.message}\n`;
    const warned = line.level === "WARNING" ? "log-warning" : ["ERROR", "CRITICAL"].includes(line.level) ? "log-error" : null;
    log.append(warned ? h("span", { class: warned }, text) : text);
    count += 1;
  }

  async function readLines(further) {
    const execution = shown;
    logState.textContent = "Reading the log…";
    try {
      const answer = await latestLines(api(`/api/v1/jobs/${jobId}/logs`, {
        query: { execution_id: execution.id, after: further ? after : 0, limit: PAGE, ...filters() },
      }));
      if (closed || execution !== shown) return;
      answer.lines.forEach(appendLine);
      if (answer.lines.length) after = answer.lines[answer.lines.length - 1].seq;
      more.hidden = answer.next_after === null || answer.next_after === undefined;
      const filtered = Object.keys(filters()).length > 0;
      const still = execution.status === "running" ? " The run goes on: clear the filters to follow it live." : "";
      logState.textContent = (count
        ? `${num(count)} ${count === 1 ? "line" : "lines"}${filtered ? (count === 1 ? " matches" : " match") : ""}${more.hidden ? "." : " so far."}`
        : filtered ? "No line matches." : "This run logged nothing.") + still;
    } catch (exc) {
      logState.textContent = describe(exc);
    }
  }

  async function follow(execution) {
    const controller = new AbortController();
    following = controller;
    logState.textContent = `Following run #${execution.execution_number}…`;
    try {
      await readStream(`/api/v1/jobs/${jobId}/logs/stream`, { execution_id: execution.id }, (name, data) => {
        if (name === "log") {
          const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
          appendLine(data);
          if (atBottom) log.scrollTop = log.scrollHeight;
        } else if (name === "end") {
          logState.textContent = `The run ended: ${data.status}.`;
        }
      }, controller.signal);
      if (closed) return;
      loadRuns();
      onRunEnded();
    } catch (exc) {
      if (exc.name === "AbortError") return;
      logState.textContent = describe(exc);
    } finally {
      if (following === controller) following = null;
    }
  }

  async function drawChart(execution) {
    try {
      const progress = await api(`/api/v1/executions/${execution.id}/progress`);
      if (closed || execution.id !== shown?.id) return;
      const samples = progress.samples;
      if (!samples.length) {
        fill(chartBox, h("p", { class: "muted" }, execution.status === "running"
          ? "Its counters come with its first stored pages."
          : "No counters over time for this run."));
        return;
      }
      const start = Math.min(execution.started_at, samples[0].at);
      const points = [{ x: start, y: 0 }, ...samples.map((p) => ({ x: p.at, y: p.fetched }))];
      const end = points[points.length - 1].x;
      const last = samples[samples.length - 1];
      const summary = h("p", { class: "muted" },
        `${num(last.fetched)} fetched, ${num(last.stored)} stored, ${num(last.failed)} failed in ${span(end - start)}.`);
      if (end - start < 2) { // over before a second sample: a line would say nothing
        fill(chartBox, summary);
        return;
      }
      fill(chartBox,
        lineChart(points, {
          x0: start, x1: end, height: 140,
          title: `Pages fetched over run #${execution.execution_number}`,
          xLabel: (x) => (end - start < 20 ? `${secondsFmt.format(x - start)} s` : span(x - start)),
        }),
        summary);
    } catch (exc) {
      fill(chartBox, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  /** The shown run's log as a text file, with the search and level applied. */
  async function saveShownLog() {
    if (!shown) {
      logState.textContent = "This job has not run yet.";
      return;
    }
    try {
      await download(`/api/v1/jobs/${jobId}/logs`, { query: { download: 1, execution_id: shown.id, ...filters() } });
    } catch (exc) {
      logState.textContent = describe(exc);
    }
  }

  loadRuns();
  return {
    runsPanel,
    logPanel,
    /** The job page's tick: re-read the runs while one goes, or when the job says one began. */
    refresh(jobRunning = false) {
      if (runsLive || jobRunning) loadRuns({ withStats: false });
    },
    reload: () => loadRuns(),
    close() {
      closed = true;
      clearTimeout(typing);
      following?.abort();
    },
  };
}

const rates = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const secondsFmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/** A log line's time, to the second (a run's lines are seconds apart). */
function lineTime(epoch) {
  return new Date(epoch * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
}

function rate(value) {
  return value === null || value === undefined ? "—" : rates.format(value);
}
