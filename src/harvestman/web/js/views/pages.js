// Pages: crawled pages of one crawl or all, by host, HTTP status and check, narrowed by URL
// or title among the rows loaded; or, in full-text mode, ranked hits of the search index
// (GET /api/search). Each title opens the page's detail; the list as filtered downloads as
// CSV or JSONL (GET /api/pages/export).

import { api, latestOnly } from "../api.js";
import { CRAWL_COLUMN, crawlOf, emptyFor, keepInHash, scopeText } from "../crawls.js";
import { field, fill, h } from "../dom.js";
import { bytes, ms, time } from "../format.js";
import { Pager } from "../pager.js";
import { dataTable } from "../table.js";
import { downloadButtons } from "../downloads.js";
import { crawlInput, crawlProblem } from "./frontier.js";

function link(url) {
  // Only web URLs become links: a stored URL is data from elsewhere.
  return /^https?:\/\//i.test(url)
    ? h("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank" }, url)
    : url;
}

/** A stored page's title, opening its detail view. */
function pageLink(id, title) {
  return h("a", { href: `#/pages/${id}`, "data-testid": "page-link" }, title || "(no title)");
}

/** A search snippet (escaped text with <mark> around matches) as nodes, never as HTML. */
export function marked(snippet) {
  // The five entities the API's escaping writes, decoded by hand: an HTML parser drops the
  // whitespace that opens a fragment ("Steel <mark>Kettle</mark> 1.7L" lost its space).
  const ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#x27;": "'", "&#39;": "'" };
  const decode = (text) => text.replace(/&(amp|lt|gt|quot|#x27|#39);/g, (entity) => ENTITIES[entity]);
  let inside = false;
  const nodes = [];
  for (const part of snippet.split(/(<\/?mark>)/)) {
    if (part === "<mark>") inside = true;
    else if (part === "</mark>") inside = false;
    else if (part) nodes.push(inside ? h("mark", {}, decode(part)) : decode(part));
  }
  return h("span", {}, nodes);
}

export function render(main, { query = new URLSearchParams() } = {}) {
  const latest = latestOnly(); // a filter's read drawn only if no later one started
  const pager = new Pager(200);
  let rows = [];
  let crawls = [];
  let applied = null; // the filters of the list shown: what a download holds
  let hits = null; // the answer of a full-text search, when in that mode
  let sort = { key: "fetched_at", dir: "desc" };
  const crawl = crawlInput("pages-crawl", { onChange: () => { pager.reset(); load(); } });
  crawl.input.ready.then((found) => { crawls = found; if (applied && !rows.length && !hits) draw(); });
  const host = h("input", { name: "host", type: "search", placeholder: "exact host", value: query.get("host") || "" });
  const code = h("input", { name: "status_code", type: "number", min: "0", max: "999", placeholder: "e.g. 404", value: query.get("status_code") || "" });
  const check = h("select", { name: "validation_status" },
    [["", "any"], ["ok", "ok"], ["soft", "rejected (soft)"], ["hard", "blocked (hard)"]]
      .map(([value, label]) => h("option", { value, selected: value === (query.get("validation_status") || "") }, label)));
  const text = h("input", { name: "q", type: "search", placeholder: "part of the URL or title" });
  const fullText = h("input", { name: "full_text", type: "checkbox" });
  const scope = h("p", { class: "muted", "data-testid": "crawl-scope" });
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const downloads = downloadButtons("/api/pages/export", () => {
    if (hits) {
      downloads.status.textContent = "A full-text search cannot be downloaded: untick “Full text” for the page list.";
      return null;
    }
    return applied;
  }, "page");
  fill(main,
    h("h1", {}, "Pages"),
    scope,
    h("section", { class: "panel" },
      h("form", {
        class: "row", role: "search",
        onsubmit: (e) => { e.preventDefault(); pager.reset(); load(); },
      },
      field("Crawl", crawl.input), crawl.list, field("Host", host), field("HTTP status", code),
      field("Check", check), field("URL or title contains", text),
      h("label", { class: "check" }, fullText, "Full text (ranked, page text included)"),
      h("button", { type: "submit" }, "Search")),
      downloads.box,
      box),
  );
  text.addEventListener("input", () => { if (!fullText.checked) draw(); });
  check.addEventListener("change", () => { pager.reset(); load(); });

  function drawHits() {
    fill(box, dataTable({
      testid: "search-table",
      rows: hits.items,
      caption: `${hits.total}${hits.total_is_exact ? "" : "+"} ${hits.total === 1 ? "match" : "matches"}, best first.`,
      emptyText: `No page matches “${text.value.trim()}”.`,
      columns: [
        { key: "title", label: "Title", render: (p) => pageLink(p.page_id, p.title) },
        // Over every crawl one page can match twice, once in each crawl that stored it.
        crawl.input.value.trim() ? null : CRAWL_COLUMN,
        { key: "url", label: "URL", url: true, render: (p) => link(p.url) },
        { key: "snippet", label: "Snippet", render: (p) => marked(p.snippet || "") },
        { key: "fetched_at", label: "Fetched", render: (p) => time(p.fetched_at) },
      ].filter(Boolean),
    }), pager.controls(load));
  }

  function draw() {
    if (hits) {
      drawHits();
      return;
    }
    const needle = text.value.trim().toLowerCase();
    const shown = needle
      ? rows.filter((p) => p.url.toLowerCase().includes(needle) || (p.title || "").toLowerCase().includes(needle))
      : rows;
    fill(box, dataTable({
      testid: "pages-table",
      rows: shown,
      sort,
      onSort: (next) => { sort = next; draw(); },
      caption: needle ? `${shown.length} of the ${rows.length} pages loaded match “${text.value.trim()}” (downloads hold every page of the other filters).` : null,
      emptyText: rows.length ? "No loaded page matches: load the next rows or change the filters." : emptyFor("page stored", applied?.crawl || "", crawls,
        Boolean(applied && (applied.host || applied.status_code || applied.validation_status))),
      columns: [
        { key: "fetched_at", label: "Fetched", sortable: true, render: (p) => time(p.fetched_at) },
        { key: "status_code", label: "Status", numeric: true, sortable: true },
        { key: "title", label: "Title", sortable: true, render: (p) => pageLink(p.id, p.title) },
        applied?.crawl ? null : CRAWL_COLUMN,
        { key: "url", label: "URL", url: true, sortable: true, render: (p) => link(p.url) },
        { key: "content_type", label: "Type" },
        { key: "content_length", label: "Size", numeric: true, sortable: true, nowrap: true, render: (p) => bytes(p.content_length) },
        { key: "crawl_duration_ms", label: "Took", numeric: true, sortable: true, nowrap: true, render: (p) => ms(p.crawl_duration_ms) },
        // A check's own verdict first ("hard: needs_js"); a fetch that failed has none, and
        // its error is what the row has to say.
        { key: "validation_status", label: "Check", render: (p) => p.rejection_reason
          ? `${p.validation_status}: ${p.rejection_reason}`
          : p.error_class ? h("span", { class: "error-text", title: p.error || "" }, p.error_class) : p.validation_status },
      ].filter((column) => column && (column.key !== "crawl" || rows.some(crawlOf))),
    }), pager.controls(load));
  }

  async function load() {
    const q = text.value.trim();
    const name = crawl.input.value.trim();
    scope.textContent = scopeText(name);
    keepInHash({ host: host.value.trim(), status_code: code.value, validation_status: check.value });
    try {
      if (fullText.checked && q) {
        pager.limit = 50;
        const { limit, offset } = pager.params();
        hits = await latest(api("/api/search", {
          query: { q, target: "pages", crawl: name, domain: host.value.trim(), limit, offset },
        }));
        pager.update(hits);
      } else {
        pager.limit = 200;
        const filters = { crawl: name, host: host.value.trim(), status_code: code.value, validation_status: check.value };
        const answer = await latest(api("/api/pages", { query: { ...filters, ...pager.params() } }));
        hits = null;
        applied = filters;
        pager.update(answer);
        rows = answer.items;
      }
      draw();
    } catch (exc) {
      fill(box, h("p", { class: "error-text" }, exc.status === 404 && !exc.details ? "Full-text search is not available on this server." : crawlProblem(exc)));
    }
  }

  load();
}
