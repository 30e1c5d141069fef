// A build container never reaches the cloud metadata service, nor anything else at a link-local
// address (docs/runners.md "What a container isolates"). Before any of the build's code runs, the
// runner adds `unreachable` routes in the container's network namespace:
//   169.254.0.0/16       link-local; 169.254.169.254 is the metadata address of AWS, GCP, Azure,
//                        OpenStack, Oracle, DigitalOcean
//   100.100.100.200/32   Alibaba Cloud's metadata address
//   fd00:ec2::254/128    AWS's IPv6 metadata address (when the namespace has IPv6)
// Connecting there then fails at once with "No route to host". The build's user has no
// CAP_NET_ADMIN (--cap-drop all), so it cannot take the routes away.
//
// The runner and the daemon on the runner's loopback are out of reach by the network mode itself:
// Podman's slirp4netns with allow_host_loopback=false refuses 10.0.2.2, the one address that leads
// to the host's loopback (https://github.com/rootless-containers/slirp4netns, --disable-host-loopback),
// and a bridge network (Docker's) has no route to the host's 127.0.0.0/8.
//
// The routes are added from the host with nsenter(1) into the namespace of the container's first
// process: as root on a rootful engine, inside `podman unshare` (the rootless user namespace that
// owns the container's network namespace) on rootless Podman.
import { existsSync } from "node:fs";
import { engineCall, engineError, type Engine } from "./engine.ts";

export const BLOCKED_ROUTES = [
  ["-4", "169.254.0.0/16"],
  ["-4", "100.100.100.200/32"],
  ["-6", "fd00:ec2::254/128"],
] as const;

function tool(name: string): string | null {
  return ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map((d) => `${d}/${name}`).find((p) => existsSync(p)) ?? null;
}

/** Null once the routes are in place; otherwise why not (the build fails with it: it never runs without them). */
export async function blockMetadataRoutes(engine: Engine, container: string): Promise<string | null> {
  const ip = tool("ip");
  const nsenter = tool("nsenter");
  if (!ip || !nsenter) return "the runner needs ip (iproute2) and nsenter (util-linux) on its host to keep builds from the metadata address";
  const rootless = engine.name === "podman" && engine.rootless;
  if (!rootless && process.getuid?.() !== 0)
    return `the container executor with ${engine.name} needs the runner to run as root (or on rootless Podman) to keep builds from the metadata address`;
  const state = await engineCall(engine, ["inspect", "--format", "{{.State.Pid}}", container]);
  const pid = Number(state.stdout.trim());
  if (state.code !== 0 || !(pid > 0)) return `the build's container is not running: ${engineError(state)}`;
  for (const [family, prefix] of BLOCKED_ROUTES) {
    const argv = [nsenter, `--net=/proc/${pid}/ns/net`, ip, family, "route", "add", "unreachable", prefix];
    const added = rootless ? await engineCall(engine, ["unshare", ...argv]) : await run(argv);
    // A namespace without IPv6 has no IPv6 metadata address to reach either.
    if (
      added.code !== 0 &&
      !(family === "-6" && /not supported|No such|Permission denied|Address family/i.test(added.stderr)) &&
      !/File exists/.test(added.stderr)
    ) {
      return `the build's network could not be closed to ${prefix}: ${added.stderr.trim() || `exit code ${added.code}`}`;
    }
  }
  return null;
}

async function run(argv: string[]): Promise<{ code: number; stderr: string }> {
  const p = Bun.spawn(argv, { stdout: "ignore", stderr: "pipe" });
  const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  return { code, stderr };
}
