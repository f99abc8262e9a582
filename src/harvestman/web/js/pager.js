// Paging over the API's lists: the keyset cursor (`next_cursor`) when the answer has one,
// else offset paging from `total`.

import { h } from "./dom.js";
import { num } from "./format.js";

export class Pager {
  constructor(limit = 50) {
    this.limit = limit;
    this.reset();
  }

  reset() {
    this.page = 0;
    this.cursors = [null]; // the cursor that opens each page seen so far
    this.last = null;
  }

  /** Query parameters for the current page. */
  params() {
    const cursor = this.cursors[this.page];
    if (cursor) return { limit: this.limit, cursor };
    return { limit: this.limit, offset: this.usesCursor() ? 0 : this.page * this.limit };
  }

  usesCursor() {
    return this.last !== null && Object.hasOwn(this.last, "next_cursor");
  }

  /** Remember what a list answered. */
  update(answer) {
    this.last = answer;
    if (this.usesCursor()) this.cursors[this.page + 1] = answer.next_cursor || null;
  }

  hasNext() {
    if (!this.last) return false;
    if (this.usesCursor()) return Boolean(this.last.next_cursor);
    return this.page * this.limit + this.last.items.length < (this.last.total || 0);
  }

  /** Prev / next buttons and "items 51–100 of 230"; `go()` reloads. */
  controls(go) {
    if (!this.last) return null;
    const count = this.last.items.length;
    if (this.page === 0 && !count) return null; // the empty state says it all
    const first = this.page * this.limit + (count ? 1 : 0);
    const total = typeof this.last.total === "number" ? ` of ${num(this.last.total)}` : "";
    return h("nav", { class: "pager", "aria-label": "Pages of the list" },
      h("button", {
        type: "button", disabled: this.page === 0,
        onclick: () => { this.page -= 1; go(); },
      }, "← Previous"),
      h("span", { "data-testid": "pager-status" }, `${num(first)}–${num(this.page * this.limit + count)}${total}`),
      h("button", {
        type: "button", disabled: !this.hasNext(),
        onclick: () => { this.page += 1; go(); },
      }, "Next →"));
  }
}
