// Roost on several hosts with real parts all the way (docs/operations.md "Several hosts"): sqld
// and three `roost serve` on hosts of one LAN (tests/helpers/several-hosts.ts), a real nginx on a
// host of its own as their load balancer (tests/support/nginx.ts startLoadBalancer: the three
// daemons as one upstream, a daemon that cannot be reached passed over), and three real
// `roost runner` processes, each on a host of its own, that know only nginx's address. The owner,
// too, starts the builds through nginx.
//
// Each runner builds the committed repository with the Flutter stand-in (scripts/flutter-stand-in):
// a build step prints numbered lines over a few seconds, and the build uploads a file of the
// repository as its artifact. While the runners stream those lines, one daemon is killed with
// SIGKILL, with requests of theirs in flight through it: every build still succeeds, each log
// holds each of its lines once, in order, as read through each surviving daemon and through
// nginx, each artifact downloads through nginx byte for byte, and nginx, trying the dead daemon
// again, passes over it to a survivor.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { http } from "../helpers/daemon.ts";
import { commitRepository, isFinished, spawnHostRunner, type RunnerProcess } from "../helpers/ci-daemon.ts";
import { startSeveralHosts, type SeveralHosts } from "../helpers/several-hosts.ts";
import { startLoadBalancer, type Nginx } from "../support/nginx.ts";

const work = mkdtempSync(join(tmpdir(), "roost-several-hosts-runners-"));
const repo = join(work, "app");
/** The repository's file each build uploads as its artifact. */
const payload = randomBytes(3 * 1024 * 1024);
const RUNNERS = ["r1", "r2", "r3"];
/** The numbered lines a build's step prints, 20 ms apart. */
const TICKS = 300;
/**
 * Each build holds at this tick until the test has killed a daemon: a build that started seconds
 * before the last one could otherwise have printed every tick before the kill (the runners clone
 * and start at their own pace on a loaded host), and then no build of it was streaming when the
 * daemon died.
 */
const HOLD_AT = 250;
const release = join(work, "release-ticks");
let world: SeveralHosts;
let lb: Nginx;
let commit = "";
const runners: { id: string; process: RunnerProcess }[] = [];

const sha256 = (bytes: Uint8Array | ArrayBuffer) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

beforeAll(async () => {
  mkdirSync(join(repo, "assets"), { recursive: true });
  writeFileSync(join(repo, "assets/payload.bin"), payload);
  commit = await commitRepository(repo, { "README.md": "# fleet\n", "lib/main.dart": "void main() {}\n" });
  world = await startSeveralHosts({
    bucket: "roost-lb",
    repository: { id: 4344, full_name: "acme/fleet", default_branch: "main", private: true, clone_url: repo },
    webhookSecret: "balanced-webhook-secret",
    extraHosts: ["lb", ...RUNNERS],
  });
  lb = await startLoadBalancer(
    world.lan.hosts.lb!,
    world.daemons.map((d) => new URL(d.url).host),
  );
  for (const name of RUNNERS) {
    const made = await http(lb.url, "POST", "/v1/runners", { token: world.owner, body: { name } });
    if (made.status !== 201) throw new Error(`runner ${name}: ${made.status} ${JSON.stringify(made.body)}`);
    const registered = { id: made.body.runner.id as string, token: made.body.token as string };
    const home = join(work, name);
    mkdirSync(home);
    runners.push({ id: registered.id, process: spawnHostRunner(lb.url, registered, { home, prefix: world.lan.hosts[name]!.run }) });
  }
}, 90_000);

afterAll(async () => {
  for (const r of runners) r.process.proc.kill("SIGKILL");
  await Promise.all(runners.map((r) => r.process.proc.exited));
  await lb?.stop();
  await world?.stop();
  rmSync(work, { recursive: true, force: true });
});

