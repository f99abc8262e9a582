// Pages: crawled pages by host and HTTP status, narrowed by URL or title among the rows
// loaded; or, in full-text mode, ranked hits of the search index (GET /api/search).

import { api } from "../api.js";
import { field, fill, h } from "../dom.js";
import { bytes, ms, time } from "../format.js";
import { Pager } from "../pager.js";
import { dataTable } from "../table.js";
import { crawlInput, crawlProblem } from "./frontier.js";

function link(url) {
  // Only web URLs become links: a stored URL is data from elsewhere.
  return /^https?:\/\//i.test(url)
    ? h("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank" }, url)
    : url;
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

export function render(main) {
  const pager = new Pager(200);
  let rows = [];
  let hits = null; // the answer of a full-text search, when in that mode
  let sort = { key: "fetched_at", dir: "desc" };
  const crawl = crawlInput("pages-crawl");
  const host = h("input", { name: "host", type: "search", placeholder: "exact host" });
  const code = h("input", { name: "status_code", type: "number", min: "0", max: "999", placeholder: "e.g. 404" });
  const text = h("input", { name: "q", type: "search", placeholder: "part of the URL or title" });
  const fullText = h("input", { name: "full_text", type: "checkbox" });
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  fill(main,
    h("h1", {}, "Pages"),
    h("section", { class: "panel" },
      h("form", {
        class: "row", role: "search",
        onsubmit: (e) => { e.preventDefault(); pager.reset(); load(); },
      },
      field("Crawl", crawl.input), crawl.list, field("Host", host), field("HTTP status", code),
      field("URL or title contains", text),
      h("label", { class: "check" }, fullText, "Full text (ranked, page text included)"),
      h("button", { type: "submit" }, "Search")),
      box),
  );
  text.addEventListener("input", () => { if (!fullText.checked) draw(); });

  function drawHits() {
    fill(box, dataTable({
      testid: "search-table",
      rows: hits.items,
      caption: `${hits.total}${hits.total_is_exact ? "" : "+"} ${hits.total === 1 ? "match" : "matches"}, best first.`,
      emptyText: `No page matches “${text.value.trim()}”.`,
      columns: [
        { key: "title", label: "Title", render: (p) => p.title || "(no title)" },
        { key: "url", label: "URL", url: true, render: (p) => link(p.url) },
        { key: "snippet", label: "Snippet", render: (p) => marked(p.snippet || "") },
        { key: "fetched_at", label: "Fetched", render: (p) => time(p.fetched_at) },
      ],
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
      caption: needle ? `${shown.length} of the ${rows.length} pages loaded match “${text.value.trim()}”.` : null,
      emptyText: rows.length ? "No loaded page matches: load the next rows or change the filters." : "No page stored for these filters.",
      columns: [
        { key: "fetched_at", label: "Fetched", sortable: true, render: (p) => time(p.fetched_at) },
        { key: "status_code", label: "Status", numeric: true, sortable: true },
        { key: "title", label: "Title", sortable: true },
        { key: "url", label: "URL", url: true, sortable: true, render: (p) => link(p.url) },
        { key: "content_type", label: "Type" },
        { key: "content_length", label: "Size", numeric: true, sortable: true, render: (p) => bytes(p.content_length) },
        { key: "crawl_duration_ms", label: "Took", numeric: true, sortable: true, render: (p) => ms(p.crawl_duration_ms) },
        { key: "validation_status", label: "Check", render: (p) => p.rejection_reason ? `${p.validation_status}: ${p.rejection_reason}` : p.validation_status },
      ],
    }), pager.controls(load));
  }

  async function load() {
    const q = text.value.trim();
    try {
      if (fullText.checked && q) {
        pager.limit = 50;
        const { limit, offset } = pager.params();
        hits = await api("/api/search", {
          query: { q, target: "pages", crawl: crawl.input.value.trim(), domain: host.value.trim(), limit, offset },
        });
        pager.update(hits);
      } else {
        hits = null;
        pager.limit = 200;
        const answer = await api("/api/pages", {
          query: { crawl: crawl.input.value.trim(), host: host.value.trim(), status_code: code.value, ...pager.params() },
        });
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
