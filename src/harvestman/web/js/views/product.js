// One product (GET /api/products/{id}): its offer, where it was seen, its images as links, and
// its price history (GET /api/products/{id}/history) as a step chart and a table of changes.

import { api, describe } from "../api.js";
import { crawlNames, viewLink } from "../crawls.js";
import { empty, fill, h } from "../dom.js";
import { time, timeAxis, words } from "../format.js";
import { lineChart } from "../charts.js";
import { dataTable } from "../table.js";
import { price } from "./products.js";

function link(url) {
  return /^https?:\/\//i.test(url)
    ? h("a", { href: url, rel: "noopener noreferrer nofollow", target: "_blank" }, url)
    : url;
}

/** Every change of the product, following next_cursor (bounded: 20 pages). */
async function allChanges(id) {
  const changes = [];
  let cursor = null;
  for (let page = 0; page < 20; page += 1) {
    const answer = await api(`/api/products/${id}/history`, { query: { cursor } });
    changes.push(...answer.items);
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  return changes;
}

/** The price held from each change to the next, drawn as steps up to now. */
export function priceChart(changes, now = Date.now() / 1000) {
  const priced = changes.filter((c) => c.price !== null);
  if (!priced.length) return empty("No price recorded yet.");
  const points = [];
  for (const change of priced) {
    const y = Number(change.price);
    const last = points[points.length - 1];
    if (last && last.y === y) continue; // availability alone changed: no step
    if (last) points.push({ x: change.changed_at, y: last.y });
    points.push({ x: change.changed_at, y });
  }
  const x0 = priced[0].changed_at;
  const x1 = Math.max(now, priced[priced.length - 1].changed_at + 1);
  points.push({ x: x1, y: points[points.length - 1].y });
  const currency = priced[priced.length - 1].currency || "";
  const chart = lineChart(points, {
    x0, x1, title: `Price over time${currency ? ` (${currency})` : ""}`, xLabel: timeAxis(x0, x1),
  });
  chart.dataset.testid = "price-chart";
  return chart;
}

export function render(main, { match }) {
  const id = match[1];
  fill(main, h("h1", {}, "Product"), h("p", { class: "muted" }, "Loading…"));

  async function load() {
    try {
      const [product, changes, crawls] = await Promise.all([
        api(`/api/products/${id}`), allChanges(id), crawlNames().catch(() => []),
      ]);
      const crawl = crawls.find((c) => c.id === product.crawl_id)?.name;
      const offer = product.offers[0] || {};
      const facts = [
        ["Price", price(offer)], ["Availability", words(offer.availability)], ["Condition", words(offer.condition)],
        ["Brand", product.brand], ["Category", product.category], ["SKU", product.sku], ["GTIN", product.gtin],
        ["Rating", product.rating], ["Domain", product.domain], ["Page", link(product.seen.page_url)],
        ["Crawl", crawl ? h("a", { href: viewLink("/products", crawl) }, crawl) : `#${product.crawl_id}`],
        ["First seen", time(product.seen.first_seen_at)], ["Last fetched", time(product.seen.last_seen_at)],
        ["Changed", time(product.seen.changed_at)], ["Parser", product.parser],
      ];
      fill(main,
        h("p", {}, h("a", { href: "#/products" }, "← Products")),
        h("h1", { "data-testid": "product-name" }, product.name || `Product ${product.id}`),
        // Side by side on a wide screen: the price history is in sight beside the facts.
        h("div", { class: "grid2" },
        h("section", { class: "panel" },
          h("dl", { class: "facts" }, facts.map(([label, value]) => [h("dt", {}, label), h("dd", {}, value ?? "—")])),
          product.description ? h("p", {}, product.description) : null),
        h("section", { class: "panel" },
          h("h2", {}, "Price history"),
          priceChart(changes),
          dataTable({
            testid: "history-table",
            rows: [...changes].reverse(),
            emptyText: "No change recorded yet.",
            columns: [
              { key: "changed_at", label: "When", render: (c) => time(c.changed_at) },
              { key: "price", label: "Price", numeric: true, render: (c) => price(c) },
              { key: "availability", label: "Availability", render: (c) => words(c.availability) },
            ],
          }))),
        h("section", { class: "panel" },
          h("h2", {}, "Images"),
          product.images.length
            ? h("ul", {}, product.images.map((image) => h("li", {}, link(image.url), image.alt ? ` — ${image.alt}` : "")))
            : empty("No image.")),
      );
    } catch (exc) {
      fill(main, h("h1", {}, "Product"), h("p", { class: "error-text" }, describe(exc)));
    }
  }

  load();
}
