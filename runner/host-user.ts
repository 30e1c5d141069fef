// Build code must never act as a Roost user. A build step runs whatever a pull request says, with
// the runner's OS user. On the daemon's host, as the daemon's own user (or as root), that code
// could read the database and the secret key, and open the 0600 management socket to mint a
// login capability: it would be the operator. So the runner refuses that setup
// (docs/runners.md "Build code and the daemon's host").
//
// The daemon tells a runner connecting from its own host which uid it runs as (the connect answer's
// daemon_uid); the runner checks that its server URL names this host too, so that a runner on
// another machine behind a reverse proxy on the daemon's host is not mistaken for a local one.
import { lookup } from "node:dns/promises";
import { isThisHostAddress } from "../lib/net/addresses.ts";

/** The runner would run build code with the daemon's authority; `roost runner` exits 2 with this message. */
export class SameUserRefusal extends Error {}

export const UNSAFE_FLAG = "--unsafe-allow-same-user";

/** Whether the URL's host resolves to this machine (loopback or one of its interface addresses). */
export async function urlIsThisHost(url: string): Promise<boolean> {
  let hostname = new URL(url).hostname;
  if (hostname.startsWith("[")) hostname = hostname.slice(1, -1);
  const addresses = await lookup(hostname, { all: true }).catch(() => []);
  return addresses.some((a) => isThisHostAddress(a.address));
}

/**
 * Null when build steps may run here; otherwise why not. `daemonUid` is the connect answer's
 * daemon_uid (absent when the daemon does not see this runner as being on its host).
 */
export async function sameUserProblem(url: string, daemonUid: unknown, runnerUid: number | undefined): Promise<string | null> {
  if (typeof daemonUid !== "number" || runnerUid === undefined) return null;
  if (runnerUid !== daemonUid && runnerUid !== 0) return null;
  if (!(await urlIsThisHost(url))) return null;
  const who = runnerUid === daemonUid ? `the Roost daemon's own user (uid ${runnerUid})` : "root";
  return `build steps would run as ${who} on the daemon's host, where build code can read Roost's database and secret key and sign in as any user`;
}

/** The one-line refusal `roost runner` prints. */
export function refusalMessage(problem: string): string {
  return `roost runner refuses to start: ${problem}. Run the runner as another OS user, e.g. sudo -u roost-runner roost runner (docs/runners.md), or on another machine; ${UNSAFE_FLAG} overrides this for tests and single-user trials only.`;
}
