// How numbers, sizes and times read on the dashboard. Every number goes through the
// browser's locale (Intl), decimals included: "1.051" beside "0.32" in a German locale read
// as two different conventions.

const numbers = new Intl.NumberFormat();
const fixed = new Map(); // digits -> formatter

function withDigits(digits) {
  if (!fixed.has(digits)) {
    fixed.set(digits, new Intl.NumberFormat(undefined, { minimumFractionDigits: digits, maximumFractionDigits: digits }));
  }
  return fixed.get(digits);
}

export function num(value) {
  return value === null || value === undefined ? "—" : numbers.format(value);
}

/** A number with exactly `digits` decimals, in the locale's format ("0.32", "0,32"). */
export function decimal(value, digits = 2) {
  return value === null || value === undefined ? "—" : withDigits(digits).format(value);
}

/** A stored enum value as words ("in_stock" -> "in stock"), as the filters name them. */
export function words(value) {
  return value === null || value === undefined ? value : String(value).replaceAll("_", " ");
}

export function pct(ratio) {
  return ratio === null || ratio === undefined ? "—" : `${decimal(ratio * 100, 1)}%`;
}

export function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${decimal(value, unit === 0 ? 0 : 1)} ${units[unit]}`;
}

/** An epoch-seconds time as local date and time; "—" for none. */
export function time(epoch) {
  if (epoch === null || epoch === undefined) return "—";
  return new Date(epoch * 1000).toLocaleString(undefined, {
    month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23",
  });
}

export function clock(epoch) {
  return new Date(epoch * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
}

/** "in 3 min" / "5 s ago" relative to now. */
export function relative(epoch, now = Date.now() / 1000) {
  if (epoch === null || epoch === undefined) return "—";
  const delta = epoch - now;
  const text = span(Math.abs(delta));
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}

/** A duration in seconds as "2 h 5 min", "40 s". */
export function span(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ""}`;
  if (s < 86400) return `${Math.floor(s / 3600)} h${s % 3600 >= 60 ? ` ${Math.floor((s % 3600) / 60)} min` : ""}`;
  // A tenth of a day is worth saying in a day or two, not in a year ("1,110 d", not "1,109.8 d").
  return s < 10 * 86400 ? `${decimal(s / 86400, 1)} d` : `${num(Math.round(s / 86400))} d`;
}

export function ms(value) {
  if (value === null || value === undefined) return "—";
  // Stored in whole milliseconds, cut down: 0 is a fetch under a millisecond, not none.
  if (value < 1) return "<1 ms";
  return value < 1000 ? `${Math.round(value)} ms` : span(value / 1000);
}

/** Axis labels for times from x0 to x1: the clock within a day, else the date. */
export function timeAxis(x0, x1) {
  // Under ten minutes, minutes alone would label every tick alike.
  if (x1 - x0 < 600) {
    return (epoch) => new Date(epoch * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
  }
  if (x1 - x0 <= 86400) return clock;
  // Up to a few days, ticks fall within a day of each other: the day alone would repeat.
  if (x1 - x0 <= 5 * 86400) {
    return (epoch) => new Date(epoch * 1000).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  }
  const long = x1 - x0 > 300 * 86400;
  return (epoch) => new Date(epoch * 1000).toLocaleDateString(undefined, long
    ? { year: "numeric", month: "short" }
    : { month: "short", day: "numeric" });
}
