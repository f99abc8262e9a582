// Tables: sortable headers (buttons with aria-sort), a caption, an empty state, and on a
// phone each row stacks into labelled lines (data-label).

import { empty, h } from "./dom.js";

/**
 * columns: [{key, label, numeric, sortable, nowrap, value(row), render(row)}]; nowrap: a name
 * that must read whole ("shop-12", not "shop-" over "12")
 * sort: {key, dir: "asc" | "desc"} sorts the given rows in place of the caller.
 */
export function dataTable({ columns, rows, caption, emptyText, sort, onSort, rowKey, testid }) {
  if (!rows.length) return empty(emptyText || "Nothing here yet.");
  let shown = rows;
  if (sort?.key) {
    const column = columns.find((c) => c.key === sort.key);
    const value = column?.value || ((row) => row[sort.key]);
    const sign = sort.dir === "desc" ? -1 : 1;
    shown = [...rows].sort((a, b) => {
      const x = value(a);
      const y = value(b);
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sign;
    });
  }
  const head = h("tr", {}, columns.map((column) => {
    const cls = column.numeric ? "num" : "";
    if (!column.sortable || !onSort) return h("th", { scope: "col", class: cls }, column.label);
    const active = sort?.key === column.key;
    return h("th", {
      scope: "col", class: cls, "aria-sort": active ? (sort.dir === "asc" ? "ascending" : "descending") : "none",
    }, h("button", {
      type: "button",
      onclick: () => onSort({ key: column.key, dir: active && sort.dir === "asc" ? "desc" : "asc" }),
    }, column.label));
  }));
  const body = shown.map((row) => h("tr", { "data-key": rowKey ? rowKey(row) : null },
    columns.map((column) => {
      const content = column.render ? column.render(row) : row[column.key];
      return h("td", {
        "data-label": column.label,
        class: [column.numeric ? "num" : "", column.url ? "url" : "", column.nowrap ? "nowrap" : ""].join(" ").trim() || null,
      }, content === null || content === undefined || content === "" ? "—" : content);
    })));
  return h("div", { class: "table-wrap" }, h("table", { class: "stack", "data-testid": testid || null },
    caption ? h("caption", {}, caption) : null,
    h("thead", {}, head),
    h("tbody", {}, body)));
}
