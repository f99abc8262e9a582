// The dashboard's shell: sign-in state, the hash router (#/jobs/3), the navigation and the
// banner for API trouble (down, 401, 429). Each view is a module with render(main, params)
// returning an optional cleanup function.

import { ApiError, authHeaders, errorOf } from "./api.js";
import { h } from "./dom.js";
import { currentRole, currentSubject, forget, remember, token } from "./session.js";
import * as signin from "./views/signin.js";
import * as overview from "./views/overview.js";
import * as domains from "./views/domains.js";
import * as jobs from "./views/jobs.js";
import * as job from "./views/job.js";
import * as frontier from "./views/frontier.js";
import * as pages from "./views/pages.js";
import * as page from "./views/page.js";
import * as products from "./views/products.js";
import * as product from "./views/product.js";
import * as scheduler from "./views/scheduler.js";
import * as parsers from "./views/parsers.js";
import * as sources from "./views/sources.js";
import * as errorsView from "./views/errors.js";

const ROUTES = [
  [/^\/overview$/, overview, "Overview"],
  [/^\/domains$/, domains, "Domains"],
  [/^\/sources$/, sources, "Sources"],
  [/^\/jobs$/, jobs, "Jobs"],
  [/^\/jobs\/(\d+)$/, job, "Job"],
  [/^\/frontier$/, frontier, "Frontier"],
  [/^\/pages$/, pages, "Pages"],
  [/^\/pages\/(\d+)$/, page, "Page"],
  [/^\/products$/, products, "Products"],
  [/^\/products\/(\d+)$/, product, "Product"],
  [/^\/scheduler$/, scheduler, "Scheduler"],
  [/^\/parsers$/, parsers, "Parsers"],
  [/^\/errors$/, errorsView, "Errors"],
];

/** An address the dashboard does not know: said so, with the way back (never a silent
 * redirect, which would show a view the person did not ask for). */
const notFound = {
  render(into, { path }) {
    into.append(
      h("h1", {}, "Not found"),
      h("section", { class: "panel", "data-testid": "not-found" },
        h("p", {}, "The dashboard has no page at ", h("code", {}, `#${path}`), "."),
        h("p", {}, h("a", { href: "#/overview" }, "Go to the overview"), " or choose a section above.")),
    );
  },
};

// While the API cannot be reached, ask it every few seconds; once it answers, the banner goes
// and a view that showed the failure draws itself again (no reload needed after a restart).
const RECOVERY_POLL_MS = 3000;
let recovery = null;

function watchForRecovery() {
  if (recovery) return;
  recovery = setInterval(async () => {
    let answer;
    try {
      answer = await fetch("/api/v1/auth/whoami", { headers: authHeaders(), cache: "no-store" });
    } catch {
      return; // still down
    }
    if (answer.status >= 500) return;
    clearInterval(recovery);
    recovery = null;
    showBanner("", "");
    if (!signedIn && token()) {
      start();
    } else if (main.querySelector(".error-text") || main.querySelector("[data-testid=live-mode][data-mode=offline]")) {
      route();
    }
  }, RECOVERY_POLL_MS);
}

const main = document.getElementById("main");
const banner = document.getElementById("banner");
let cleanup = null;
let signedIn = false;

function showBanner(text, tone) {
  banner.textContent = text;
  banner.className = `banner ${tone}`;
  banner.hidden = !text;
  banner.dataset.kind = tone;
}

window.addEventListener("api-status", (event) => {
  const { kind, retryAfter, message } = event.detail;
  if (kind === "ok") {
    if (banner.dataset.kind !== "info") showBanner("", "");
  } else if (kind === "down") {
    showBanner(message ? `The API answered with an error: ${message}` : "The API cannot be reached: retrying…", "bad");
    if (!message) watchForRecovery();
  } else if (kind === "rate") {
    showBanner(`Too many requests: the API asks to wait ${retryAfter || "a few"} s. Live figures resume by themselves; retry anything else after that.`, "warn");
  } else if (kind === "unauthorized" && signedIn) {
    signOut(`Signed out: ${message || "the token was refused"}. Sign in again.`);
  }
});

