// `bun scripts/bench/profile-top.ts <file.cpuprofile> [n] [from-to]`: the heaviest frames of a
// CPU profile (from `npm run bench` with BENCH_CPU_PROF=<dir>, which runs the daemons under
// `bun --cpu-prof` and prints each wrk run's window as epoch milliseconds "from-to"), by self and
// by inclusive share of the samples, so docs/benchmarks.md can say where a missed target's time
// goes. The profiler samples only while the process runs JavaScript or native code it called, so
// shares are of busy time; a window keeps the set-up and the baseline's run out of them.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const ROOT = resolve(import.meta.dir, "../..");

/** Frames by share of samples taken between `window` (epoch ms), or all of them. */
export function topFrames(profile: Profile, n = 15, window?: [number, number]): { self: [string, number][]; inclusive: [string, number][]; samples: number } {
  const parent = new Map<number, number>();
  const byId = new Map<number, Node>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const label = (node: Node) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${url.replace(/^file:\/\//, "").replace(ROOT + "/", "")}:${lineNumber + 1}` : "native";
    return `${functionName || "(anonymous)"} ${where}`;
  };
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let samples = 0;
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (window && (at / 1000 < window[0] || at / 1000 > window[1])) return;
    const ms = 1;
    samples++;
    const leaf = byId.get(id)!;
    self.set(label(leaf), (self.get(label(leaf)) ?? 0) + ms);
    // Each frame once per sample, however deep the recursion.
    const seen = new Set<string>();
    for (let node: Node | undefined = leaf; node; node = byId.get(parent.get(node.id) ?? -1)) {
      const l = label(node);
      if (seen.has(l)) continue;
      seen.add(l);
      inclusive.set(l, (inclusive.get(l) ?? 0) + ms);
    }
  });
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  return { self: top(self), inclusive: top(inclusive), samples };
}

if (import.meta.main) {
  const profile = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as Profile;
  const window = process.argv[4]?.split("-").map(Number) as [number, number] | undefined;
  const { self, inclusive, samples } = topFrames(profile, Number(process.argv[3] ?? 15), window);
  const pct = (count: number) => `${((100 * count) / samples).toFixed(1)}%`;
  console.log(`${samples} samples`);
  console.log("\nself time:");
  for (const [l, ms] of self) console.log(`  ${pct(ms).padStart(6)}  ${l}`);
  console.log("\ninclusive time:");
  for (const [l, ms] of inclusive) console.log(`  ${pct(ms).padStart(6)}  ${l}`);
}
