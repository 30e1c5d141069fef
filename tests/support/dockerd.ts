// A Docker daemon of the test's own (Debian's docker.io, dockerd 20.10 with its managed
// containerd), for the container executor's tests on Docker: its socket, data and state under a
// temporary directory, so it shares nothing with a system Docker, and DOCKER_HOST names it for the
// runner. --iptables=false and --ip-masq=false: it leaves the host's firewall as it is (the
// machines that run the tests run other containers too), so its bridge reaches the host but not
// beyond, which is all the tests need. Stopped, and its directory removed, after the tests.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

export interface TestDockerd {
  /** DOCKER_HOST for the docker CLI. */
  host: string;
  /** Runs `docker ARGS` against this daemon; its stdout, or an error with its stderr. */
  docker(args: string[], stdin?: ReadableStream | Blob): Promise<string>;
  stop(): Promise<void>;
}

export async function startDockerd(): Promise<TestDockerd> {
  const dir = mkdtempSync(join(tmpdir(), "roost-dockerd-"));
  const host = `unix://${join(dir, "docker.sock")}`;
  let proc: Subprocess;
  try {
    proc = Bun.spawn(
      [
        "dockerd",
        "--host",
        host,
        "--data-root",
        join(dir, "data"),
        "--exec-root",
        join(dir, "exec"),
        "--pidfile",
        join(dir, "docker.pid"),
        "--iptables=false",
        "--ip-masq=false",
      ],
      { stdout: "ignore", stderr: "pipe", env: { PATH: `/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH ?? ""}` } },
    );
  } catch (error) {
    throw new Error(`dockerd cannot start (scripts/ensure-test-tools installs Debian's docker.io): ${(error as Error).message}`);
  }
  const docker = async (args: string[], stdin?: ReadableStream | Blob): Promise<string> => {
    const p = Bun.spawn(["docker", ...args], { env: { ...process.env, DOCKER_HOST: host }, stdin: stdin ?? "ignore", stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    if (code !== 0) throw new Error(`docker ${args.join(" ")}: exit ${code}: ${err.trim()}`);
    return out.trim();
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (
      await docker(["info", "--format", "{{.ServerVersion}}"]).then(
        () => true,
        () => false,
      )
    )
      break;
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`dockerd did not answer on ${host}: ${(await new Response(proc.stderr as ReadableStream).text()).split("\n").slice(-5).join("\n")}`);
    }
    await Bun.sleep(250);
  }
  return {
    host,
    docker,
    async stop() {
      await docker(["ps", "--all", "--quiet"]).then(
        (ids) => ids && docker(["rm", "--force", "--volumes", ...ids.split("\n")]),
        () => {},
      );
      proc.kill("SIGTERM");
      await Promise.race([proc.exited, Bun.sleep(20_000)]);
      if (proc.exitCode === null) proc.kill("SIGKILL");
      // Mounts of the daemon's overlay layers are gone with its containers; the directory goes last.
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
