// Sources: what jobs crawl. The list (start URLs, namespace, jobs), and for an admin the
// form to create, edit or clone one, and delete with a confirmation. Creating an enabled
// source makes its job at once: the notice names it, with a link.

import { api, describe, latestOnly } from "../api.js";
import { confirmAction } from "../confirm.js";
import { viewLink } from "../crawls.js";
import { field, fill, h, showFieldErrors } from "../dom.js";
import { num } from "../format.js";
import { Pager } from "../pager.js";
import { isAdmin } from "../session.js";
import { dataTable } from "../table.js";
import { stateBadge } from "./jobs.js";

/** The crawl (namespace) a source's jobs store into, as the API names it. */
export function namespaceOf(source) {
  return source.namespace || source.crawl || `source-${source.id}`;
}

function lines(text) {
  return text.split(/\s+/).filter(Boolean);
}

function jobLinks(source) {
  if (!source.jobs?.length) return h("span", { class: "muted" }, "none");
  return h("span", { class: "actions" }, source.jobs.map((job) => h("span", {},
    h("a", { href: `#/jobs/${job.id}` }, `#${job.id}`), " ", stateBadge(job.status))));
}

// The crawl options a source may set (the API's `options`; absent: the service's setting):
// [key, label, hint, [shown, value] choices].
const ON_OFF = [["on", true], ["off", false]];
const SWITCHES = [
  ["main_text", "Main text", "the article text without menus and footers (~2-13 ms a page)", ON_OFF],
  ["store_text", "Page text", "keep each page's visible text: full-text search indexes it (costly)", ON_OFF],
  ["feeds", "Feeds", "follow RSS and Atom feeds the pages name", ON_OFF],
  ["pagination", "Pagination", "ask for the next page of ?page=N and /page/N listings", ON_OFF],
  ["archives", "Archives", "ask for /archive and date paths", ON_OFF],
  ["near_duplicates", "Near-duplicates", "mark pages nearly the same as one stored (~15 % more CPU)", ON_OFF],
  ["images", "Images", "download product images, politely", ON_OFF],
];
const SLASH = ["trailing_slash", "Trailing slash",
  "a path's trailing slash: as written, added (not to a file), or stripped",
  ["keep", "add", "strip"].map((v) => [v, v])];

/** The options a source sets (the API lists every option, null where the service decides). */
function setOptions(options) {
  return Object.fromEntries(Object.entries(options || {}).filter(([, value]) => value !== null && value !== undefined));
}

/** The options part of the source form: each choice one of its values or the service's
 * setting, and the ingest rate a number or the service's. */
function optionFields(options) {
  const given = setOptions(options);
  const selects = new Map(); // key -> [select, choices]
  function choice([key, label, hint, choices]) {
    const select = h("select", { name: `options.${key}` },
      h("option", { value: "" }, "service's setting"),
      choices.map(([shown, value]) => h("option", { value: shown, selected: given[key] === value }, shown)));
    selects.set(key, [select, choices]);
    return field(label, select, hint);
  }
  const rate = h("input", {
    name: "options.ingest_rate", type: "number", min: "0", step: "1", placeholder: "service's setting",
    value: given.ingest_rate ?? "",
  });
  const box = h("details", { class: "options", open: Object.keys(given).length > 0 },
    h("summary", {}, "Crawl options"),
    h("div", { class: "row" }, SWITCHES.map(choice)),
    h("div", { class: "row" },
      field("New URLs per second (0: no limit)", rate, "how fast the crawl's new links come due"),
      choice(SLASH)));
  function value() {
    const chosen = {};
    for (const [key, [select, choices]] of selects) {
      const picked = choices.find(([shown]) => shown === select.value);
      if (picked) chosen[key] = picked[1];
    }
    if (rate.value !== "") chosen.ingest_rate = Number(rate.value);
    return chosen;
  }
  return { box, value };
}

/** Two option objects alike whatever their keys' order and unset (null) entries. */
function sameOptions(a, b) {
  const sorted = (o) => JSON.stringify(Object.entries(setOptions(o)).sort(([x], [y]) => (x < y ? -1 : 1)));
  return sorted(a) === sorted(b);
}

/**
 * The source form. `source` null: a new source; `mode` "edit" sends only what changed,
 * "clone" and "create" make a new one. onSaved(source, mode) after the API accepted it.
 */
