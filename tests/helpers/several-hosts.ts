// Roost on several hosts (docs/operations.md "Several hosts"), the world the tests of
// tests/e2e/several-hosts*.test.ts build in: a LAN of Linux network namespaces
// (tests/support/netns.ts) with sqld on host db and three `roost serve` on hosts a, b and c
// sharing that database and one S3-compatible bucket (S3rver, run by the test process at its
// own address on the LAN, as is the host-API stand-in), GitHub connected and a project on
// `repository`, its owner signed in. More hosts (`extraHosts`) are on the LAN for the test's
// own programs: a load balancer, runners.
import { startDaemon, type Daemon } from "./daemon.ts";
import { createGithubProject } from "./ci-daemon.ts";
import { startHostApiStandIn, type HostApiStandIn, type StandInRepo } from "../support/host-api-stand-in.ts";
import { startLan, type Lan } from "../support/netns.ts";
import { startS3Server, type S3Server } from "../support/s3-server.ts";
import { startSqld, type Sqld } from "../support/sqld.ts";
import { openDatabase, type Db } from "../../lib/db/client.ts";

export interface SeveralHosts {
  lan: Lan;
  sqld: Sqld;
  s3: S3Server;
  host: HostApiStandIn;
  /** The shared database, opened by the test itself. */
  db: Db;
  /** The daemons of hosts a, b and c, each on port 8080 of every address of its host. */
  daemons: [Daemon, Daemon, Daemon];
  /** The owner's session token. */
  owner: string;
  /** The project on `repository`: GitHub connected through a, its repositories listed through b, the project made through c. */
  project: { id: string };
  /** Polls `check` until it is true; fails after `ms` with `what` and the daemons' warnings and errors. */
  waitFor(what: string, check: () => Promise<boolean>, ms?: number): Promise<void>;
  /** Everything stopped and the LAN removed (the test stops what it started on the LAN first). */
  stop(): Promise<void>;
}

export async function startSeveralHosts(options: {
  bucket: string;
  repository: StandInRepo;
  webhookSecret: string;
  extraHosts?: string[];
  /** More of the daemons' environment. */
  env?: Record<string, string>;
}): Promise<SeveralHosts> {
  // What is started so far, stopped in reverse order by stop() or when a later step fails.
  const started: (() => unknown)[] = [];
  const stop = async () => {
    for (const s of started.splice(0).reverse()) await s();
  };
  try {
    return await start(options, started, stop);
  } catch (error) {
    await stop();
    throw error;
  }
}

async function start(options: Parameters<typeof startSeveralHosts>[0], started: (() => unknown)[], stop: () => Promise<void>): Promise<SeveralHosts> {
  const lan = await startLan(["db", "a", "b", "c", ...(options.extraHosts ?? [])]);
  started.push(() => lan.stop());
  const sqld = await startSqld({ host: lan.hosts.db });
  started.push(() => sqld.stop());
  const s3 = await startS3Server(options.bucket, lan.address);
  started.push(() => s3.stop());
  const host = await startHostApiStandIn(lan.address);
  started.push(() => host.stop());
  host.github.repos.push(options.repository);
  const db = await openDatabase(sqld.url);
  started.push(() => db.close());
  const env = {
    ...s3.env(),
    ROOST_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64"),
    ROOST_LOG_LEVEL: "info",
    ...options.env,
  };
  const dbHost = new URL(sqld.url).host;
  // Two over WebSocket, one over HTTP; each on every address of its host, as a daemon behind a load balancer listens.
  const daemons = (await Promise.all(
    [
      [lan.hosts.a!, `libsql://${dbHost}?tls=0`],
      [lan.hosts.b!, sqld.url],
      [lan.hosts.c!, `libsql://${dbHost}?tls=0`],
    ].map(([on, url]) => startDaemon({ host: on as Lan["hosts"][string], listen: "0.0.0.0:8080", env: { ...env, ROOST_DATABASE_URL: url as string } })),
  )) as [Daemon, Daemon, Daemon];
  started.push(() => Promise.all(daemons.map((d) => d.stop())));
  const owner = await loginOnHost(lan.hosts.a!);
  const [a, b, c] = daemons;
  const project = await createGithubProject([a.url, b.url, c.url], owner, host, options.webhookSecret);
  return {
    lan,
    sqld,
    s3,
    host,
    db,
    daemons,
    owner,
    project,
    async waitFor(what, check, ms = 60_000) {
      const deadline = performance.now() + ms;
      while (!(await check())) {
        if (performance.now() > deadline) {
          const problems = daemons.flatMap((d) => d.logs.filter((l) => l.level === "warn" || l.level === "error").map((l) => ({ daemon: d.url, ...l })));
          throw new Error(`${what}: not within ${ms / 1000} s; daemons said ${JSON.stringify(problems)}`);
        }
        await Bun.sleep(200);
      }
    },
    stop,
  };
}

/** The owner signs in on the first run from the host's own loopback (local login takes loopback peers only); the session token. */
async function loginOnHost(on: Lan["hosts"][string]): Promise<string> {
  const login = Bun.spawn(
    [
      ...on.run,
      "curl",
      "-sS",
      "-m",
      "30",
      "-H",
      "content-type: application/json",
      "--data",
      JSON.stringify({ email: "owner@example.test" }),
      "http://127.0.0.1:8080/v1/auth/local/login",
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [answer, err] = await Promise.all([new Response(login.stdout).text(), new Response(login.stderr).text(), login.exited]);
  const owner = (JSON.parse(answer || "{}") as { session_token?: string }).session_token ?? "";
  if (!owner) throw new Error(`local login on ${on.name} failed: ${answer} ${err}`);
  return owner;
}
