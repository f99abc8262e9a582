// One stored page (GET /api/pages/{id}): its fetch, what was read from it, the check's verdict
// and why a page was rejected, how the crawl found it and what it found first on it (its
// frontier row and GET /api/v1/discovered-links?parent_id=), its products, and its body from
// the raw archive as a download.

import { api, describe, download } from "../api.js";
import { viewLink } from "../crawls.js";
import { empty, fill, h } from "../dom.js";
import { bytes, ms, num, relative, time } from "../format.js";
import { dataTable } from "../table.js";
import { price } from "./products.js";

// What each rejection means (harvestman/validate.py), for a person reading the verdict.
const REASONS = {
  bot_check: "a bot wall answered instead of the page",
  captcha: "a CAPTCHA answered instead of the page",
  rate_limited: "the site said we asked too often",
  access_denied: "the site denied access",
  forbidden: "the site answered 403 Forbidden",
  js_challenge: "a script challenge a browser would pass (a renderer may fetch it)",
  needs_js: "the page only says to enable JavaScript (a renderer may fetch it)",
  only_scripts: "an app shell: scripts and no text yet (a renderer may fetch it)",
  too_small: "the body is too small to be content",
  no_text: "the page has no paragraph text",
};
const CHILDREN_SHOWN = 50;

function link(url) {
  return /^https?:\/\//i.test(url || "")
    ? h("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank" }, url)
    : url;
}

/** The check's verdict as a sentence: "rejected (soft): needs_js, the page only says…". */
export function verdict(page) {
  if (!page.validation_status) return "not checked (not an HTML page, or stored before checks)";
  if (page.validation_status === "ok") return "ok: kept as content";
  const [reason, vendor] = (page.rejection_reason || "").split(":");
  const why = REASONS[reason] ? `, ${REASONS[reason]}` : "";
  const kind = page.validation_status === "hard" ? "blocked (hard: the host is cooled down)" : "rejected (soft)";
  return `${kind}: ${page.rejection_reason || "no reason recorded"}${why}${vendor ? ` (${vendor})` : ""}`;
}

function facts(rows) {
  return h("dl", { class: "facts" }, rows
    .filter(([, value]) => value !== undefined)
    .map(([label, value]) => [h("dt", {}, label), h("dd", {}, value === null || value === "" ? "—" : value)]));
}

