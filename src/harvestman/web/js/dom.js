// Building DOM nodes. Every string becomes a text node: data from crawled sites (titles, URLs,
// robots.txt) is never parsed as HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** h("button", {type: "button", onclick: f, class: "primary"}, "Save") */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key in el && typeof value !== "string") {
      el[key] = value; // properties such as value, checked, disabled
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

/** An SVG element: s("rect", {x: 1, y: 2, width: 3, height: 4}). */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

/** Replace the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled form control: field("Host", h("input", {name: "host"})). */
export function field(label, control, hint) {
  const id = control.id || `f-${control.name || Math.random().toString(36).slice(2)}`;
  control.id = id;
  const error = h("div", { class: "error", id: `${id}-error`, "aria-live": "polite" });
  return h(
    "div",
    { class: "field", "data-field": control.name || "" },
    h("label", { for: id }, label),
    control,
    hint ? h("div", { class: "muted" }, hint) : null,
    error,
  );
}

/** Show validation messages under the fields of `form` ({name: message}); "" clears. */
export function showFieldErrors(form, messages) {
  for (const box of form.querySelectorAll(".field")) {
    const name = box.dataset.field;
    const control = box.querySelector("input, select, textarea");
    const error = box.querySelector(".error");
    const message = messages[name] || "";
    if (error) error.textContent = message;
    if (control) {
      if (message) {
        control.setAttribute("aria-invalid", "true");
        control.setAttribute("aria-describedby", error.id);
      } else {
        control.removeAttribute("aria-invalid");
      }
    }
  }
}

/** A visible empty state. */
export function empty(text) {
  return h("p", { class: "empty", "data-testid": "empty" }, text);
}
