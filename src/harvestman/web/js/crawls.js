// Which crawl a view shows: "All crawls" or one namespace, chosen in a select and kept in the
// address (#/pages?crawl=shop), so a link from a job opens its crawl and a reload keeps it.
// The names come from the API's crawl list; each says which source it belongs to.

import { api } from "./api.js";
import { h } from "./dom.js";
import { num } from "./format.js";

/** The query part of the address (#/pages?crawl=shop&host=a.test). */
export function hashQuery() {
  const hash = location.hash.replace(/^#/, "");
  const at = hash.indexOf("?");
  return new URLSearchParams(at < 0 ? "" : hash.slice(at + 1));
}

/** Write `values` into the address's query without drawing the view again ("" removes). */
export function keepInHash(values) {
  const hash = location.hash.replace(/^#/, "") || "/overview";
  const path = hash.split("?")[0];
  const query = hashQuery();
  for (const [key, value] of Object.entries(values)) {
    if (value === null || value === undefined || value === "") query.delete(key);
    else query.set(key, String(value));
  }
  const text = query.toString();
  history.replaceState(null, "", `#${path}${text ? `?${text}` : ""}`);
}

/** The address of a view showing one crawl: viewLink("/pages", "shop"). */
export function viewLink(path, crawl, extra = {}) {
  const query = new URLSearchParams({ ...(crawl ? { crawl } : {}), ...extra });
  const text = query.toString();
  return `#${path}${text ? `?${text}` : ""}`;
}

/** Every crawl (GET /api/crawls): [{name, pages, source: {id, name} | null, job_ids}]. Asked
 * by each view as it opens: a source made a moment ago has its crawl listed. */
export async function crawlNames() {
  const answer = await api("/api/crawls");
  return answer.items;
}

function label(crawl) {
  const source = crawl.source ? ` (source ${crawl.source.name})` : "";
  const pages = typeof crawl.pages === "number" ? ` · ${num(crawl.pages)} pages` : "";
  return `${crawl.name}${source}${pages}`;
}

/**
 * A crawl select: "All crawls" (value "") and each crawl by name with its source and pages;
 * starts on the address's `crawl` and writes a change back there; `onChange(name)` reloads.
 * Returns {input, list}: `input.value` is the chosen name ("" for all), `list` is nothing
 * to place (kept for views built for a text input with a datalist); `input.ready` resolves
 * to the crawls listed.
 */
export function crawlPicker({ name = "crawl", onChange = null } = {}) {
  const current = hashQuery().get("crawl") || "";
  const select = h("select", { name, "data-testid": `${name}-select` },
    h("option", { value: "" }, "All crawls"),
    current ? h("option", { value: current, selected: true }, current) : null);
  select.ready = crawlNames()
    .then((crawls) => {
      const chosen = select.value;
      select.replaceChildren(
        h("option", { value: "" }, "All crawls"),
        ...crawls.map((crawl) => h("option", { value: crawl.name, selected: crawl.name === chosen }, label(crawl))));
      if (chosen && !crawls.some((crawl) => crawl.name === chosen)) {
        select.append(h("option", { value: chosen, selected: true }, `${chosen} (unknown)`));
      }
      return crawls;
    })
    .catch(() => []);
  select.addEventListener("change", () => {
    keepInHash({ crawl: select.value });
    if (onChange) onChange(select.value);
  });
  return { input: select, list: null };
}

/** What an empty list says: which crawl it looked at, and that others hold data;
 * "for these filters" only when a filter besides the crawl is set (`filtered`). */
export function emptyFor(what, crawl, crawls = [], filtered = false) {
  const these = filtered ? " for these filters" : "";
  if (!crawl) return `No ${what} in any crawl${these}.`;
  const others = crawls.filter((c) => c.name !== crawl).map((c) => c.name);
  const elsewhere = others.length
    ? ` ${num(others.length)} other crawl${others.length === 1 ? "" : "s"} exist${others.length === 1 ? "s" : ""} (${others.slice(0, 5).join(", ")}${others.length > 5 ? ", …" : ""}): choose “All crawls” to see them.`
    : "";
  return `No ${what} in the crawl “${crawl}”${these}.${elsewhere}`;
}

/** The crawl a row belongs to, when the API says it (lists of all crawls do). */
export function crawlOf(row) {
  return row.crawl ?? null;
}

/** A table's Crawl column (``table.js``): the name read whole, sortable where the table
 * sorts its rows. */
export const CRAWL_COLUMN = Object.freeze({ key: "crawl", label: "Crawl", nowrap: true, sortable: true, value: crawlOf, render: crawlOf });

/** A line saying which crawl the figures below are of. */
export function scopeText(crawl) {
  return crawl ? `Showing the crawl “${crawl}”.` : "Showing every crawl.";
}
