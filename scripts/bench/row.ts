// One figure of docs/benchmarks.md: Roost's number beside a baseline measured in the same run
// (scripts/bench.ts records them; the scenarios under scripts/bench/ return them).

export interface BenchRow {
  scenario: string;
  metric: string;
  roost: number;
  baseline: number;
  baselineName: string;
  /** Whether a larger number is better (throughput) or worse (latency, memory, time). */
  higherIsBetter: boolean;
  unit: string;
}

/** What a scenario run on its own (`bun scripts/bench/<file>.ts`) prints: its rows, then any named ratios and notes. */
export function printRows(rows: BenchRow[], ratios: Record<string, number> = {}, notes: string[] = []): void {
  for (const r of rows)
    console.log(
      `${r.scenario} · ${r.metric}: roost ${r.roost.toFixed(2)} ${r.unit} vs ${r.baselineName} ${r.baseline.toFixed(2)} ${r.unit} (×${(r.roost / r.baseline).toFixed(3)})`,
    );
  for (const [key, value] of Object.entries(ratios)) console.log(`${key}: ${value.toFixed(3)}`);
  for (const note of notes) console.log(note);
}
