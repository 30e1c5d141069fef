// `roost runner --help` prints the one help text the runner program owns (runner/main.ts), the
// same whether bin/roost.ts answers it or the runner does, so the two can never disagree.
import { expect, test } from "bun:test";
import { RUNNER_HELP } from "../../runner/main.ts";
import { BUN, REPO_ROOT, ROOST } from "../helpers/daemon.ts";

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn([BUN, ROOST, ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

test.each([[["runner", "--help"]], [["runner", "-h"]]])(
  "roost %p prints the runner program's help, with what it does when Roost is unreachable and on SIGTERM",
  async (args) => {
    const res = await run(args);
    expect(res).toEqual({ code: 0, stdout: RUNNER_HELP + "\n", stderr: "" });
    expect(res.stdout).toContain("While Roost cannot be reached, the runner says so once and keeps retrying with backoff.");
    expect(res.stdout).toContain("ROOST_URL                  the daemon, http:// or https://");
  },
);
