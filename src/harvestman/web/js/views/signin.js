// Sign in: people with their user name and password (`harvestman user create`); a bearer
// token (`harvestman token create`) stays as the alternative, for scripts' owners and admins.

import { describe } from "../api.js";
import { field, h } from "../dom.js";

/**
 * A sign-in form: on submit, `act()`; a refusal shows in `error`, as `explain(exc)` says it
 * (or as the API said it), and `focus` takes the focus again.
 */
function signInForm({ heading = "h1", title, id, fields, button, error, focus, act, explain }) {
  return h("form", {
    class: "panel",
    "aria-labelledby": id,
    onsubmit: async (event) => {
      event.preventDefault();
      error.textContent = "";
      button.disabled = true;
      try {
        await act();
      } catch (exc) {
        error.textContent = explain(exc) || describe(exc);
        focus.setAttribute("aria-invalid", "true");
        focus.focus();
      } finally {
        button.disabled = false;
      }
    },
  }, h(heading, { id }, title), ...fields, error, button);
}

export function render(main, { signIn, signInWithPassword }) {
  const name = h("input", {
    name: "username", autocomplete: "username", required: true, spellcheck: "false", maxlength: "100",
  });
  const password = h("input", {
    name: "password", type: "password", autocomplete: "current-password", required: true, maxlength: "200",
  });
  const people = signInForm({
    title: "Sign in",
    id: "signin-title",
    fields: [field("User name", name), field("Password", password)],
    button: h("button", { type: "submit", class: "primary" }, "Sign in"),
    error: h("p", { class: "form-error", role: "alert", "data-testid": "signin-error" }),
    focus: password,
    act: () => signInWithPassword(name.value.trim(), password.value),
    explain: (exc) => {
      password.value = "";
      return exc.status === 401 ? "The user name or password is wrong." : "";
    },
  });

  const token = h("input", {
    name: "token", type: "password", autocomplete: "off", required: true, spellcheck: "false",
  });
  const machines = signInForm({
    heading: "h2",
    title: "Or with a bearer token",
    id: "token-title",
    fields: [field("API token", token, h("span", {}, "Create one with ",
      h("code", { class: "nowrap" }, "harvestman token create --role admin"), " (or ",
      h("code", { class: "nowrap" }, "--role user"), "). It is kept in this tab only."))],
    button: h("button", { type: "submit" }, "Use token"),
    error: h("p", { class: "form-error", role: "alert", "data-testid": "token-error" }),
    focus: token,
    act: () => signIn(token.value.trim()),
    explain: (exc) => (exc.status === 401 ? `The API refused this token: ${exc.message}` : ""),
  });
  main.replaceChildren(h("div", { class: "signin" }, people, machines));
  name.focus();
}