export function sourceForm(source, mode, { onSaved, onDiscard }) {
  const editing = mode === "edit";
  const name = h("input", {
    name: "name", type: "text",
    value: source ? (mode === "clone" ? `${source.name} (copy)` : source.name) : "",
  });
  const starts = h("textarea", { name: "start_urls", rows: 2, placeholder: "https://example.com/" });
  starts.value = (source?.start_urls || []).join("\n");
  const domains = h("textarea", { name: "scope", rows: 2, placeholder: "empty: the start URLs' hosts" });
  domains.value = (source?.scope?.allow_domains || []).join("\n");
  const depth = h("input", { name: "max_depth", type: "number", min: "0", value: String(source?.max_depth ?? 0) });
  const delay = h("input", {
    name: "crawl_delay", type: "number", step: "0.1", min: "0", placeholder: "robots.txt or 1 s",
    value: source?.crawl_delay ?? "",
  });
  const maxPages = h("input", { name: "max_pages", type: "number", min: "0", value: String(source?.max_pages ?? 0) });
  const enabled = h("input", { name: "enabled", type: "checkbox", checked: source ? source.enabled : true });
  const options = optionFields(source?.options);
  const message = h("p", { class: "form-error", role: "alert", "data-testid": "source-form-error" });
  const title = { create: "New source", edit: `Edit source ${source?.name}`, clone: `Clone source ${source?.name}` }[mode];
  const submit = h("button", { type: "submit", class: "primary" }, editing ? "Save source" : "Create source");

  function values() {
    const body = {
      name: name.value.trim(),
      start_urls: lines(starts.value),
      max_depth: Number(depth.value || 0),
      crawl_delay: delay.value === "" ? null : Number(delay.value),
      max_pages: Number(maxPages.value || 0),
      enabled: enabled.checked,
      scope: { ...(source?.scope || {}), allow_domains: lines(domains.value) },
      options: options.value(),
    };
    if (!editing) return body;
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    const changed = Object.fromEntries(Object.entries(body).filter(([key, value]) => !same(value, source[key])));
    // The API replaces the options with what is sent: sent whole, and only when they changed.
    if (sameOptions(body.options, source.options)) delete changed.options;
    return changed;
  }

  const form = h("form", {
    class: "panel", novalidate: true, "aria-label": title, "data-testid": `source-${mode}-form`,
    onsubmit: async (event) => {
      event.preventDefault();
      message.textContent = "";
      showFieldErrors(form, {});
      submit.disabled = true;
      try {
        const saved = editing
          ? await api(`/api/v1/sources/${source.id}`, { method: "PUT", body: values() })
          : await api("/api/v1/sources", { method: "POST", body: values() });
        onSaved(saved, mode);
      } catch (exc) {
        showFieldErrors(form, exc.fieldErrors ? { ...exc.fieldErrors(), ...exc.fieldErrorsByPath() } : {});
        message.textContent = describe(exc);
        form.querySelector("[aria-invalid='true']")?.focus();
      } finally {
        submit.disabled = false;
      }
    },
  },
  h("h2", {}, title),
  h("div", { class: "row" }, field("Name", name), field("Start URLs (one per line)", starts)),
  h("div", { class: "row" },
    field("Max depth (0: 3)", depth), field("Crawl delay (s)", delay),
    field("Max pages per run (0: no limit)", maxPages),
    field("Allowed domains (one per line)", domains)),
  h("label", { class: "check" }, enabled, "Enabled (an enabled source has a recurring job)"),
  options.box,
  message,
  h("div", { class: "actions" }, submit,
    h("button", { type: "button", onclick: onDiscard }, editing ? "Discard changes" : "Discard")));
  return form;
}

/** What a save made, in words: a new source names the job the API made for it. */
function savedText(source, mode) {
  if (mode === "edit") return [`Source ${source.name} (#${source.id}) saved.`];
  const job = source.jobs?.[0];
  if (!job) return [`Source ${source.name} (#${source.id}) created. It is disabled, so it has no job yet.`];
  return [`Source ${source.name} (#${source.id}) created with `,
    h("a", { href: `#/jobs/${job.id}`, "data-testid": "created-job" }, `job #${job.id}`),
    ` (${job.status}), crawling into ${namespaceOf(source)}.`];
}

