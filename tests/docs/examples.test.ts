// Every command example in README.md and docs/ is either run by a test as written or checked
// against the daemon, so a doc that drifts from it fails the suite (Roost issue 12):
//
//   ```sh run:<scenario>   run, in document order, in one bash per (file, scenario), against a
//                          fresh real daemon; every curl fails on an HTTP error (a curlrc with
//                          --fail-with-body), so a wrong path, body or credential fails the test
//   ```console run         each `$ command` line runs; the lines under it are its exact output
//   ```sh quickstart       README's quick start, run by tests/e2e/quickstart.test.ts
//   ```sh check            needs what a test cannot have (GitHub, GitLab, an identity provider,
//                          root, a remote host, minutes): every curl in it must call a route the
//                          route table has with that method, and every `roost <command>` must exist
//
// The docs' own addresses (http://127.0.0.1:8080) are kept: curl's config file connects them to
// the test daemon's port (--connect-to), and `roost` is this checkout's bin/roost.ts. Variables
// the docs take as given ($ADMIN, an admin's session; $TOKEN, the setup token) are set by the
// scenario's prelude below, the way the docs say to get them.
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { routes } from "../../handlers/routes.ts";
import { BUN, REPO_ROOT, ROOST, startDaemon } from "../helpers/daemon.ts";
import { fencedBlocks, type FencedBlock } from "../helpers/markdown.ts";