export function render(main, { match }) {
  const id = Number(match[1]);
  fill(main, h("p", {}, h("a", { href: "#/pages" }, "← Pages")), h("h1", {}, `Page #${id}`), h("p", { class: "muted" }, "Loading…"));

  async function load() {
    let page;
    try {
      page = await api(`/api/pages/${id}`);
    } catch (exc) {
      fill(main, h("p", {}, h("a", { href: "#/pages" }, "← Pages")), h("h1", {}, `Page #${id}`),
        h("p", { class: "error-text", "data-testid": "page-error" }, exc.status === 404 ? `No page #${id} is stored.` : describe(exc)));
      return;
    }
    const frontier = page.frontier;
    const redirects = page.redirects ? JSON.parse(page.redirects) : [];
    const bodyStatus = h("p", { class: "muted", role: "status" });
    const children = h("div", { "data-testid": "page-children" });
    fill(main,
      h("p", {}, h("a", { href: viewLink("/pages", page.crawl) }, `← Pages of ${page.crawl}`)),
      h("h1", { "data-testid": "page-title" }, page.title || page.url),
      h("div", { class: "grid2" },
      h("section", { class: "panel", "aria-labelledby": "fetch-title" },
        h("h2", { id: "fetch-title" }, "The fetch"),
        facts([
          ["URL", link(page.url)],
          ["Final URL", page.final_url !== page.url ? link(page.final_url) : undefined],
          ["Redirects", redirects.length ? h("ol", {}, redirects.map((hop) => h("li", {}, typeof hop === "string" ? hop : JSON.stringify(hop)))) : undefined],
          ["Crawl", h("a", { href: viewLink("/pages", page.crawl) }, page.crawl)],
          ["HTTP status", page.status_code],
          ["Error", page.error_class ? `${page.error_class}: ${page.error || ""}` : undefined],
          ["Content type", page.content_type],
          ["Size", bytes(page.content_length)],
          ["Charset", page.charset],
          ["Fetched", `${time(page.fetched_at)} (${relative(page.fetched_at)})`],
          ["Took", ms(page.crawl_duration_ms)],
          ["Through proxy", page.proxy || undefined],
          ["Headers kept", frontier && (frontier.etag || frontier.last_modified)
            ? h("span", {}, frontier.etag ? `ETag ${frontier.etag}` : "", frontier.etag && frontier.last_modified ? " · " : "",
              frontier.last_modified ? `Last-Modified ${frontier.last_modified}` : "")
            : "none (only ETag and Last-Modified are stored, for conditional re-crawls)"],
        ])),
      h("section", { class: "panel", "aria-labelledby": "read-title" },
        h("h2", { id: "read-title" }, "What was read"),
        facts([
          ["Title", page.title],
          ["Description", page.description],
          ["Canonical", page.canonical ? link(page.canonical) : null],
          ["Language", page.lang],
          ["Links on it", num(page.links_count)],
          ["Check", h("span", { "data-testid": "page-verdict", class: page.validation_status && page.validation_status !== "ok" ? "bad" : null }, verdict(page))],
          ["Near duplicate of", page.near_duplicate ? h("a", { href: `#/pages/${page.near_duplicate.id}` }, page.near_duplicate.url) : undefined],
        ]),
        h("div", { class: "actions" },
          page.archived
            ? h("button", {
              type: "button", "data-testid": "page-body",
              onclick: async () => {
                try {
                  await download(`/api/pages/${id}/body`);
                  bodyStatus.textContent = "Downloaded the body as the raw archive keeps it.";
                } catch (exc) {
                  bodyStatus.textContent = describe(exc);
                }
              },
            }, "Download the archived body")
            : h("p", { class: "muted" }, "No body archived: the raw archive was off when it was fetched (archive_enabled)."),
          bodyStatus))),
      h("div", { class: "grid2" },
      h("section", { class: "panel", "aria-labelledby": "found-title" },
        h("h2", { id: "found-title" }, "How the crawl found it"),
        frontier
          ? facts([
            ["Found by", frontier.discovered_via || "—"],
            ["Found on", !frontier.parent_id ? "— (a start page)"
              : frontier.parent_page_id
                ? h("a", { href: `#/pages/${frontier.parent_page_id}`, "data-testid": "page-parent" }, frontier.parent_url)
                : link(frontier.parent_url)],
            ["Depth", num(frontier.depth)],
            ["Discovered", time(frontier.discovered_at)],
            ["In the frontier", `${frontier.status}, next visit ${relative(frontier.next_crawl_at)}, ${frontier.attempts === 1 ? "1 retry" : `${num(frontier.attempts)} retries`}`],
            ["First found on it", frontier.children ? `${num(frontier.children)} URL(s), listed below` : "no new URL: every link on it was known already"],
          ])
          : empty("Its frontier row is gone (retention removed it): how it was found is no longer known."),
        children),
      h("section", { class: "panel", "aria-labelledby": "products-title" },
        h("h2", { id: "products-title" }, "Products found on it"),
        dataTable({
          testid: "page-products",
          rows: page.products,
          emptyText: "No product was found on this page.",
          columns: [
            { key: "name", label: "Product", render: (p) => h("a", { href: `#/products/${p.id}` }, p.name || `#${p.id}`) },
            { key: "price", label: "Price", numeric: true, render: (p) => price(p) },
            { key: "availability", label: "Availability" },
          ],
        }))),
    );
    if (frontier?.children) loadChildren(page, children);
  }

  /** The URLs first found on this page (links found again elsewhere count where first seen). */
  async function loadChildren(page, box) {
    try {
      const answer = await api("/api/v1/discovered-links", {
        query: { crawl: page.crawl, parent_id: page.frontier.id, limit: CHILDREN_SHOWN },
      });
      fill(box, dataTable({
        testid: "page-outlinks",
        rows: answer.items,
        caption: answer.items.length < page.frontier.children
          ? `The first ${num(answer.items.length)} of ${num(page.frontier.children)}; a link already known when this page was read is counted where it was first found.`
          : "A link already known when this page was read is counted where it was first found.",
        emptyText: "None.",
        columns: [
          { key: "url", label: "URL", url: true, render: (u) => link(u.url) },
          { key: "discovered_via", label: "Found by" },
          { key: "status", label: "Status" },
          { key: "depth", label: "Depth", numeric: true },
        ],
      }));
    } catch (exc) {
      fill(box, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  load();
}
