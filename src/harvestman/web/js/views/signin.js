// Sign in with a bearer token (from `harvestman token create --role admin|user`).

import { describe } from "../api.js";
import { field, h } from "../dom.js";

export function render(main, { signIn }) {
  const input = h("input", {
    name: "token", type: "password", autocomplete: "off", required: true, spellcheck: "false",
  });
  const error = h("p", { class: "form-error", role: "alert", "data-testid": "signin-error" });
  const button = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h("form", {
    class: "panel",
    "aria-labelledby": "signin-title",
    onsubmit: async (event) => {
      event.preventDefault();
      error.textContent = "";
      button.disabled = true;
      try {
        await signIn(input.value.trim());
      } catch (exc) {
        error.textContent = exc.status === 401
          ? `The API refused this token: ${exc.message}`
          : describe(exc);
        input.setAttribute("aria-invalid", "true");
        input.focus();
      } finally {
        button.disabled = false;
      }
    },
  },
  h("h1", { id: "signin-title" }, "Sign in"),
  field("API token", input, "Create one with: harvestman token create --role admin (or --role user). It is kept in this tab only."),
  error,
  button);
  main.replaceChildren(h("div", { class: "signin" }, form));
  input.focus();
}
