// Overview: live crawl figures over SSE (every 2 s; polling every 5 s when the stream fails),
// pages/s over the last hour, HTTP statuses, frontier trend and the workers.

import { api, describe } from "../api.js";
import { barChart, lineChart, sparkline } from "../charts.js";
import { fill, h } from "../dom.js";
import { bytes, clock, decimal, num, pct, relative } from "../format.js";
import { follow } from "../sse.js";
import { dataTable } from "../table.js";

const HOUR = 3600;
const BUCKET = 60;
const MODES = {
  live: ["Live", "ok"],
  polling: ["Polling every 5 s", "warn"],
  offline: ["Offline: retrying", "bad"],
};

function card(label, testid) {
  const value = h("div", { class: "value", "data-testid": testid }, "—");
  const sub = h("div", { class: "sub" });
  return { el: h("div", { class: "card" }, h("div", { class: "label" }, label), value, sub), value, sub };
}

function statusTone(code) {
  if (code.startsWith("2") || code === "304") return "";
  if (code.startsWith("3")) return "alt";
  if (code.startsWith("4")) return "warn";
  return "bad";
}

export function render(main) {
  const mode = h("span", { class: "badge", "data-testid": "live-mode" }, "Connecting…");
  const cards = {
    pages: card("Pages stored", "stat-pages"),
    rate: card("Pages/s (last full minute)", "stat-rate"),
    success: card("Success rate", "stat-success"),
    frontier: card("Frontier (pending, all crawls)", "stat-frontier"),
    bytes: card("Downloaded", "stat-bytes"),
    robots: card("Robots.txt denials", "stat-robots"),
    domains: card("Domains", "stat-domains"),
    workers: card("Active workers", "stat-workers"),
  };
  const chartBox = h("div", { "data-testid": "rate-chart" }, h("p", { class: "muted" }, "Loading…"));
  const statusBox = h("div", { "data-testid": "status-chart" });
  const workersBox = h("div", { "data-testid": "workers" });
  fill(main,
    h("div", { class: "spread" }, h("h1", {}, "Overview"), mode),
    h("div", { class: "cards" }, Object.values(cards).map((c) => c.el)),
    h("div", { class: "grid2" },
      h("section", { class: "panel", "aria-labelledby": "rate-title" },
        h("h2", { id: "rate-title" }, "Pages per second, last hour (all crawls)"), chartBox),
      h("section", { class: "panel", "aria-labelledby": "status-title" },
        h("h2", { id: "status-title" }, "HTTP status distribution"), statusBox)),
    h("section", { class: "panel", "aria-labelledby": "workers-title" },
      h("h2", { id: "workers-title" }, "Workers"), workersBox),
  );

  const frontierHistory = []; // [time, size] of the last 10 minutes
  let lastSeries = 0;
  let lastPages = null;
  let closed = false;

  async function loadSeries() {
    lastSeries = Date.now();
    try {
      const series = await api("/api/stats/timeseries", { query: { minutes: 60, bucket_seconds: BUCKET } });
      if (closed) return;
      const now = Date.now() / 1000;
      const by = new Map(series.points.map((p) => [p.t, p.pages]));
      const first = Math.floor(series.since / BUCKET) * BUCKET;
      const points = [];
      // The chart ends with the last full minute and the card shows that point: one
      // definition (pages stored per minute bucket, all crawls) and one window, so the two
      // never disagree; the minute under way is counted apart, below the card.
      const current = Math.floor(now / BUCKET) * BUCKET;
      const full = current - BUCKET;
      for (let t = first; t <= full; t += BUCKET) points.push({ x: t, y: (by.get(t) || 0) / BUCKET });
      const done = by.get(full) || 0;
      cards.rate.value.textContent = decimal(done / BUCKET, 2);
      // Fetches, not pages: a page fetched again by a re-crawl counts each time.
      cards.rate.sub.textContent = `${num(done)} ${done === 1 ? "fetch" : "fetches"} ${clock(full)}–${clock(current)}; ${num(by.get(current) || 0)} so far in this minute`;
      fill(chartBox, lineChart(points, {
        x0: full - HOUR, x1: full, xLabel: clock, title: "Pages per second over the last hour, by minute",
      }));
    } catch (exc) {
      if (!closed) fill(chartBox, h("p", { class: "error-text" }, describe(exc)));
    }
  }

  function show(stats) {
    const now = stats.time || Date.now() / 1000;
    cards.pages.value.textContent = num(stats.pages);
    // Distinct pages (each URL's latest fetch), so a re-crawl does not add to it.
    cards.pages.sub.textContent = `${num(stats.pages_last_hour)} of them fetched in the last hour`;
    cards.success.value.textContent = pct(stats.success_rate);
    cards.success.sub.textContent = "2xx and 304 of all pages";
    cards.bytes.value.textContent = bytes(stats.bytes);
    cards.robots.value.textContent = num(stats.robots_denials ?? stats.urls?.blocked ?? 0);
    cards.robots.sub.textContent = "URLs blocked";
    cards.domains.value.textContent = num(stats.domains);

    frontierHistory.push([now, stats.frontier_size]);
    while (frontierHistory.length && frontierHistory[0][0] < now - 600) frontierHistory.shift();
    cards.frontier.value.textContent = num(stats.frontier_size);
    const minuteAgo = frontierHistory.find(([t]) => t >= now - 60) || frontierHistory[0];
    const elapsed = now - minuteAgo[0];
    const trend = elapsed > 0 ? ((stats.frontier_size - minuteAgo[1]) / elapsed) * 60 : 0;
    // Leased URLs are not pending: a crawl in full swing can show 0 here, so say what is out.
    const leased = stats.urls?.in_progress ?? 0;
    fill(cards.frontier.sub,
      leased ? h("span", { "data-testid": "frontier-in-progress" }, `${num(leased)} in progress · `) : null,
      h("span", { "data-testid": "frontier-trend" },
        elapsed > 0 ? `${trend >= 0 ? "+" : ""}${decimal(trend, 0)}/min` : "trend after the next update"),
      sparkline(frontierHistory.map(([, v]) => v), { title: "Frontier size, last 10 minutes" }));

    const codes = Object.entries(stats.status_codes || {}).sort(([a], [b]) => a.localeCompare(b));
    fill(statusBox, codes.length
      ? barChart(codes.map(([code, n]) => ({ label: code === "none" ? "no answer" : code, value: n, tone: statusTone(code) })), {
        title: "Pages by HTTP status", format: num,
      })
      : h("p", { class: "empty" }, "No pages fetched yet."));

    const workers = stats.workers || [];
    cards.workers.value.textContent = num(workers.length);
    cards.workers.sub.textContent = workers.map((w) => w.current_host).filter(Boolean).join(", ");
    fill(workersBox, dataTable({
      columns: [
        { key: "id", label: "Worker" },
        { key: "hostname", label: "Machine", render: (w) => `${w.hostname} (pid ${w.pid})` },
        { key: "current_host", label: "Current host" },
        { key: "crawl", label: "Crawl", nowrap: true },
        { key: "pages", label: "Pages", numeric: true, render: (w) => num(w.pages) },
        { key: "rate", label: "Pages/s", numeric: true, render: (w) => decimal(w.rate ?? 0, 2) },
        { key: "heartbeat_at", label: "Heartbeat", render: (w) => relative(w.heartbeat_at, now) },
      ],
      rows: workers,
      emptyText: "No worker has sent a heartbeat in the last 30 s.",
    }));

    const minute = Math.floor(Date.now() / 1000 / BUCKET);
    if (minute !== Math.floor(lastSeries / 1000 / BUCKET)) loadSeries(); // a minute completed
    else if (stats.pages !== lastPages && Date.now() - lastSeries > 10_000) loadSeries();
    lastPages = stats.pages;
  }

  loadSeries();
  const stop = follow("/sse/crawler/events", {
    interval: 2,
    onEvent: (name, data) => {
      if (closed) return;
      if (name === "stats") show(data);
      else if (name === "error") mode.textContent = `Error: ${data.message}`;
    },
    onMode: (next) => {
      const [text, tone] = MODES[next];
      mode.textContent = text;
      mode.className = `badge ${tone}`;
      mode.dataset.mode = next;
    },
  });
  return () => {
    closed = true;
    stop();
  };
}