function setShell() {
  document.getElementById("nav").hidden = !signedIn;
  document.getElementById("who").hidden = !signedIn;
  const role = signedIn ? currentRole() : "";
  const subject = signedIn ? currentSubject() : "";
  // A bare token's subject is its role: it names no person.
  document.getElementById("who-user").textContent = subject && subject !== role ? subject : "API token";
  document.getElementById("who-role").textContent = role;
  document.body.dataset.role = signedIn ? currentRole() : "anonymous";
}

function signOut(reason = "") {
  forget();
  signedIn = false;
  setShell();
  if (reason) showBanner(reason, "warn");
  if (location.hash !== "#/signin") location.hash = "#/signin";
  else route();
}

document.getElementById("sign-out").addEventListener("click", () => signOut());

/** Check a token with the API and keep it; throws ApiError when refused. */
async function signIn(value) {
  const who = await fetch("/api/v1/auth/whoami", { headers: { Authorization: `Bearer ${value}` } })
    .catch(() => { throw new ApiError(0, "unreachable", "The API cannot be reached."); });
  const body = await who.json().catch(() => ({}));
  if (!who.ok) throw new ApiError(who.status, body?.error?.code || "error", body?.error?.message || who.statusText);
  if (body.role === "anonymous") throw new ApiError(401, "unauthorized", "the token carries no role");
  remember(value, body);
  signedIn = true;
  setShell();
  showBanner("", "");
  location.hash = "#/overview";
}

/** Sign in as a person: the API checks the name and password and answers a token. */
async function signInWithPassword(name, password) {
  const answer = await fetch("/api/auth/login", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ name, password }),
  }).catch(() => { throw new ApiError(0, "unreachable", "The API cannot be reached."); });
  if (!answer.ok) throw await errorOf(answer);
  const body = await answer.json();
  await signIn(body.token);
}

function route() {
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  // A view's own state (the crawl shown, filters) follows a "?" in the address.
  const [path, queryText = ""] = (location.hash.replace(/^#/, "") || "/overview").split("?", 2);
  for (const link of document.querySelectorAll("nav a")) {
    const target = link.getAttribute("href").slice(1);
    link.toggleAttribute("aria-current", path === target || path.startsWith(`${target}/`));
    if (link.hasAttribute("aria-current")) link.setAttribute("aria-current", "page");
  }
  if (!signedIn) {
    document.title = "Sign in · Harvestman";
    cleanup = signin.render(main, { signIn, signInWithPassword });
    return;
  }
  if (path === "/signin") {
    location.hash = "#/overview";
    return;
  }
  const found = ROUTES.find(([pattern]) => pattern.test(path));
  main.replaceChildren();
  if (!found) {
    document.title = "Not found · Harvestman";
    notFound.render(main, { path });
    main.focus({ preventScroll: true });
    return;
  }
  const [pattern, view, name] = found;
  document.title = `${name} · Harvestman`;
  main.replaceChildren();
  cleanup = view.render(main, { match: path.match(pattern), query: new URLSearchParams(queryText) }) || null;
  main.focus({ preventScroll: true });
}

window.addEventListener("hashchange", route);

async function start() {
  const saved = token();
  if (saved) {
    try {
      const who = await fetch("/api/v1/auth/whoami", { headers: { Authorization: `Bearer ${saved}` } });
      if (who.ok) {
        const body = await who.json();
        if (body.role !== "anonymous") {
          remember(saved, body);
          signedIn = true;
        }
      } else if (who.status === 401) {
        forget();
        showBanner("The saved token was refused: sign in again.", "warn");
      }
    } catch {
      showBanner("The API cannot be reached: retrying…", "bad");
      watchForRecovery();
    }
  }
  setShell();
  route();
}

start();