const DOCS = [
  "README.md",
  ...readdirSync(join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];
const COMMAND_LANGUAGES = new Set(["sh", "bash", "shell", "console"]);
const work = mkdtempSync(join(tmpdir(), "roost-doc-examples-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Example extends FencedBlock {
  file: string;
}

const examples: Example[] = DOCS.flatMap((file) => fencedBlocks(readFileSync(join(REPO_ROOT, file), "utf8")).map((b) => ({ ...b, file })));
const commandExamples = examples.filter((e) => COMMAND_LANGUAGES.has(e.info[0] ?? ""));
const where = (e: Example) => `${e.file}:${e.line}`;

/** What scenario prelude each `run:<scenario>` needs before the file's first block of it. */
const PRELUDES: Record<string, string> = {
  // A fresh Local Only instance, nothing done yet.
  "local-first-run": "",
  // A fresh instance before setup, as README "External Access" starts it.
  "external-first-run": "",
  // External Access with a trusted proxy chosen, the setup token in $TOKEN (README "External Access", steps 1-2).
  "external-trusted-proxy": `TOKEN=$(cat data/setup-token)
curl -s -X POST http://127.0.0.1:8080/v1/setup/preferences -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -d '{"runtime_mode":"remote","remote_auth_mode":"trusted_proxy"}' > /dev/null
`,
  // A ready Local Only instance and $ADMIN, its owner's session (README "Local Only").
  admin: `ADMIN=$(curl -s -X POST http://127.0.0.1:8080/v1/auth/local/login -H 'content-type: application/json' -d '{"email":"owner@example.com"}' | jq -r .session_token)
`,
};

/** `$PATH` with `roost` meaning this checkout's program, and a curlrc sending the docs' address to `port`. */
function shellEnvironment(dir: string, port: number): Record<string, string> {
  const bin = join(dir, "bin");
  const home = join(dir, "home");
  mkdirSync(bin, { recursive: true });
  mkdirSync(home, { recursive: true });
  writeFileSync(join(bin, "roost"), `#!/bin/sh\nexec ${JSON.stringify(BUN)} ${JSON.stringify(ROOST)} "$@"\n`);
  chmodSync(join(bin, "roost"), 0o755);
  writeFileSync(join(home, ".curlrc"), `connect-to = 127.0.0.1:8080:127.0.0.1:${port}\nfail-with-body\nshow-error\n`);
  return { PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`, HOME: home, ROOST_LISTEN: `127.0.0.1:${port}` };
}

async function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = Bun.spawn(["bash", "-c", script], { cwd, env, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

describe("every command example in README.md and docs/ is marked", () => {
  test("as run:<scenario>, run, quickstart or check", () => {
    const unmarked = commandExamples
      .filter((e) => !e.info.slice(1).some((w) => w === "run" || w === "quickstart" || w === "check" || w.startsWith("run:")))
      .map(where);
    expect(unmarked).toEqual([]);
  });

  test("every run:<scenario> names a scenario this test knows", () => {
    const unknown = commandExamples.flatMap((e) => e.info.filter((w) => w.startsWith("run:") && !(w.slice(4) in PRELUDES)).map((w) => `${where(e)} ${w}`));
    expect(unknown).toEqual([]);
  });
});

/** Each curl invocation of a block: its method and path (continuation lines joined). */
function curlCalls(code: string): { method: string; path: string; text: string }[] {
  const joined = code.replace(/\\\n/g, " ");
  const calls: { method: string; path: string; text: string }[] = [];
  for (const match of joined.matchAll(/\bcurl\b([^\n|;)]*)/g)) {
    const text = match[1]!;
    const url = text.match(/(?:https?:\/\/[^\s"'/]+|\$\{?ROOST_URL\}?)(\/[^\s"'?]*)/);
    if (!url) continue;
    const method = text.match(/-X\s+([A-Z]+)/)?.[1] ?? (/\s(-d|--data(-binary|-raw)?|-F)\s/.test(text) ? "POST" : "GET");
    calls.push({ method, path: url[1]!, text: `curl${text}` });
  }
  return calls;
}

/** The route-table entry a documented path means: `{param}` segments match any one segment ($VAR, …, an id). */
function routeFor(method: string, path: string): string | null {
  const segments = path.split("/");
  const route = routes.find((r) => {
    if (r.method !== method) return false;
    const pattern = r.path.split("/");
    return pattern.length === segments.length && pattern.every((p, i) => (p.startsWith("{") ? segments[i] !== "" : p === segments[i]));
  });
  return route ? `${route.method} ${route.path}` : null;
}

describe("check blocks call routes that exist, and commands that exist", () => {
  const checked = commandExamples.filter((e) => e.info.includes("check") || e.info.includes("quickstart"));
  test.each(checked.map((e) => [where(e), e] as const))("%s", async (_, example) => {
    const missing = curlCalls(example.code)
      .filter((c) => routeFor(c.method, c.path) === null)
      .map((c) => `${c.method} ${c.path}`);
    expect(missing).toEqual([]);
    // `roost <command>` (not a path ending in /roost, nor the user of `sudo -u roost`).
    for (const [, command] of example.code.matchAll(/(?<!-u |\/)\broost ([a-z][a-z-]*)/g)) {
      const help = Bun.spawnSync([BUN, ROOST, command!, "--help"], { cwd: REPO_ROOT });
      expect({ command, code: help.exitCode }).toEqual({ command, code: 0 });
    }
  });
});

describe("runnable examples run as written against a real daemon", () => {
  const groups = new Map<string, Example[]>();
  for (const e of commandExamples) {
    const scenario = e.info.find((w) => w.startsWith("run:"))?.slice(4);
    if (scenario === undefined) continue;
    const key = `${e.file} ${scenario}`;
    groups.set(key, [...(groups.get(key) ?? []), e]);
  }

  test.each([...groups.entries()])(
    "%s",
    async (key, blocks) => {
      const scenario = key.split(" ")[1]!;
      const dir = join(work, key.replace(/[^A-Za-z0-9]+/g, "-"));
      mkdirSync(dir, { recursive: true });
      const daemon = await startDaemon({ dataDir: join(dir, "data"), cleanup: false });
      try {
        const env = { ...shellEnvironment(dir, Number(new URL(daemon.url).port)), ROOST_DATA_DIR: join(dir, "data") };
        // One shell for the scenario's blocks, in order: a variable a block sets is there for the next.
        const script = ["set -e -o pipefail", PRELUDES[scenario], ...blocks.map((b) => `echo "### ${where(b)}" >&2\n${b.code}`)].join("\n");
        const res = await bash(script, dir, env);
        if (res.code !== 0) throw new Error(`exit ${res.code}\n--- stdout\n${res.stdout}\n--- stderr\n${res.stderr}`);
      } finally {
        await daemon.stop();
      }
    },
    90_000,
  );
});

describe("console examples print what the docs show", () => {
  const consoles = commandExamples.filter((e) => e.info[0] === "console" && e.info.includes("run"));
  test.each(consoles.map((e) => [where(e), e] as const))("%s", async (_, example) => {
    const dir = join(work, `console-${example.line}`);
    mkdirSync(dir, { recursive: true });
    const env = shellEnvironment(dir, 8080);
    // Each `$ ` line is a command; the lines up to the next one are its output (stdout and stderr).
    const lines = example.code.trimEnd().split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i]!.startsWith("$ ")) continue;
      const expected: string[] = [];
      for (let j = i + 1; j < lines.length && !lines[j]!.startsWith("$ "); j++) expected.push(lines[j]!);
      const res = await bash(`${lines[i]!.slice(2)} 2>&1`, dir, env);
      expect({ command: lines[i], output: res.stdout.trimEnd() }).toEqual({ command: lines[i], output: expected.join("\n") });
    }
  });
});
