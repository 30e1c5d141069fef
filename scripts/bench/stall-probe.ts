// Preloaded into a server process by `npm run bench` (BUN_OPTIONS="--preload <this file>") to
// measure that process's own longest event-loop stall: a 5 ms interval notes how late each tick
// fires. SIGUSR2 writes {"seq", "max_ms"} (the longest lateness since the previous SIGUSR2) to
// $ROOST_BENCH_STALL_FILE and starts over, so the bench can bracket exactly its load window.
import { writeFileSync } from "node:fs";

const file = process.env.ROOST_BENCH_STALL_FILE;
if (file) {
  const INTERVAL_MS = 5;
  let last = performance.now();
  let max = 0;
  let seq = 0;
  setInterval(() => {
    const now = performance.now();
    max = Math.max(max, now - last - INTERVAL_MS);
    last = now;
  }, INTERVAL_MS).unref();
  process.on("SIGUSR2", () => {
    writeFileSync(file, JSON.stringify({ seq: ++seq, max_ms: max }));
    max = 0;
    last = performance.now();
  });
}
