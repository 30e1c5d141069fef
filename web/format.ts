// Dates, durations and sizes for people, with the browser's own Intl (no library needed).
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });

/** "3 minutes ago" for a Unix time in seconds. */
export function ago(seconds: number | null | undefined): string {
  if (seconds == null) return "never";
  const diff = seconds - Date.now() / 1000;
  const abs = Math.abs(diff);
  if (abs < 60) return relative.format(Math.round(diff), "second");
  if (abs < 3600) return relative.format(Math.round(diff / 60), "minute");
  if (abs < 86400) return relative.format(Math.round(diff / 3600), "hour");
  return relative.format(Math.round(diff / 86400), "day");
}

export function dateTime(seconds: number | null | undefined): string {
  return seconds == null ? "" : absolute.format(new Date(seconds * 1000));
}

export function timeOfDay(seconds: number): string {
  return clock.format(new Date(seconds * 1000));
}

export function duration(ms: number | null | undefined): string {
  if (ms == null || ms < 0) return "";
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A build's duration so far (running) or in total (finished), in ms. */
export function buildDuration(build: { started_at: number | null; finished_at: number | null }): number | null {
  if (build.started_at == null) return null;
  return ((build.finished_at ?? Date.now() / 1000) - build.started_at) * 1000;
}

/** A build's duration for people: its timestamps are whole seconds, so a quick build is "under 1 s", not "0 ms". */
export function buildDurationText(build: { started_at: number | null; finished_at: number | null }): string {
  const ms = buildDuration(build);
  if (ms == null) return "";
  return ms < 1000 ? "under 1 s" : duration(ms);
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

export function shortSha(sha: string): string {
  return sha.slice(0, 8);
}
