// The one way the dashboard calls the API: the bearer token, the error shape, and the
// connection problems every view shares (API down, 401, 429) reported to the banner.

import { token } from "./session.js";

/** An answer other than 2xx, or no answer at all (status 0). */
export class ApiError extends Error {
  constructor(status, code, message, details = null, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.retryAfter = retryAfter;
  }

  /** {field: message} from a 422 body (pydantic's locations, or a spec's one field). */
  fieldErrors() {
    const found = {};
    for (const error of this.details?.errors || []) {
      const loc = (error.loc || []).filter((part) => part !== "body");
      const name = loc.length ? String(loc[0]) : "";
      const where = loc.length > 1 ? ` (${loc.slice(1).join(".")})` : "";
      found[name] = found[name] ? `${found[name]}; ${error.message}${where}` : `${error.message}${where}`;
    }
    if (this.details?.field) found[this.details.field] = this.message;
    return found;
  }

  /** The same messages by their whole path ("options.ingest_rate"), for a form whose fields
   * are parts of one object. */
  fieldErrorsByPath() {
    const found = {};
    for (const error of this.details?.errors || []) {
      const name = (error.loc || []).filter((part) => part !== "body").join(".");
      found[name] = found[name] ? `${found[name]}; ${error.message}` : error.message;
    }
    return found;
  }
}

/** A promise that never settles, made anew each time: one shared would keep every caller
 * waiting on it (and all they hold) alive for the page's life. */
const never = () => new Promise(() => {});

/** A view's reads, answered in the order asked: `latest(promise)` settles as `promise` does,
 * unless a later read (or `latest.drop()`) started meanwhile; then it never settles, and the
 * caller, waiting on it, draws nothing. Filters changed twice in quick succession send two
 * reads; the first may answer last and must not overwrite the second's. */
export function latestOnly() {
  let last = 0;
  const latest = async (promise) => {
    const mine = ++last;
    try {
      const value = await promise;
      return mine === last ? value : never();
    } catch (exc) {
      if (mine === last) throw exc;
      return never();
    }
  };
  latest.drop = () => { last += 1; };
  return latest;
}

/** Tell the page-wide banner how the API is doing: "ok", "down", "rate", "unauthorized". */
export function report(kind, detail = {}) {
  window.dispatchEvent(new CustomEvent("api-status", { detail: { kind, ...detail } }));
}

export function authHeaders() {
  const value = token();
  return value ? { Authorization: `Bearer ${value}` } : {};
}

export function withQuery(path, query = {}) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== null && value !== undefined && value !== "") params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}${path.includes("?") ? "&" : "?"}${text}` : path;
}

/** The error an answer carries, in the API's one shape when it has it. */
export async function errorOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  const error = body?.error || {};
  const retry = Number(response.headers.get("Retry-After")) || error.details?.retry_after || null;
  return new ApiError(
    response.status,
    error.code || "error",
    error.message || `${response.status} ${response.statusText}`,
    error.details || null,
    retry,
  );
}

/** Fetch a file from the API (with the token) and hand it to the browser as a download,
 * named as the answer's Content-Disposition says; returns its name and headers. Throws ApiError. */
export async function download(path, { query } = {}) {
  let response;
  try {
    response = await fetch(withQuery(path, query), { headers: authHeaders(), cache: "no-store" });
  } catch {
    report("down");
    throw new ApiError(0, "unreachable", "The API cannot be reached. Is harvestman serve running?");
  }
  if (!response.ok) throw await errorOf(response);
  const disposition = response.headers.get("Content-Disposition") || "";
  const name = /filename="([^"]+)"/.exec(disposition)?.[1] || "download";
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  // The browser has read the blob once the click is handled; keep it a little longer anyway.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return { name, headers: response.headers };
}

/** Call the API; returns the JSON body (null for 204). Throws ApiError. */
export async function api(path, { method = "GET", body, query, signal } = {}) {
  const headers = { Accept: "application/json", ...authHeaders() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(withQuery(path, query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (exc) {
    if (exc.name === "AbortError") throw exc;
    report("down");
    throw new ApiError(0, "unreachable", "The API cannot be reached. Is harvestman serve running?");
  }
  if (!response.ok) {
    const error = await errorOf(response);
    if (error.status === 401) report("unauthorized", { message: error.message });
    else if (error.status === 429) report("rate", { retryAfter: error.retryAfter });
    else if (error.status >= 500) report("down", { message: error.message });
    throw error;
  }
  report("ok");
  if (response.status === 204) return null;
  return response.json();
}

/** Human text for an error, with the allowed actions of a refused job action. */
export function describe(error) {
  if (!(error instanceof ApiError)) return String(error?.message || error);
  if (error.status === 409 && error.details?.allowed_actions) {
    const { action, job_id: job, state, allowed_actions: allowed } = error.details;
    return `Refused: cannot ${action} job ${job}, it is ${state}. Allowed now: ${allowed.length ? allowed.join(", ") : "nothing"}.`;
  }
  if (error.status === 429) return `${error.message}: retry in ${error.retryAfter || "a few"} s`;
  const fields = error.fieldErrors ? error.fieldErrors() : {};
  const listed = Object.entries(fields).map(([name, text]) => (name ? `${name}: ${text}` : text));
  // A refusal of one field (details.field) already says it all in its message.
  if (error.status === 422 && listed.length && !error.details?.field) return `${error.message}: ${listed.join("; ")}`;
  return error.message;
}
