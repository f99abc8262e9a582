// The job form, for creating and editing: the API validates, and its messages are shown
// under the fields they name.

import { api, describe } from "../api.js";
import { field, fill, h, showFieldErrors } from "../dom.js";
import { namespaceOf } from "./sources.js";

/** An epoch time as a datetime-local value (local time, to the minute); "" for none. */
function localInput(epoch) {
  if (epoch === null || epoch === undefined) return "";
  const d = new Date(epoch * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

const UNIT_MINUTES = { minutes: 1, hours: 60, days: 1440 };

const minutesOf = (count, type) => count * (UNIT_MINUTES[type] || 1);

/** An interval in the largest unit it is two or more of: 360 minutes are [6, "hours"], 2,880
 * [2, "days"], 1,440 [24, "hours"] and 60 [60, "minutes"] ("1 hours" reads worse); null stays. */
function wholeInterval(count, type) {
  if (count === null || count === undefined) return [count, type];
  const minutes = minutesOf(count, type);
  for (const [unit, size] of [["days", 1440], ["hours", 60]]) {
    if (minutes % size === 0 && minutes / size >= 2) return [minutes / size, unit];
  }
  return [minutes, "minutes"];
}

function option(value, label, selected) {
  return h("option", { value: String(value), selected: Boolean(selected) }, label);
}

/** A form; onSaved(job, duplicates) after the API accepted it, `duplicates` the jobs the
 * source already had when a new one was made. `job` null: a new job. */
export function jobForm(job, { onSaved, onCancel }) {
  const sourceSelect = h("select", { name: "source_id" }, option("", "Loading sources…"));
  const url = h("input", { name: "url", type: "text", inputmode: "url", value: job?.url || "" });
  // A job made with 360 minutes reads "6 hours", as its page says "6 h".
  const [count, unit] = job ? wholeInterval(job.interval_minutes, job.interval_type) : [60, "minutes"];
  const interval = h("input", {
    name: "interval_minutes", type: "number", min: "1", step: "1", value: count ?? "",
  });
  const intervalType = h("select", { name: "interval_type" },
    ["minutes", "hours", "days"].map((t) => option(t, t, (unit || "minutes") === t)));
  const scheduleEnabled = h("input", { name: "schedule_enabled", type: "checkbox", checked: job ? job.schedule_enabled : true });
  const adaptive = h("input", { name: "adaptive_scheduling", type: "checkbox", checked: job ? job.adaptive_scheduling : true });
  const maxRetries = h("input", { name: "max_retries", type: "number", value: String(job ? job.max_retries : 3) });
  const backoff = h("input", { name: "retry_backoff_seconds", type: "number", value: String(job ? job.retry_backoff_seconds : 60) });
  const firstRun = h("input", { name: "next_run_at", type: "datetime-local", value: localInput(job?.next_run_at) });
  const message = h("p", { class: "form-error", role: "alert", "data-testid": "form-error" });
  const submit = h("button", { type: "submit", class: "primary" }, job ? "Save changes" : "Create job");

  // A source's jobs all crawl into its one namespace: a second job is most often a mistake.
  const sameSource = h("p", { class: "warn-text", "data-testid": "job-source-hint", "aria-live": "polite" });
  let sourcesById = new Map();
  function otherJobs() {
    const src = sourcesById.get(Number(sourceSelect.value));
    return (src?.jobs || []).filter((other) => other.id !== job?.id);
  }
  function hintSource() {
    const others = otherJobs();
    const src = sourcesById.get(Number(sourceSelect.value));
    sameSource.textContent = others.length
      ? `${src.name} already has ${others.map((o) => `job #${o.id} (${o.status})`).join(", ")} crawling into ${namespaceOf(src)}: a new job crawls there too.`
      : "";
  }
  sourceSelect.addEventListener("change", () => {
    hintSource();
    // A new job starts where its source does, unless a URL was typed already.
    const src = sourcesById.get(Number(sourceSelect.value));
    if (!job && !url.value.trim() && src?.start_urls?.length) url.value = src.start_urls[0];
  });

  api("/api/v1/sources", { query: { limit: 500 } }).then((page) => {
    sourcesById = new Map(page.items.map((src) => [src.id, src]));
    fill(sourceSelect,
      option("", page.items.length ? "Choose a source" : "No source yet: create one first", !job),
      page.items.map((src) => option(src.id, `${src.name} (#${src.id})`, job?.source_id === src.id)));
    hintSource();
  }).catch((exc) => {
    fill(sourceSelect, option("", `Sources unavailable: ${describe(exc)}`));
  });

  function values() {
    const raw = {
      source_id: sourceSelect.value === "" ? null : Number(sourceSelect.value),
      url: url.value.trim(),
      interval_minutes: interval.value === "" ? null : Number(interval.value),
      interval_type: intervalType.value,
      schedule_enabled: scheduleEnabled.checked,
      adaptive_scheduling: adaptive.checked,
      max_retries: maxRetries.value === "" ? null : Number(maxRetries.value),
      retry_backoff_seconds: backoff.value === "" ? null : Number(backoff.value),
      next_run_at: firstRun.value === "" ? null : new Date(firstRun.value).getTime() / 1000,
    };
    if (!job) return raw;
    // The field shows minutes: an untouched one must not move the run by the seconds cut off.
    if (firstRun.value === localInput(job.next_run_at) || firstRun.value === "") delete raw.next_run_at;
    // The same interval in other units is no change: sent, it would place the next run anew.
    if (raw.interval_minutes !== null && job.interval_minutes !== null
        && minutesOf(raw.interval_minutes, raw.interval_type) === minutesOf(job.interval_minutes, job.interval_type)) {
      raw.interval_minutes = job.interval_minutes;
      raw.interval_type = job.interval_type;
    }
    // An edit sends what changed (null interval: the job becomes a one-time job).
    return Object.fromEntries(Object.entries(raw).filter(([key, value]) => value !== job[key]));
  }

  const form = h("form", {
    class: "panel", novalidate: true, "data-testid": job ? "job-edit-form" : "job-create-form",
    "aria-label": job ? `Edit job ${job.id}` : "New job",
    onsubmit: async (event) => {
      event.preventDefault();
      message.textContent = "";
      showFieldErrors(form, {});
      submit.disabled = true;
      try {
        const body = values();
        const duplicates = job ? [] : otherJobs();
        const saved = job
          ? await api(`/api/v1/jobs/${job.id}`, { method: "PUT", body })
          : await api("/api/v1/jobs", { method: "POST", body });
        onSaved(saved, duplicates);
      } catch (exc) {
        const fields = exc.fieldErrors ? exc.fieldErrors() : {};
        showFieldErrors(form, fields);
        message.textContent = describe(exc);
        form.querySelector("[aria-invalid='true']")?.focus();
      } finally {
        submit.disabled = false;
      }
    },
  },
  h("h2", {}, job ? `Edit job ${job.id}` : "New job"),
  h("div", { class: "row" },
    field("Source", sourceSelect),
    field("URL", url)),
  sameSource,
  h("div", { class: "row" },
    field("Every (empty: run once)", interval),
    field("Unit", intervalType),
    field("Max retries", maxRetries),
    field("Retry backoff (s)", backoff)),
  h("div", { class: "row" },
    field(job ? "Next run" : "First run (empty: the least-loaded slot)", firstRun)),
  h("div", { class: "row" },
    h("label", { class: "check" }, scheduleEnabled, "Schedule enabled"),
    h("label", { class: "check" }, adaptive, "Adaptive interval")),
  message,
  h("div", { class: "actions" },
    submit,
    h("button", { type: "button", onclick: onCancel }, job ? "Discard changes" : "Discard")));
  return form;
}
