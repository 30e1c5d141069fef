// A small Prometheus registry (text exposition format 0.0.4). Counters and gauges live in this
// process; figures that must agree across daemon processes (builds by status, queue depth,
// runners connected) are read from the database at scrape time by GET /metrics instead.
type Labels = Record<string, string>;

function key(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}="${String(labels[k]).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`)
    .join(",");
}

class Family {
  readonly values = new Map<string, number>();
  /** Label values (in the order given) → their rendered key: key() sorts and escapes, and a request counts once per answer. */
  readonly #keys = new Map<string, string>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge",
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    const k = this.#keyOf(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }

  /** One series of this family, its key rendered now: what a hot path counts on (a request's route and status). */
  series(labels: Labels): { inc(by?: number): void } {
    const k = this.#keyOf(labels);
    return { inc: (by = 1) => void this.values.set(k, (this.values.get(k) ?? 0) + by) };
  }

  set(labels: Labels, value: number): void {
    this.values.set(this.#keyOf(labels), value);
  }

  #keyOf(labels: Labels): string {
    let given = "";
    for (const name in labels) given += `${name}\u0000${labels[name]}\u0000`;
    let k = this.#keys.get(given);
    if (k === undefined) {
      k = key(labels);
      this.#keys.set(given, k);
    }
    return k;
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const [k, v] of this.values) lines.push(`${this.name}${k ? `{${k}}` : ""} ${v}`);
    // Present from the first scrape: a family nothing has touched yet reads 0, so a dashboard or
    // an alert on it works before the first build, the first full disk or the first stream.
    if (this.values.size === 0) lines.push(`${this.name} 0`);
    return lines.join("\n");
  }
}

/**
 * The in-process families docs/operations.md and docs/runners.md list, declared when a registry is
 * made so /metrics shows each of them from the start; the code that updates one asks for it by
 * name and gets this family (the first help text wins).
 */
const DOCUMENTED_FAMILIES: [name: string, help: string, type: "counter" | "gauge"][] = [
  ["roost_http_requests_total", "HTTP requests by method, route template and status.", "counter"],
  ["roost_log_bytes_ingested_total", "Bytes of build log lines stored.", "counter"],
  ["roost_sse_subscribers", "Open log streams in this process.", "gauge"],
  ["roost_sse_catchup_reads_total", "Log pages read from the database by streams catching up (joining late or fallen behind).", "counter"],
  ["roost_disk_full_errors_total", "Writes refused because the data directory's disk was full.", "counter"],
  ["roost_disk_full_at_seconds", "When a write last failed because the data directory's disk was full (Unix seconds; 0 = never).", "gauge"],
  ["roost_retention_deleted_total", "Deleted by retention: kind=logs counts builds whose log was deleted, kind=artifacts artifact files.", "counter"],
  ["roost_retention_reclaimed_bytes_total", "Bytes of build logs and artifact files deleted by retention, by kind.", "counter"],
  ["roost_data_dir_bytes", "Bytes in the data directory: the database files and the stored artifacts.", "gauge"],
];

export class MetricsRegistry {
  readonly #families = new Map<string, Family>();

  constructor() {
    for (const [name, help, type] of DOCUMENTED_FAMILIES) this.#family(name, help, type);
  }

  counter(name: string, help: string): Family {
    return this.#family(name, help, "counter");
  }

  gauge(name: string, help: string): Family {
    return this.#family(name, help, "gauge");
  }

  #family(name: string, help: string, type: "counter" | "gauge"): Family {
    let family = this.#families.get(name);
    if (!family) this.#families.set(name, (family = new Family(name, help, type)));
    return family;
  }

  /** Renders these families plus `extra` (families computed at scrape time). */
  render(extra: Family[] = []): string {
    return [...this.#families.values(), ...extra].map((f) => f.render()).join("\n") + "\n";
  }

  /** A family not kept in the registry, for figures computed at scrape time. */
  static snapshot(name: string, help: string, type: "counter" | "gauge"): Family {
    return new Family(name, help, type);
  }
}
