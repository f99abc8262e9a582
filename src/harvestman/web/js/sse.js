// Server-sent events over fetch (EventSource cannot send an Authorization header), with the
// overview's fallback: when the stream fails or goes quiet, poll one event every 5 s and try
// the stream again every 30 s.

import { authHeaders, errorOf, report, withQuery } from "./api.js";

/** Parse SSE text into events; returns the unparsed rest. */
export function parseEvents(buffer, onEvent) {
  const blocks = buffer.split(/\r?\n\r?\n/);
  const rest = blocks.pop();
  for (const block of blocks) {
    let event = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) continue; // a ping
      const colon = line.indexOf(":");
      const name = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (name === "event") event = value;
      else if (name === "data") data.push(value);
    }
    if (data.length) {
      let parsed;
      try {
        parsed = JSON.parse(data.join("\n"));
      } catch {
        parsed = data.join("\n");
      }
      onEvent(event, parsed);
    }
  }
  return rest;
}

/** Read one SSE response until it ends or `signal` aborts. Throws ApiError on a refusal. */
export async function readStream(path, query, onEvent, signal) {
  const response = await fetch(withQuery(path, query), {
    headers: { Accept: "text/event-stream", ...authHeaders() },
    signal,
    cache: "no-store",
  });
  if (!response.ok) {
    const error = await errorOf(response);
    if (error.status === 401) report("unauthorized", { message: error.message });
    if (error.status === 429) report("rate", { retryAfter: error.retryAfter });
    throw error;
  }
  report("ok");
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer = parseEvents(buffer + decoder.decode(value, { stream: true }), onEvent);
  }
  parseEvents(`${buffer}\n\n`, onEvent);
}

/**
 * Follow `path` live: onEvent(name, data) for each event, onMode("live" | "polling" |
 * "offline") when the way changes. Returns stop().
 */
export function follow(path, { interval = 2, poll = 5, onEvent, onMode }) {
  const control = { stopped: false, abort: null, timer: null };
  let mode = null;
  const setMode = (next) => {
    if (next !== mode) {
      mode = next;
      onMode?.(next);
    }
  };

  async function stream() {
    const abort = new AbortController();
    control.abort = abort;
    let quiet = null;
    const arm = () => {
      clearTimeout(quiet);
      // A buffering proxy can hold events back: silence longer than a few intervals is a failure.
      quiet = setTimeout(() => abort.abort(), (interval * 3 + 3) * 1000);
    };
    arm();
    try {
      await readStream(path, { interval }, (name, data) => {
        arm();
        setMode("live");
        onEvent(name, data);
      }, abort.signal);
    } catch (exc) {
      if (control.stopped) return;
      if (exc.status === 401) return; // the session is over; the app signs out
    } finally {
      clearTimeout(quiet);
    }
    if (!control.stopped) pollLoop(0);
  }

  async function pollLoop(round) {
    if (control.stopped) return;
    if (round > 0 && round % Math.round(30 / poll) === 0) {
      stream();
      return;
    }
    try {
      await readStream(path, { count: 1 }, onEvent, undefined);
      setMode("polling");
    } catch (exc) {
      if (exc.status === 401) return;
      if (!exc.status) report("down");
      setMode("offline");
    }
    if (!control.stopped) control.timer = setTimeout(() => pollLoop(round + 1), poll * 1000);
  }

  stream();
  return () => {
    control.stopped = true;
    clearTimeout(control.timer);
    control.abort?.abort();
  };
}
