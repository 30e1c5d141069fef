// A closed-loop HTTP load generator: `connections` workers each send the next request as soon as
// the previous answered, for `durationMs`. Run as its own process so it never shares an event
// loop with the server under test; prints one JSON result line.
export interface LoadSpec {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** A body, or a list of bodies used round-robin (e.g. distinct webhook deliveries). */
  body?: string | string[];
  /** Per-request headers used round-robin beside `body` (e.g. distinct delivery ids and signatures). */
  headerSets?: Record<string, string>[];
  connections: number;
  durationMs: number;
  expectStatus?: number;
}

export interface LoadResult {
  requests: number;
  errors: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
}

export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  let counter = 0;
  const deadline = performance.now() + spec.durationMs;
  const bodies = Array.isArray(spec.body) ? spec.body : spec.body === undefined ? [undefined] : [spec.body];
  const worker = async () => {
    while (performance.now() < deadline) {
      const i = counter++;
      const started = performance.now();
      try {
        const res = await fetch(spec.url, {
          method: spec.method ?? "GET",
          headers: { ...spec.headers, ...(spec.headerSets ? spec.headerSets[i % spec.headerSets.length] : {}) },
          body: bodies[i % bodies.length],
        });
        await res.arrayBuffer();
        if (spec.expectStatus !== undefined && res.status !== spec.expectStatus) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - started);
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: spec.connections }, worker));
  const elapsed = (performance.now() - began) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { requests: latencies.length, errors, rps: latencies.length / elapsed, p50_ms: at(0.5), p99_ms: at(0.99) };
}

if (import.meta.main) {
  const spec = JSON.parse(await Bun.file(process.argv[2]!).text()) as LoadSpec;
  console.log(JSON.stringify(await runLoad(spec)));
}
