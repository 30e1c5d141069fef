// `roost serve` from a checkout (a git worktree of a commit to compare) on a data directory of its
// own, for the A/B scripts (ab.ts, fleet-ab.ts), which alternate their load over several of them.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUN } from "../../tests/helpers/daemon.ts";

/** The daemon of `checkout`, once its "roost listening" line names its URL; `env` is added to its environment. */
export async function startCheckout(checkout: string, env: Record<string, string> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "roost-ab-"));
  const child = Bun.spawn([BUN, join(checkout, "bin/roost.ts"), "serve"], {
    cwd: checkout,
    env: { PATH: process.env.PATH ?? "", HOME: tmpdir(), ROOST_DATA_DIR: dataDir, ROOST_LISTEN: "127.0.0.1:0", ROOST_LOG_LEVEL: "warn", ...env },
    stdout: "ignore",
    stderr: "pipe",
  });
  let log = "";
  for await (const chunk of child.stderr as ReadableStream<Uint8Array>) {
    log += new TextDecoder().decode(chunk);
    const url = /"url":"(http[^"]+)"/.exec(log)?.[1];
    if (url) return { name: checkout, child, url, dataDir };
  }
  throw new Error(`${checkout} did not start: ${log}`);
}
