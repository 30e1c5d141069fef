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
