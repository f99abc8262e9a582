// The signed-in token (sessionStorage: gone when the tab closes) and the role it carries.

const KEY = "harvestman.token";
let role = "anonymous";
let subject = null;

export function token() {
  return sessionStorage.getItem(KEY);
}

export function remember(value, who) {
  sessionStorage.setItem(KEY, value);
  role = who.role;
  subject = who.subject;
}

export function forget() {
  sessionStorage.removeItem(KEY);
  role = "anonymous";
  subject = null;
}

/** The claims of a JWT (unverified: the API verifies; this only reads expiry for display). */
export function claims(jwt) {
  try {
    const payload = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload.padEnd(Math.ceil(payload.length / 4) * 4, "=")));
  } catch {
    return {};
  }
}

export function currentRole() {
  return role;
}

export function currentSubject() {
  return subject;
}

/** Whether the caller may change things: only then are action buttons shown. */
export function isAdmin() {
  return role === "admin";
}

const NOTICE = "harvestman.notice";

/** A notice for the next view (after an action that leaves the page, such as a delete). */
export function leaveNotice(text) {
  sessionStorage.setItem(NOTICE, text);
}

/** The notice left for this view, once. */
export function takeNotice() {
  const text = sessionStorage.getItem(NOTICE);
  sessionStorage.removeItem(NOTICE);
  return text;
}
