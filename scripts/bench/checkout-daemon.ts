// `roost serve` from a checkout (a git worktree of a commit to compare) on a data directory of its
// own, for the A/B scripts (ab.ts, fleet-ab.ts, webhook-ab.ts), which alternate their load over
// several of them.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { BUN, type Daemon } from "../../tests/helpers/daemon.ts";
import { ciFixture, owner } from "../bench.ts";

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

export type CheckoutDaemon = Awaited<ReturnType<typeof startCheckout>>;
export type CheckoutWithCi = CheckoutDaemon & { token: string; ci: Awaited<ReturnType<typeof ciFixture>> };

/**
 * `roost serve` from each checkout, each with an owner's token and the bench's CI fixture (a GitHub
 * stand-in, a project, a pipeline whose pushes are signed with `secret`), for `use`; afterwards
 * every fixture and daemon is stopped and its data directory removed. With `profDir`, each daemon
 * runs under `bun --cpu-prof` and writes `<scenario>-<i>-<checkout>.cpuprofile` there; `env[i]`
 * is added to the i-th daemon's environment.
 */
export async function withCheckoutsAndCi<T>(
  checkouts: string[],
  options: { scenario: string; secret: string; profDir?: string; env?: Record<string, string>[] },
  use: (set: CheckoutWithCi[]) => Promise<T>,
): Promise<T> {
  const daemons = await Promise.all(
    checkouts.map((checkout, i) =>
      startCheckout(resolve(checkout), {
        ...options.env?.[i],
        ...(options.profDir
          ? { BUN_OPTIONS: `--cpu-prof --cpu-prof-dir=${resolve(options.profDir)} --cpu-prof-name=${options.scenario}-${i}-${basename(checkout)}.cpuprofile` }
          : {}),
      }),
    ),
  );
  const stops: (() => Promise<void>)[] = [];
  try {
    const set = await Promise.all(
      daemons.map(async (d) => {
        const token = await owner({ url: d.url } as Daemon);
        const ci = await ciFixture({ url: d.url } as Daemon, token, options.secret);
        stops.push(ci.stop);
        return { ...d, token, ci };
      }),
    );
    return await use(set);
  } finally {
    for (const stop of stops) await stop();
    for (const d of daemons) {
      d.child.kill();
      await d.child.exited;
      rmSync(d.dataDir, { recursive: true, force: true });
    }
  }
}
