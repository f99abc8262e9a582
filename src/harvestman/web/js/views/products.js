// Products: stored products found by price, availability, brand, category, rating and domain
// (GET /api/products), in the API's order; each name opens the product view.

import { api, describe, latestOnly } from "../api.js";
import { CRAWL_COLUMN, crawlOf, crawlPicker, emptyFor, scopeText } from "../crawls.js";
import { field, fill, h } from "../dom.js";
import { decimal, time, words } from "../format.js";
import { Pager } from "../pager.js";
import { dataTable } from "../table.js";
import { downloadButtons } from "../downloads.js";

export const AVAILABILITY = [
  "in_stock", "out_of_stock", "preorder", "presale", "backorder", "made_to_order",
  "discontinued", "limited", "online_only", "in_store_only", "sold_out", "reserved",
];

/** "19.5 EUR", or "—" without a price. */
export function price(offer) {
  if (!offer || offer.price === null || offer.price === undefined) return "—";
  // The stored decimal, its digits kept, in the locale's number format.
  const digits = (String(offer.price).split(".")[1] || "").length;
  const value = Number(offer.price);
  const shown = Number.isFinite(value) ? decimal(value, digits) : String(offer.price);
  return `${shown}${offer.currency ? ` ${offer.currency}` : ""}`;
}

export function render(main) {
  const latest = latestOnly(); // a filter's read drawn only if no later one started
  const pager = new Pager(50);
  let crawls = [];
  let applied = null; // the filters of the list shown: what a download holds
  const crawl = crawlPicker({ name: "crawl", onChange: () => { pager.reset(); load(); } });
  crawl.input.ready.then((found) => { crawls = found; });
  const scope = h("p", { class: "muted", "data-testid": "crawl-scope" });
  const downloads = downloadButtons("/api/products/export", () => applied, "product");
  const input = (name, attrs = {}) => h("input", { name, type: "search", ...attrs });
  const brand = input("brand", { maxlength: 200, placeholder: "any brand" });
  const category = input("category", { maxlength: 200, placeholder: "any category" });
  const domain = input("domain", { maxlength: 300, placeholder: "example.com" });
  const currency = input("currency", { maxlength: 3, placeholder: "EUR" });
  const minPrice = h("input", { name: "min_price", type: "number", min: "0", step: "any" });
  const maxPrice = h("input", { name: "max_price", type: "number", min: "0", step: "any" });
  const availability = h("select", { name: "availability" },
    h("option", { value: "" }, "any"), AVAILABILITY.map((v) => h("option", { value: v }, words(v))));
  const order = h("select", { name: "order" },
    [["changed:desc", "last changed first"], ["price:asc", "cheapest first"], ["price:desc", "dearest first"],
      ["rating:desc", "best rated first"]].map(([value, label]) => h("option", { value }, label)));
  const box = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  fill(main,
    h("h1", {}, "Products"),
    scope,
    h("section", { class: "panel" },
      h("form", {
        class: "row", role: "search", "data-testid": "products-filters",
        onsubmit: (e) => { e.preventDefault(); pager.reset(); load(); },
      },
      field("Crawl", crawl.input), field("Brand", brand), field("Category", category), field("Domain", domain),
      field("Availability", availability), field("Currency", currency),
      field("Min price", minPrice), field("Max price", maxPrice), field("Order", order),
      h("button", { type: "submit" }, "Show")),
      downloads.box,
      box),
  );

  async function load() {
    const [sort, dir] = order.value.split(":");
    scope.textContent = scopeText(crawl.input.value);
    const filters = {
      crawl: crawl.input.value, brand: brand.value.trim(), category: category.value.trim(), domain: domain.value.trim(),
      availability: availability.value, currency: currency.value.trim(),
      min_price: minPrice.value, max_price: maxPrice.value, sort, order: dir,
    };
    try {
      const answer = await latest(api("/api/products", { query: { ...filters, ...pager.params() } }));
      applied = filters;
      pager.update(answer);
      fill(box, dataTable({
        testid: "products-table",
        rows: answer.items,
        emptyText: emptyFor("stored product", filters.crawl, crawls,
          Object.entries(filters).some(([key, value]) => !["crawl", "sort", "order"].includes(key) && value)),
        columns: [
          { key: "name", label: "Product", render: (p) => h("a", { href: `#/products/${p.id}` }, p.name || `#${p.id}`) },
          { key: "price", label: "Price", numeric: true, render: (p) => price(p.offers[0]) },
          { key: "availability", label: "Availability", render: (p) => words(p.offers[0]?.availability) },
          { key: "brand", label: "Brand" },
          { key: "rating", label: "Rating", numeric: true },
          { key: "domain", label: "Domain" },
          !filters.crawl && answer.items.some(crawlOf) ? CRAWL_COLUMN : null,
          { key: "changed", label: "Changed", render: (p) => time(p.seen.changed_at) },
        ].filter(Boolean),
      }), pager.controls(load));
    } catch (exc) {
      fill(box, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  load();
}