export function render(main, { query } = {}) {
  const latest = latestOnly(); // a filter's read drawn only if no later one started
  const pager = new Pager(50);
  const notice = h("p", { role: "status", "data-testid": "sources-status" });
  const formBox = h("div");
  // #/sources?name=shop: a job's page links to its source this way.
  const search = h("input", { name: "name", type: "search", placeholder: "part of a name", value: query?.get("name") || "" });
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  let rows = [];
  let timer = null;

  function say(parts, tone = "notice") {
    fill(notice, parts);
    notice.className = tone;
  }

  function openForm(source, mode) {
    fill(formBox, sourceForm(source, mode, {
      onSaved: (saved, how) => { fill(formBox); say(savedText(saved, how)); pager.reset(); load(); },
      onDiscard: () => fill(formBox),
    }));
    formBox.querySelector("input")?.focus();
    formBox.scrollIntoView({ block: "nearest" });
  }

  /** A source whose job runs cannot be deleted: said with the way out, not as a refusal. */
  function sayRunning(source, jobId) {
    say([`Source ${source.name} cannot be deleted while its `,
      h("a", { href: `#/jobs/${jobId}` }, `job #${jobId}`), " runs: cancel the job first."], "error-text");
  }

  async function remove(source) {
    const running = source.jobs?.find((job) => job.status === "running");
    if (running) {
      sayRunning(source, running.id);
      return;
    }
    const count = source.jobs?.length || 0;
    const sure = await confirmAction({
      question: `Delete source ${source.name}?`,
      detail: `${{ 0: "It has no job.", 1: "Its job and its run history are deleted too." }[count]
        ?? `Its ${num(count)} jobs and their run history are deleted too.`} `
        + `The pages already stored stay in the crawl ${namespaceOf(source)}.`,
      confirmLabel: `Yes, delete source ${source.name}`,
      keepLabel: "Keep the source",
    });
    if (!sure) return;
    try {
      await api(`/api/v1/sources/${source.id}`, { method: "DELETE" });
      say([`Source ${source.name} (#${source.id}) deleted.`]);
      load();
    } catch (exc) {
      if (exc.status === 409 && exc.details?.state === "running") sayRunning(source, exc.details.job_id);
      else say([describe(exc)], "error-text");
      load();
    }
  }

  function draw() {
    fill(box, dataTable({
      testid: "sources-table",
      rowKey: (src) => src.id,
      rows,
      emptyText: search.value.trim() ? `No source named like “${search.value.trim()}”.` : "No source yet: create one to crawl a site.",
      columns: [
        { key: "name", label: "Source", render: (src) => h("span", {}, h("strong", {}, src.name), h("span", { class: "muted" }, ` #${src.id}`)) },
        { key: "start_urls", label: "Start URLs", url: true, render: (src) => src.start_urls.join("\n") },
        { key: "namespace", label: "Crawl", nowrap: true, render: (src) => h("a", { href: viewLink("/pages", namespaceOf(src)), title: "Its pages" }, h("code", {}, namespaceOf(src))) },
        { key: "jobs", label: "Jobs", render: jobLinks },
        { key: "enabled", label: "Enabled", render: (src) => (src.enabled ? "yes" : "no") },
        isAdmin() ? {
          key: "actions", label: "Actions",
          render: (src) => h("span", { class: "actions" },
            h("button", { type: "button", "aria-label": `Edit source ${src.name}`, onclick: () => openForm(src, "edit") }, "Edit"),
            h("button", { type: "button", "aria-label": `Clone source ${src.name}`, onclick: () => openForm(src, "clone") }, "Clone"),
            h("button", { type: "button", class: "danger", "aria-label": `Delete source ${src.name}`, onclick: () => remove(src) }, "Delete")),
        } : null,
      ].filter(Boolean),
    }), pager.controls(load));
  }

  async function load() {
    try {
      const answer = await latest(api("/api/v1/sources", { query: { name: search.value.trim(), ...pager.params() } }));
      pager.update(answer);
      rows = answer.items;
      draw();
    } catch (exc) {
      fill(box, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  fill(main,
    h("div", { class: "spread" }, h("h1", {}, "Sources"),
      isAdmin() ? h("button", { type: "button", class: "primary", onclick: () => openForm(null, "create") }, "New source") : null),
    formBox,
    h("section", { class: "panel" },
      h("form", { role: "search", onsubmit: (e) => { e.preventDefault(); pager.reset(); load(); } },
        field("Filter by name", search)),
      notice, box));
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { pager.reset(); load(); }, 300);
  });
  load();
  return () => clearTimeout(timer);
}
