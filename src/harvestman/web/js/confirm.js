// Asking before a destructive action: a modal <dialog> (focus kept inside, Escape or the
// backdrop says no) rather than window.confirm, which cannot be styled, says nothing of what
// will happen and blocks the whole page, live figures included.

import { h } from "./dom.js";

/**
 * Ask `question`; resolves true only when the person presses the confirming button.
 * `detail` says what will happen; `confirmLabel` names the action ("Cancel job 3"), never
 * "OK"; `keepLabel` names the way out ("Keep the job").
 */
export function confirmAction({ question, detail = "", confirmLabel, keepLabel = "Keep it", danger = true }) {
  return new Promise((resolve) => {
    let answer = false;
    const yes = h("button", {
      type: "button", class: danger ? "danger" : "primary", "data-testid": "confirm-yes",
      onclick: () => { answer = true; dialog.close(); },
    }, confirmLabel);
    const no = h("button", { type: "button", "data-testid": "confirm-no", onclick: () => dialog.close() }, keepLabel);
    const dialog = h("dialog", {
      class: "confirm", role: "alertdialog", "aria-modal": "true",
      "aria-labelledby": "confirm-question", "aria-describedby": "confirm-detail",
      "data-testid": "confirm-dialog",
    },
    h("h2", { id: "confirm-question" }, question),
    h("p", { id: "confirm-detail" }, detail),
    h("div", { class: "actions" }, no, yes));
    // A click on the backdrop (outside the box) is a no, as Escape is.
    dialog.addEventListener("click", (event) => { if (event.target === dialog) dialog.close(); });
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(answer);
    });
    document.body.append(dialog);
    dialog.showModal();
    no.focus(); // the safe answer has the focus: Enter does not destroy anything
  });
}