test("runners behind nginx finish every build, whole logs and artifacts, when a daemon is killed while they stream", async () => {
  const { daemons, owner, project, waitFor } = world;
  const [a, b, c] = daemons;
  const pipeline = await http(lb.url, "POST", `/v1/projects/${project.id}/pipelines`, {
    token: owner,
    body: {
      name: "fleet",
      trigger_config: { branches: ["**"] },
      concurrency: { max_concurrent: 100 },
      execution_config: {
        commands: {
          build: [
            `for i in $(seq 1 ${TICKS}); do echo "tick $i"; if [ $i = ${HOLD_AT} ]; then until [ -e '${release}' ]; do sleep 0.05; done; fi; sleep 0.02; done`,
          ],
          post_build: ["cp assets/payload.bin build/payload.bin"],
        },
        artifact_patterns: ["build/payload.bin"],
      },
    },
  });
  expect(pipeline.status).toBe(201);
  const buildIds: string[] = [];
  for (const _ of RUNNERS) {
    const made = await http(lb.url, "POST", `/v1/projects/${project.id}/builds`, {
      token: owner,
      body: { pipeline_id: pipeline.body.pipeline.id, commit_sha: commit },
    });
    expect(made.status).toBe(201);
    buildIds.push(made.body.build.id);
  }
  const ticks = async (url: string, id: string) =>
    ((await http(url, "GET", `/v1/builds/${id}/logs`, { token: owner })).body as { text: string }[]).filter((l) => /^tick \d+$/.test(l.text)).length;

  // Every runner has its build streaming: the first daemon hangs for 2 s, so that the requests
  // nginx sends it meanwhile (log lines, heartbeats; maybe stored, never answered) are in flight
  // when it dies, then it dies: no shutdown, no goodbye.
  await waitFor("every build streaming its ticks", async () => (await Promise.all(buildIds.map((id) => ticks(b.url, id)))).every((n) => n >= 20));
  a.process.kill("SIGSTOP");
  await Bun.sleep(2000);
  a.process.kill("SIGKILL");
  await a.process.exited;
  expect((await Promise.all(buildIds.map((id) => ticks(b.url, id)))).every((n) => n < TICKS)).toBe(true);
  writeFileSync(release, "");

  const builds = await Promise.all(
    buildIds.map(async (id) => {
      let build: { status: string; runner_id: string } = { status: "queued", runner_id: "" };
      await waitFor(`build ${id} finished`, async () => isFinished((build = (await http(lb.url, "GET", `/v1/builds/${id}`, { token: owner })).body.build)));
      return build;
    }),
  );
  const said = () => runners.map((r) => ({ runner: r.id, lines: r.process.lines.filter((l) => /warn|error/.test(l)) }));
  expect({ statuses: builds.map((x) => x.status), said: builds.every((x) => x.status === "succeeded") ? [] : said() }).toEqual({
    statuses: RUNNERS.map(() => "succeeded"),
    said: [],
  });
  // One build each: every runner claimed through nginx.
  expect(new Set(builds.map((x) => x.runner_id))).toEqual(new Set(runners.map((r) => r.id)));

  for (const id of buildIds) {
    // The log, whole, from each survivor and through nginx: its lines numbered 1…n, the step's ticks each once, in order.
    const logs = await Promise.all(
      [b.url, c.url, lb.url].map(async (url) => (await http(url, "GET", `/v1/builds/${id}/logs`, { token: owner })).body as { seq: number; text: string }[]),
    );
    const [fromB] = logs as [{ seq: number; text: string }[]];
    expect(fromB.map((l) => l.seq)).toEqual(Array.from({ length: fromB.length }, (_, i) => i + 1));
    expect(fromB.filter((l) => /^tick \d+$/.test(l.text)).map((l) => l.text)).toEqual(Array.from({ length: TICKS }, (_, i) => `tick ${i + 1}`));
    expect(logs[1]).toEqual(fromB);
    expect(logs[2]).toEqual(fromB);

    // The artifact, through nginx: the repository's file, byte for byte.
    const listed = (await http(lb.url, "GET", `/v1/builds/${id}/artifacts`, { token: owner })).body.artifacts as { id: string; path: string }[];
    expect(listed.map((x) => x.path)).toEqual(["build/payload.bin"]);
    const res = await fetch(`${lb.url}/v1/builds/${id}/artifacts/${listed[0]!.id}`, { headers: { authorization: `Bearer ${owner}` } });
    expect(res.status).toBe(200);
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect({ size: bytes.byteLength, sha256: sha256(bytes) }).toEqual({ size: payload.length, sha256: sha256(payload) });
    expect(Buffer.compare(bytes, payload)).toBe(0);
  }

  // The runners knew nginx only: each one's finish went through it.
  // The dead daemon is passed over: a request nginx tries on it again (once its 5 s out are over)
  // meets a refused connection and goes on to a survivor.
  const passedOver = new RegExp(`^GET /healthz 200 upstream=${new URL(a.url).host}, \\S+ upstream_status=502, 200$`, "m");
  await waitFor("nginx passing over the dead daemon", async () => {
    await http(lb.url, "GET", "/healthz");
    return passedOver.test(lb.accessLog());
  });
  const access = lb.accessLog();
  // The requests in flight through the dead daemon: answered 502 by nginx (it passes a POST to another daemon only before sending it), sent again by the runners.
  const inFlight = access.split("\n").filter((l) => l.startsWith("POST /v1/runners/") && l.endsWith(`upstream=${new URL(a.url).host} upstream_status=502`));
  expect(inFlight.length).toBeGreaterThan(0);
  for (const r of runners) expect(access).toMatch(new RegExp(`^POST /v1/runners/${r.id}/jobs/[^/ ]+/finish 200 `, "m"));
  for (const d of [b, c]) expect((await http(d.url, "GET", "/readyz")).status).toBe(200);
  expect([b, c].flatMap((d) => d.logs.filter((l) => l.level === "error"))).toEqual([]);
}, 120_000);
