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
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge",
  ) {}

  inc(labels: Labels = {}, by = 1): void {
    const k = key(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }

  set(labels: Labels, value: number): void {
    this.values.set(key(labels), value);
  }

  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`];
    for (const [k, v] of this.values) lines.push(`${this.name}${k ? `{${k}}` : ""} ${v}`);
    if (this.values.size === 0 && this.type === "gauge") lines.push(`${this.name} 0`);
    return lines.join("\n");
  }
}

export class MetricsRegistry {
  readonly #families = new Map<string, Family>();

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
