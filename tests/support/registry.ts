// A real image registry for the private-image tests: Debian's docker-registry, the CNCF
// distribution registry (https://distribution.github.io/distribution/about/configuration/), on a
// free port of 127.0.0.1 with htpasswd authentication (bcrypt, which Bun.password makes) and its
// storage in a temporary directory. It speaks plain HTTP, so the engine is told with a
// registries.conf of its own (containers-registries.conf(5): insecure = true) rather than any
// flag of Roost's. Started by the test, stopped (and its storage removed) after it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

export interface TestRegistry {
  /** host:port, as an image reference starts with it. */
  host: string;
  /** A registries.conf marking this registry as plain HTTP (CONTAINERS_REGISTRIES_CONF). */
  registriesConf: string;
  /** An auth file (containers-auth.json(5), Docker's config.json) for this registry. */
  authFile(username: string, password: string): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startRegistry(users: Record<string, string>): Promise<TestRegistry> {
  const dir = mkdtempSync(join(tmpdir(), "roost-registry-"));
  const port = await freePort();
  const host = `localhost:${port}`;
  writeFileSync(
    join(dir, "htpasswd"),
    Object.entries(users)
      .map(([user, password]) => `${user}:${Bun.password.hashSync(password, { algorithm: "bcrypt", cost: 5 })}\n`)
      .join(""),
  );
  writeFileSync(
    join(dir, "config.yml"),
    [
      "version: 0.1",
      "log: {level: warn}",
      `storage: {filesystem: {rootdirectory: ${join(dir, "data")}}}`,
      `http: {addr: "127.0.0.1:${port}", secret: roost-test-registry}`,
      `auth: {htpasswd: {realm: roost-test, path: ${join(dir, "htpasswd")}}}`,
      "",
    ].join("\n"),
  );
  const registriesConf = join(dir, "registries.conf");
  writeFileSync(registriesConf, `[[registry]]\nlocation = "${host}"\ninsecure = true\n`);
  let proc: Subprocess;
  try {
    proc = Bun.spawn(["docker-registry", "serve", join(dir, "config.yml")], { stdout: "ignore", stderr: "pipe" });
  } catch (error) {
    throw new Error(`docker-registry cannot start (scripts/ensure-test-tools installs Debian's docker-registry): ${(error as Error).message}`);
  }
  const deadline = Date.now() + 15_000;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/v2/`).then(
      (r) => r.status,
      () => 0,
    );
    // 401 is the answer of a registry that is up and wants credentials.
    if (status === 401) break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`docker-registry did not answer on ${host}: ${await new Response(proc.stderr as ReadableStream).text()}`);
    }
    await Bun.sleep(100);
  }
  return {
    host,
    registriesConf,
    authFile: (username, password) => JSON.stringify({ auths: { [host]: { auth: Buffer.from(`${username}:${password}`).toString("base64") } } }),
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
